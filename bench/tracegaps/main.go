package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	min := flag.Duration("min", 20*time.Millisecond, "list the gaps at least this long")
	worker := flag.String("worker", "processor.(*task).run", "a stack frame of the goroutines analysed (the tasks)")
	idle := flag.String("idle", "runtime.selectgo < processor.(*task).run", "how the stack of a goroutine waiting with nothing to do starts")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: tracegaps [-min 20ms] trace...")
		os.Exit(2)
	}
	code := 0
	for _, path := range flag.Args() {
		if err := one(os.Stdout, path, matcher{worker: *worker, idle: *idle}, *min); err != nil {
			fmt.Fprintf(os.Stderr, "tracegaps: %s: %v\n", path, err)
			code = 1
		}
	}
	os.Exit(code)
}

// one analyses the trace at path and writes what it found.
func one(w io.Writer, path string, m matcher, min time.Duration) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	trs, start, err := readTrace(f)
	if err != nil {
		return err
	}
	r := analyze(trs, m, min)
	if r.workers == 0 {
		return fmt.Errorf("no goroutine with %q in its stack: not a rackstream instance's trace, or the runtime's names changed (-worker)", m.worker)
	}
	fmt.Fprintf(w, "%s: %d tasks over %v: all idle together %v (%.0f%%) in %d gaps; a woken task waited for a CPU p50 %v, p90 %v, p99 %v, max %v (%d wake-ups)\n",
		path, r.workers, r.span.Round(time.Millisecond), r.idle.Round(time.Millisecond), 100*r.idle.Seconds()/max(r.span.Seconds(), 1e-9), r.nGaps,
		quantile(r.runnable, .5).Round(time.Microsecond), quantile(r.runnable, .9).Round(time.Microsecond),
		quantile(r.runnable, .99).Round(time.Microsecond), quantile(r.runnable, 1).Round(time.Microsecond), len(r.runnable))
	for _, g := range r.gaps {
		at := g.at.String()
		if !start.IsZero() {
			at = start.Add(g.at).UTC().Format("15:04:05.000")
		}
		fmt.Fprintf(w, "  all idle from %s for %v\n", at, g.d.Round(100*time.Microsecond))
	}
	return nil
}
