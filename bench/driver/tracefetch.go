package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
	"sync"
	"time"
)

// -trace-dir: the instances serve their runtime profiles (http.pprof) and,
// during the freshness row at the section's commit interval, the driver
// takes an execution trace of every instance and of itself at once, for
// `go tool trace` or bench/tracegaps (what the tasks waited for).
// traceInstances takes a cfg.traceFor execution trace of every instance
// of g, starting cfg.traceAfter from now (a few seconds into the probes:
// the steady state), into dir as <row>-<instance>.trace, and returns what
// waits for them; the log says where each went.
func (d *driver) traceInstances(ctx context.Context, g *group, dir, row string) (wait func()) {
	if dir == "" {
		return func() {}
	}
	after, dur := d.cfg.traceAfter, d.cfg.traceFor
	var wg sync.WaitGroup
	// take runs one trace after the wait, into <row>-<who>.trace.
	take := func(who string, trace func(path string) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-time.After(after):
			case <-ctx.Done():
				return
			}
			path := filepath.Join(dir, fmt.Sprintf("%s-%s.trace", strings.ReplaceAll(row, " ", "-"), who))
			start := time.Now()
			if err := trace(path); err != nil {
				d.logf("trace of %s: %v", who, err)
				return
			}
			d.logf("trace of %s from %s for %v: %s", who, start.UTC().Format("15:04:05.000"), dur, path)
		}()
	}
	// The driver's own over the same seconds: its load producer and
	// probes; and the broker's, when the driver started it (kfake).
	take("driver", func(path string) error { return traceSelf(ctx, path, dur) })
	if u := g.brokerProfiles; u != "" {
		take("broker", func(path string) error {
			return fetchTo(ctx, u+fmt.Sprintf("/debug/pprof/trace?seconds=%g", dur.Seconds()), path, dur+30*time.Second)
		})
	}
	for _, m := range g.instances {
		take(m.name, func(path string) error {
			return fetchTo(ctx, m.url()+fmt.Sprintf("/debug/pprof/trace?seconds=%g", dur.Seconds()), path, dur+30*time.Second)
		})
	}
	return wg.Wait
}

// traceSelf writes an execution trace of this process for dur to path.
func traceSelf(ctx context.Context, path string, dur time.Duration) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return err
	}
	select {
	case <-time.After(dur):
	case <-ctx.Done():
	}
	trace.Stop()
	return f.Close()
}

// fetchTo writes the body of a GET of u to path.
func fetchTo(ctx context.Context, u, path string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return f.Close()
}
