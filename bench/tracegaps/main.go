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

// one analyses the trace at path and writes what it found: the garbage
// collector's phases, and the tasks' waits when it has tasks (a driver's
// or a peer's trace has none).
func one(w io.Writer, path string, m matcher, min time.Duration) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	trs, gc, start, err := readTrace(f)
	if err != nil {
		return err
	}
	when := func(at time.Duration) string {
		if start.IsZero() {
			return at.String()
		}
		return start.Add(at).UTC().Format("15:04:05.000")
	}
	r := analyze(trs, m, min)
	g := summarise(gc)
	fmt.Fprintf(w, "%s: over %v, the collector marked %d times for %v in all (the longest %v) and stopped the world %d times for %v (the longest %v)",
		path, r.span.Round(time.Millisecond), g.marks, g.marked.Round(time.Millisecond), g.longestMark.Round(time.Millisecond),
		g.stops, g.stopped.Round(10*time.Microsecond), g.longestStop.Round(10*time.Microsecond))
	if r.workers == 0 {
		fmt.Fprintf(w, "; no goroutine with %q in its stack (not an instance's trace, or the runtime's names changed: -worker)\n", m.worker)
	} else {
		fmt.Fprintf(w, "; %d tasks: all idle together %v (%.0f%%) in %d gaps; a woken task waited for a CPU p50 %v, p90 %v, p99 %v, max %v (%d wake-ups)\n",
			r.workers, r.idle.Round(time.Millisecond), 100*r.idle.Seconds()/max(r.span.Seconds(), 1e-9), r.nGaps,
			quantile(r.runnable, .5).Round(time.Microsecond), quantile(r.runnable, .9).Round(time.Microsecond),
			quantile(r.runnable, .99).Round(time.Microsecond), quantile(r.runnable, 1).Round(time.Microsecond), len(r.runnable))
	}
	for _, s := range gc {
		if s.name == gcMark || s.d >= min/4 {
			fmt.Fprintf(w, "  %s from %s for %v\n", s.name, when(s.at), s.d.Round(100*time.Microsecond))
		}
	}
	for _, gp := range r.gaps {
		fmt.Fprintf(w, "  all idle from %s for %v\n", when(gp.at), gp.d.Round(100*time.Microsecond))
	}
	return nil
}
