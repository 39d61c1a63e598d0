package main

import (
	"context"
	"fmt"
	"math"
	"strings"
)

// system is one benchmark run alone in its own process: a test binary, the
// benchmark it runs, and where its figures are in what it reports.
type system struct {
	key  string // short name used by ratios
	name string // the row's name
	// writes says what it writes per input record, for the reader.
	writes string
	bin    string // a built test binary's key in the driver's builds
	bench  string // -test.bench pattern
	env    map[string]string
	// rate, cpu and rss are the units of its records/s, CPU µs per record
	// over the measured span, and (when it measures a process of its own,
	// like a JVM) peak RSS in MB; rss empty: the child's own peak RSS.
	rate, cpu, rss string
	// cpuScale turns the cpu figure into µs per record (1 for µs, 1e-3
	// for ns).
	cpuScale float64
	// rateOf computes records/s from the metrics when no single unit has
	// it (Kafka Streams' restore); nil to use rate.
	rateOf func(child) (float64, bool)
	// absent, when not empty, says why there is no process to run: the
	// row is this line instead.
	absent string
	// borrowed: its figures come from another table's processes, whose
	// whole-process CPU belongs to that table.
	borrowed bool
}

// runs are the children of the systems of one table, round by round.
type runs struct {
	systems []system
	byKey   map[string][]child // one per round, in round order
}

// runRounds runs every system once per round, rotating the order each
// round so that no system always runs first or last under the load of the
// moment, and returns every child.
func (d *driver) runRounds(ctx context.Context, what string, b broker, rounds int, systems []system) runs {
	r := runs{systems: systems, byKey: map[string][]child{}}
	var live []system
	for _, s := range systems {
		if s.absent == "" {
			live = append(live, s)
		}
	}
	for round := range rounds {
		for i := range live {
			s := live[(i+round)%len(live)]
			d.logf("%s on %s, round %d/%d: %s", what, b.kind, round+1, rounds, s.name)
			r.byKey[s.key] = append(r.byKey[s.key], d.benchChild(ctx, b, s.bin, s.bench, s.env))
		}
	}
	return r
}

// benchChild runs one benchmark of the built test binary bin alone, once,
// on broker b with env added, and logs what it cost or why it failed.
func (d *driver) benchChild(ctx context.Context, b broker, bin, bench string, env map[string]string) child {
	all := map[string]string{}
	for k, v := range b.env {
		all[k] = v
	}
	for k, v := range env {
		all[k] = v
	}
	c := runChild(ctx, d.pkgDir(bin), childEnv(), all, d.cfg.childTimeout, d.bins[bin],
		"-test.run", "^$", "-test.bench", bench, "-test.benchtime", "1x", "-test.v", "-test.timeout", d.cfg.childTimeout.String())
	if !c.ok() {
		d.logf("  %s", c.failure())
	} else {
		d.logf("  %.1fs wall, %.1fs CPU, peak RSS %.0f MB", c.wall.Seconds(), c.cpu.Seconds(), float64(c.maxRSS)/1e6)
	}
	return c
}

// series is one figure of a system, one value per round (NaN where the
// round failed).
func (r runs) series(key string, f func(system, child) (float64, bool)) []float64 {
	var s system
	for _, x := range r.systems {
		if x.key == key {
			s = x
		}
	}
	var out []float64
	for _, c := range r.byKey[key] {
		v, ok := math.NaN(), false
		if c.ok() {
			v, ok = f(s, c)
		}
		if !ok {
			v = math.NaN()
		}
		out = append(out, v)
	}
	return out
}

func rateOf(s system, c child) (float64, bool) {
	if s.rateOf != nil {
		return s.rateOf(c)
	}
	return c.metric(s.rate)
}

// cpuPerMillion is CPU seconds per million records over the benchmark's
// measured span.
func cpuPerMillion(s system, c child) (float64, bool) {
	v, ok := c.metric(s.cpu)
	return v * s.cpuScale, ok // µs per record = s per million records
}

// processCPUPerMillion is the whole process's CPU seconds (setup and input
// production included) per million records of the run.
func processCPUPerMillion(records int) func(system, child) (float64, bool) {
	return func(s system, c child) (float64, bool) {
		return c.cpu.Seconds() * 1e6 / float64(records), !s.borrowed
	}
}

// peakRSS is the peak RSS in MB: the benchmark's own figure for a process
// it ran (a JVM), else the child's.
func peakRSS(s system, c child) (float64, bool) {
	if s.rss != "" {
		return c.metric(s.rss)
	}
	return float64(c.maxRSS) / 1e6, c.maxRSS > 0
}

// table writes the systems' medians as a markdown table, and a line for
// every system without figures (or with failed rounds).
func (r runs) table(sec *section, records int, rateHeader string) {
	sec.printf("| system | writes per input | %s, median%s | CPU s per 1M records (measured span) | process CPU s per 1M records (whole process) | peak RSS, MB |\n|---|---|---:|---:|---:|---:|\n",
		rateHeader, roundsNote(r))
	for _, s := range r.systems {
		if s.absent != "" {
			sec.printf("| %s | %s | - | - | - | - |\n", s.name, s.writes)
			continue
		}
		rate := r.series(s.key, rateOf)
		if allNaN(rate) {
			sec.printf("| %s | %s | - | - | - | - |\n", s.name, s.writes)
			continue
		}
		cpu := r.series(s.key, cpuPerMillion)
		pcpu := r.series(s.key, processCPUPerMillion(records))
		rss := r.series(s.key, peakRSS)
		sec.printf("| %s | %s | %s%s | %s | %s | %s |\n", s.name, s.writes, thousands(median(rate)), spread(rate, "%.0f"),
			num("%.2f", median(cpu)), num("%.2f", median(pcpu)), num("%.0f", median(rss)))
	}
	sec.printf("\n")
	for _, s := range r.systems {
		if s.absent != "" {
			sec.missing(s.name, s.absent)
			continue
		}
		rate := r.series(s.key, rateOf)
		if allNaN(rate) {
			sec.missing(s.name, r.firstFailure(s.key))
			continue
		}
		sec.filled(s.name)
		if failed := countNaN(rate); failed > 0 {
			sec.printf("- %s: %d of %d rounds failed, the first: %s\n", s.name, failed, len(rate), r.firstFailure(s.key))
		}
	}
}

func (r runs) firstFailure(key string) string {
	for _, c := range r.byKey[key] {
		if !c.ok() {
			return c.failure()
		}
	}
	return "no figures"
}

func roundsNote(r runs) string {
	n := 0
	for _, cs := range r.byKey {
		n = max(n, len(cs))
	}
	if n == 1 {
		return " of 1 run"
	}
	return fmt.Sprintf(" of %d rounds (min-max)", n)
}

func allNaN(xs []float64) bool { return countNaN(xs) == len(xs) }

func countNaN(xs []float64) int {
	n := 0
	for _, x := range xs {
		if math.IsNaN(x) {
			n++
		}
	}
	return n
}

// ratioLine writes one ratio of medians-of-pairs as a bullet and returns
// it: a over b, per round, then the median.
func ratioLine(sec *section, what string, a, b []float64) float64 {
	x := pairRatio(a, b)
	var per []string
	for i := range min(len(a), len(b)) {
		per = append(per, num("%.2f", a[i]/b[i]))
	}
	sec.printf("- %s: **%s** (per round: %s)\n", what, num("%.2f", x), strings.Join(per, ", "))
	return x
}
