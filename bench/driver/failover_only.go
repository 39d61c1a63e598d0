package main

import (
	"context"
	"fmt"
	"time"
)

// failoverRows are the cluster section's rows that -sections failover
// runs: the kill -9 and the SIGTERM of a task's owner, without the
// lookups, the freshness probes and goka's standby, to measure a change to
// the failover path alone.
var failoverRows = []string{"failover, kill -9 of a task's owner", "failover, SIGTERM of a task's owner"}

// clusterLogLevel is the instances' log level: info, or debug when only the
// failover rows run, so that each instance's log (kept in the driver's
// work directory) shows when it was assigned, promoted, fetched, worked
// and committed a moved task. Info is a few lines per rebalance (the
// assignment, each task made active and how long its restore took, the
// revokes), none per record or commit; make bench kept empty logs while it
// ran the instances at warn (its run at f30e231, whose kill -9 on kfake
// took 11.45 s with no line to say where).
func clusterLogLevel(failoverOnly bool) string {
	if failoverOnly {
		return "debug"
	}
	return "info"
}

// warmUp runs the load for as long as the freshness probes would have
// (which -sections failover skips), so that the stopped owner has
// committed recently: otherwise its successor catches up every record
// since the lookup keys, which no steady-state failover has to.
func warmUp(d *driver, rate float64) {
	d.logf("failover: %s records/s of load for %v before the first stop", thousands(rate), d.cfg.freshDuration)
	time.Sleep(d.cfg.freshDuration)
}

// quiet waits until the group is settled (every task with an active and a
// standby) and stays so, with no warmup replica (a warmup means a probing
// rebalance is still to come) and the same generation, for quietFor (3
// commit intervals: 3 s in the full run, 1.5 s in the smoke run): a stop
// measured while the group still moves tasks after the previous restart
// times the churn, not the failover.
func (g *group) quiet(ctx context.Context, quietFor, within time.Duration) (metadata, error) {
	deadline := time.Now().Add(within)
	var (
		since time.Time
		gen   int32 = -1
	)
	for time.Now().Before(deadline) {
		md, err := g.settled(ctx, true, time.Until(deadline))
		if err != nil {
			return md, err
		}
		warm := false
		for _, t := range md.Tasks {
			warm = warm || len(t.Warmup) > 0
		}
		switch {
		case warm || md.Generation != gen:
			since, gen = time.Now(), md.Generation
			if warm {
				gen = -1
			}
		case time.Since(since) >= quietFor:
			return md, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return metadata{}, fmt.Errorf("the group did not stay settled, without warmups, for %v within %v", quietFor, within)
}
