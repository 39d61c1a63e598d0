package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/processor"
)

// The freshness rows: at the section's commit interval (1 s, so that
// commits come often), and again at the default interval, the one users
// run with unless they set one, where the binding target (p99 at most a
// tenth of the interval) is what issue 17 wrote it against.
const (
	freshRow        = "end-to-end freshness"
	freshDefaultRow = "end-to-end freshness at the default commit interval"
)

// freshAtDefault restarts the group's instances (SIGTERM, the same state
// directories) with commit.interval.ms at the runtime's default, lets the
// same load run until the group is quiet (no warmup, one generation for a
// while), and measures freshness again, for at least two commits of every
// instance. It returns the records it produced.
func (d *driver) freshAtDefault(ctx context.Context, sec *section, g *group, probes, pcl *kgo.Client, input string, rate float64, half string) int64 {
	interval := processor.DefaultOptions().CommitInterval
	dur, warm, quietFor := 2*interval+10*time.Second, 10*time.Second, 5*time.Second
	if d.cfg.smoke {
		dur, warm, quietFor = d.cfg.freshDuration, time.Second, time.Second
	}
	d.logf("freshness at the default commit interval (%v): restarting the instances", interval)
	g.stopAll()
	g.set = map[string]string{"commit.interval.ms": strconv.FormatInt(interval.Milliseconds(), 10)}
	defer func() { g.set = nil }()
	for _, m := range g.instances {
		if err := g.start(m); err != nil {
			sec.missing(freshDefaultRow, err.Error())
			return 0
		}
	}
	if _, err := g.settled(ctx, true, 3*time.Minute); err != nil {
		sec.missing(freshDefaultRow, fmt.Sprintf("after restarting with commit.interval.ms=%d: %v", interval.Milliseconds(), err))
		return 0
	}
	load := startLoad(pcl, input, d.cfg.countKeys, rate)
	// Probe the steady state: after a restart the placement moves tasks
	// back through warmups, and while a task's active restores, reads go
	// to its standby, which sees a key only once the owner's record cache
	// reaches the changelog, at the next commit (30 s here).
	time.Sleep(warm) // the load's own pace: not a synchronisation
	if _, err := g.quiet(ctx, quietFor, 4*time.Minute); err != nil {
		load.halt()
		sec.missing(freshDefaultRow, fmt.Sprintf("after restarting with commit.interval.ms=%d: %v", interval.Milliseconds(), err))
		return load.produced.Load()
	}
	d.freshness(ctx, sec, g, probes, load, input, rate, half, interval, freshDefaultRow, dur)
	load.halt()
	if n := load.failed.Load(); n > 0 {
		sec.printf("- %d records of the load failed to produce.\n", n)
	}
	return load.produced.Load()
}
