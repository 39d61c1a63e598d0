package gokabench

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

// The benchmarks run goka and Rackstream side by side: each iteration runs
// both, one after the other on the same cluster and input, alternating which
// goes first, and the reported figures are medians over the iterations with
// the ratio taken within each pair. On a shared, noisy machine only such
// ratios mean anything. Run them with
//
//	go test -run '^$' -bench . -benchtime 3x -timeout 30m ./bench/goka/
//
// after eval "$(deploy/local/kafka.sh env)" for the real broker.
// GOKA_BENCH_RECORDS, GOKA_BENCH_KEYS and GOKA_BENCH_TABLE_KEYS change the
// sizes (defaults 200k records over 20k keys; a 200k-key table);
// GOKA_BENCH_RS_WRITE_BUFFER sets Rackstream's LevelDB write buffer per
// store in bytes (default 16 MiB; goka's LevelDB default is 4 MiB).
// GOKA_BENCH_SYSTEMS=goka (or rackstream) runs one system only: bench/driver
// runs each in its own process and takes the ratios itself.

// sample is one system's figures from one run.
type sample struct {
	u         usage
	committed time.Duration // start to offsets committed through the end
}

// BenchmarkCount times the per-key count from the start of an instance
// (constructor, topic checks, group join included) until its handler has
// run for every input record, then until its offsets are committed through
// the input's end (at most a commit interval later: 1s for both).
func BenchmarkCount(b *testing.B) {
	c := kafkatest.New(b)
	records := envInt(b, "GOKA_BENCH_RECORDS", 200_000)
	keys := envInt(b, "GOKA_BENCH_KEYS", 20_000)
	input := c.Name("goka-bench-in")
	createTopics(b, c, nil, input)
	want := produceInput(b, c, input, records, keys)
	adm := c.Admin()

	runs := map[string][]sample{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		order := only(b, []system{gokaSystem, rackstreamSystem}, func(s system) string { return s.name })
		if i%2 == 1 {
			slices.Reverse(order)
		}
		line := fmt.Sprintf("%s, run %d:", c.Kind(), i+1)
		for _, s := range order {
			r := runCount(b, c, adm, s, input, records, want)
			runs[s.name] = append(runs[s.name], r)
			line += fmt.Sprintf(" | %s %v (%.0f/s, committed %v, %.1f allocs, %.0f B, %.1f µs CPU per record, heap +%.0f MB, live +%.0f MB)",
				s.name, r.u.wall.Round(time.Millisecond), float64(records)/r.u.wall.Seconds(), r.committed.Round(time.Millisecond),
				float64(r.u.mallocs)/float64(records), float64(r.u.bytes)/float64(records),
				float64(r.u.cpu.Microseconds())/float64(records), float64(r.u.peakHeap)/1e6, float64(r.u.peakLive)/1e6)
		}
		b.Log(line)
	}
	b.StopTimer()
	report(b, runs, map[string]func(sample) float64{
		"records/s":     func(s sample) float64 { return float64(records) / s.u.wall.Seconds() },
		"committed-s":   func(s sample) float64 { return s.committed.Seconds() },
		"allocs/record": func(s sample) float64 { return float64(s.u.mallocs) / float64(records) },
		"B/record":      func(s sample) float64 { return float64(s.u.bytes) / float64(records) },
		"cpu-µs/record": func(s sample) float64 { return float64(s.u.cpu.Microseconds()) / float64(records) },
		"peak-heap-MB":  func(s sample) float64 { return float64(s.u.peakHeap) / 1e6 },
		"peak-live-MB":  func(s sample) float64 { return float64(s.u.peakLive) / 1e6 },
	}, "records/s")
}

// runCount runs one instance of s over input until every record is handled
// and committed, checks a few keys' counts, and stops it.
func runCount(b *testing.B, c *kafkatest.Cluster, adm *kadm.Client, s system, input string, records int, want map[string]int64) sample {
	b.Helper()
	dir := b.TempDir()
	m := startMeter()
	in := s.start(b, c, c.Name(s.name+"-count"), input, dir)
	waitFor(b, in, 10*time.Minute, 5*time.Millisecond,
		func() string { return fmt.Sprintf("%s handled %d of %d records", s.name, in.handled(), records) },
		func() bool { return in.handled() >= int64(records) })
	u := m.done()
	waitFor(b, in, 2*time.Minute, 20*time.Millisecond,
		func() string { return fmt.Sprintf("%s: group %s not committed through the end", s.name, in.group()) },
		func() bool { return kafkatest.CommittedThrough(adm, in.group(), input) })
	r := sample{u: u, committed: time.Since(m.start)}
	checkCounts(b, s.name, in, want)
	if err := in.stop(); err != nil {
		b.Fatalf("%s: stop: %v", s.name, err)
	}
	return r
}

// checkCounts checks a spread of keys (a full check is the test's job).
func checkCounts(b *testing.B, name string, in instance, want map[string]int64) {
	b.Helper()
	keys := len(want)
	for i := 0; i < keys; i += max(1, keys/50) {
		k := keyOf(i, keys)
		got, found, err := in.count(k)
		if err != nil || !found || got != want[k] {
			b.Fatalf("%s: count of %s = %d (found %v, err %v), want %d", name, k, got, found, err, want[k])
		}
	}
}

// BenchmarkRecovery times the rebuild of one table, a compacted topic of
// GOKA_BENCH_TABLE_KEYS keys over 12 partitions, on a fresh state
// directory: goka recovers it as its group table (<group>-table), Rackstream
// restores it as the changelog of its store (processor.WithChangelog). Both
// read the same bytes. Timed from the instance's start (group join included)
// until it reports every partition recovered and processing running
// (goka's Processor.Recovered, Rackstream's Runtime.Ready).
func BenchmarkRecovery(b *testing.B) {
	c := kafkatest.New(b)
	keys := envInt(b, "GOKA_BENCH_TABLE_KEYS", 200_000)
	group := c.Name("goka-bench-restore")
	table := group + "-table"
	input := c.Name("goka-bench-restore-in")
	createTopics(b, c, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, table)
	createTopics(b, c, nil, input)
	produceTable(b, c, table, keys)
	want := make(map[string]int64, keys)
	for i := 0; i < keys; i++ {
		want[keyOf(i, keys)] = int64(i + 1)
	}

	runs := map[string][]sample{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		order := only(b, []string{"goka", "rackstream"}, func(s string) string { return s })
		if i%2 == 1 {
			slices.Reverse(order)
		}
		line := fmt.Sprintf("%s, run %d:", c.Kind(), i+1)
		for _, name := range order {
			dir := b.TempDir()
			m := startMeter()
			var in instance
			if name == "goka" {
				in = startGoka(b, c, group, input, dir)
			} else {
				in = startRackstreamOn(b, c, c.Name("rackstream-restore"), input, dir, processor.WithChangelog(table))
			}
			waitFor(b, in, 10*time.Minute, 5*time.Millisecond,
				func() string { return name + " did not recover" },
				in.recovered)
			u := m.done()
			checkCounts(b, name, in, want)
			if err := in.stop(); err != nil {
				b.Fatalf("%s: stop: %v", name, err)
			}
			runs[name] = append(runs[name], sample{u: u})
			line += fmt.Sprintf(" | %s %v (%.0f/s, %.1f allocs, %.0f B, %.1f µs CPU per record, heap +%.0f MB, live +%.0f MB)",
				name, u.wall.Round(time.Millisecond), float64(keys)/u.wall.Seconds(),
				float64(u.mallocs)/float64(keys), float64(u.bytes)/float64(keys),
				float64(u.cpu.Microseconds())/float64(keys), float64(u.peakHeap)/1e6, float64(u.peakLive)/1e6)
		}
		b.Log(line)
	}
	b.StopTimer()
	report(b, runs, map[string]func(sample) float64{
		"records/s":     func(s sample) float64 { return float64(keys) / s.u.wall.Seconds() },
		"allocs/record": func(s sample) float64 { return float64(s.u.mallocs) / float64(keys) },
		"B/record":      func(s sample) float64 { return float64(s.u.bytes) / float64(keys) },
		"cpu-µs/record": func(s sample) float64 { return float64(s.u.cpu.Microseconds()) / float64(keys) },
		"peak-heap-MB":  func(s sample) float64 { return float64(s.u.peakHeap) / 1e6 },
		"peak-live-MB":  func(s sample) float64 { return float64(s.u.peakLive) / 1e6 },
	}, "records/s")
}

// report reports each figure's median per system, and the median of the
// per-iteration ratios rackstream/goka of the figure named ratioOf.
func report(b *testing.B, runs map[string][]sample, figures map[string]func(sample) float64, ratioOf string) {
	for name, ss := range runs {
		for unit, f := range figures {
			vs := make([]float64, len(ss))
			for i, s := range ss {
				vs[i] = f(s)
			}
			b.ReportMetric(median(vs), name+"-"+unit)
		}
	}
	g, r := runs["goka"], runs["rackstream"]
	ratios := make([]float64, min(len(g), len(r)))
	for i := range ratios {
		ratios[i] = figures[ratioOf](r[i]) / figures[ratioOf](g[i])
	}
	if len(ratios) > 0 {
		b.ReportMetric(median(ratios), "rackstream/goka-"+ratioOf)
	}
	b.ReportMetric(0, "ns/op") // one op is a pair of whole runs: meaningless
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[len(vs)/2]
}
