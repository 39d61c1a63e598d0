// Command kfakebroker runs one kfake cluster (franz-go's fake broker) in a
// process of its own, for the benchmark driver's cluster section: three
// `rackstream run` instances and the driver's load producer reach it over
// loopback, as they reach the real broker, and its work (its one request
// loop, its in-memory log, its garbage collector) is neither the driver's
// nor charged to it.
//
// Before it ran here, kfake lived in the driver's process beside the load
// producer: every collection the load's allocations set off stopped the
// broker too and marked its log of several hundred megabytes, and the two
// shared one Go scheduler. A real broker is a process of its own; so is
// this one (docs/lab/freshness.md).
//
// It prints one line to stdout once it listens,
//
//	kfake 127.0.0.1:PORT pprof 127.0.0.1:PORT
//
// (the second pair only with -pprof), and runs until its standard input
// closes (the driver exits, however it exits) or it is sent SIGTERM or
// SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	segment := flag.Int("segment-bytes", 8<<20, "log.segment.bytes: kfake keeps each segment in memory in one byte slice it doubles as it grows, from its one request loop (its default 100 MiB stalled that loop for up to 396 ms: docs/lab/freshness.md)")
	prof := flag.Bool("pprof", false, "serve the runtime's profiles and execution trace under /debug/pprof/ on a loopback port of its own")
	flag.Parse()
	if err := run(*segment, *prof, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kfakebroker:", err)
		os.Exit(1)
	}
}

// run serves one kfake broker until in closes or a signal asks it to stop.
func run(segment int, prof bool, in io.Reader, out io.Writer) error {
	if segment <= 0 {
		return fmt.Errorf("-segment-bytes %d: must be positive", segment)
	}
	fc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(500*time.Millisecond),
		kfake.BrokerConfigs(map[string]string{"group.initial.rebalance.delay.ms": "0", "log.segment.bytes": strconv.Itoa(segment)}))
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	defer fc.Close()
	line := "kfake " + strings.Join(fc.ListenAddrs(), ",")
	if prof {
		addr, stop, err := servePprof()
		if err != nil {
			return err
		}
		defer stop()
		line += " pprof " + addr
	}
	if _, err := fmt.Fprintln(out, line); err != nil {
		return fmt.Errorf("write the address: %w", err)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	go func() {
		// The driver holds the other end: EOF is its exit, however it
		// exited, and the broker must not outlive it.
		_, _ = io.Copy(io.Discard, in)
		cancel()
	}()
	<-ctx.Done()
	return nil
}

// servePprof serves net/http/pprof's handlers on a free loopback port.
func servePprof() (addr string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen for pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return l.Addr().String(), func() { _ = srv.Close() }, nil
}
