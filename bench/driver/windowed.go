package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
)

// The windowed section's rows (the smoke test looks them up by name).
const (
	windowedCountRow = "Rackstream windowed count, at-least-once, changelog + output (processor benchmark)"
	windowStoreRow   = "Rackstream window store on disk, a run spanning 6 retentions against one retention's worth"
	timerRow         = "Rackstream wall-clock timers, lateness (handler start - due time)"
	// rsWindowWrites is what Rackstream's windowed count writes: the
	// output, and to the changelog the window, its time-index entry and
	// the aggregation's stream time when it moves, then the window's two
	// deletes when it expires.
	rsWindowWrites = "up to 4, and 2 per expired window"
)

// windowedSection measures the windowed rows on broker b: the windowed
// count beside the count (processor benchmark) and beside Kafka Streams'
// windowed count (Kafka Streams driver), the window store's size at the
// end of a run spanning six retentions, and how late durable wall-clock
// timers fire on healthy tasks.
func (d *driver) windowedSection(ctx context.Context, b broker) *section {
	cfg := d.cfg
	records, keys := strconv.Itoa(cfg.windowRecords), strconv.Itoa(cfg.countKeys)
	proc := map[string]string{"RACKSTREAM_BENCH_RECORDS": records, "RACKSTREAM_BENCH_KEYS": keys}
	ks := func(engine string) map[string]string {
		return map[string]string{"RACKSTREAM_KSTREAMS_RECORDS": records, "RACKSTREAM_KSTREAMS_KEYS": keys,
			"RACKSTREAM_KSTREAMS_ROUNDS": "1", "RACKSTREAM_KSTREAMS_ENGINES": engine, "RACKSTREAM_KSTREAMS_CACHE_BYTES": "0",
			"RACKSTREAM_KSTREAMS_WINDOW_MS": "60000", "RACKSTREAM_KSTREAMS_GRACE_MS": "10000",
			"RACKSTREAM_KSTREAMS_SPAN_MS": "300000", "RACKSTREAM_KSTREAMS_RESTORE": "0"}
	}
	systems := []system{
		{key: "rsw", name: windowedCountRow, writes: rsWindowWrites,
			bin: "processor", bench: "^BenchmarkWindowedCount$", env: proc, rate: "records/s", cpu: "cpu-µs/record", cpuScale: 1},
		{key: "rs", name: "Rackstream count, at-least-once, changelog + output (processor benchmark)", writes: "2",
			bin: "processor", bench: "^BenchmarkProcessingCount$/^output$", env: proc, rate: "records/s", cpu: "cpu-µs/record", cpuScale: 1},
		{key: "rswks", name: "Rackstream windowed count in the Kafka Streams driver", writes: rsWindowWrites,
			bin: "kstreams", bench: "^BenchmarkCountSideBySide$", env: ks("rackstream"), rate: "rackstream-records/s", cpu: "rackstream-cpu-µs/record", cpuScale: 1},
		{key: "ksw", name: "Kafka Streams 4.4.0 windowed count, at_least_once", writes: "2",
			bin: "kstreams", bench: "^BenchmarkCountSideBySide$", env: ks("kafka-streams"), rate: "kstreams-records/s", cpu: "kstreams-cpu-µs/record", rss: "kstreams-peak-rss-MB", cpuScale: 1},
	}
	if cfg.smoke {
		noJVM(systems)
	}
	sec := newSection(fmt.Sprintf("Windows and timers on %s", b.title))
	sec.printf("The windowed count: %s records over %s keys (`key-<i mod keys>`, 100-byte values), 12 partitions, their timestamps "+
		"rising evenly over 5 minutes in produce order (so each partition's are in order, windows close as the run goes and none "+
		"is late), counted per key in tumbling 1-minute windows with 10 s of grace, every update written to the output "+
		"(Rackstream: the input key and a JSON value with the window; Kafka Streams: its time windowed key and a Long), commit "+
		"interval 1 s, record cache off, at_least_once; Kafka Streams runs `groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(1 min, "+
		"10 s)).count()` in RocksDB. Each row is its own process, run %d time(s) in rotating order; the two measures of the count "+
		"section apply (the Kafka Streams driver times from the first instance running until the offsets are committed). %s\n\n",
		thousands(float64(cfg.windowRecords)), thousands(float64(cfg.countKeys)), d.rounds(b), b.note)
	r := d.runRounds(ctx, "windowed", b, d.rounds(b), systems)
	r.table(sec, cfg.windowRecords, "records/s")
	rate := func(k string) []float64 { return r.series(k, rateOf) }
	cpu := func(k string) []float64 { return r.series(k, cpuPerMillion) }
	rss := func(k string) []float64 { return r.series(k, peakRSS) }
	sec.printf("\nRatios (median over rounds of the ratio within each round):\n\n")
	ratioLine(sec, "Rackstream windowed count / its count, records/s (processor benchmark)", rate("rsw"), rate("rs"))
	ksRate := ratioLine(sec, "Rackstream / Kafka Streams windowed count, records/s (both in the Kafka Streams driver)", rate("rswks"), rate("ksw"))
	ksCPU := ratioLine(sec, "Kafka Streams / Rackstream windowed count, CPU per record (= Rackstream's records per CPU-second over Kafka Streams')", cpu("ksw"), cpu("rswks"))
	ratioLine(sec, "Rackstream / Kafka Streams windowed count, peak RSS", rss("rswks"), rss("ksw"))
	if b.kind == "kafka" {
		d.targets = append(d.targets,
			target{name: "windowed count records/s >= 3x Kafka Streams' (issue 35)", want: ">= 3", measured: num("%.2f", ksRate), met: metVerdict(ksRate, 3, true), inTheWay: inTheWayWindowed},
			target{name: "windowed count records per CPU-second >= 7x Kafka Streams' (issue 35)", want: ">= 7", measured: num("%.2f", ksCPU), met: metVerdict(ksCPU, 7, true), inTheWay: inTheWayWindowed},
		)
	}
	d.windowStoreRows(ctx, sec, b)
	return sec
}

// windowStoreRows runs the window store's size and the timers' lateness,
// once each on b, and writes their rows and targets.
func (d *driver) windowStoreRows(ctx context.Context, sec *section, b broker) {
	cfg := d.cfg
	sec.printf("\nThe window store's size: tumbling 1-minute windows kept 5 minutes (`WindowRetention`), %s keys with 2 records "+
		"each per window, one partition; one run's timestamps span one retention (5 minutes), another's 6 (30 minutes), and each store's "+
		"state directory is measured once its runtime has stopped, its LevelDB write buffer at 64 KiB so that one retention's "+
		"worth outweighs the journal of unflushed writes (which holds up to a write buffer whatever the retention). The timers: records at %s/s over %s keys for %v, each "+
		"setting its key's durable wall-clock timer 200 ms ahead; the lateness is when the timer's handler starts minus its due "+
		"time. Both run once, in the processor's test binary.\n\n",
		thousands(float64(cfg.storeKeys)), thousands(float64(cfg.timerRate)), thousands(float64(cfg.timerKeys)), cfg.timerFor)
	store := d.benchChild(ctx, b, "processor", "^BenchmarkWindowStoreSize$", map[string]string{"RACKSTREAM_BENCH_STORE_KEYS": strconv.Itoa(cfg.storeKeys)})
	timers := d.benchChild(ctx, b, "processor", "^BenchmarkWallClockTimerLateness$", map[string]string{
		"RACKSTREAM_BENCH_TIMER_RATE": strconv.Itoa(cfg.timerRate), "RACKSTREAM_BENCH_TIMER_KEYS": strconv.Itoa(cfg.timerKeys),
		"RACKSTREAM_BENCH_TIMER_SECONDS": strconv.Itoa(int(cfg.timerFor.Seconds()))})
	sec.printf("| row | measured | process CPU s | peak RSS, MB |\n|---|---|---:|---:|\n")
	ratio, ok := store.metric("end/one-retention")
	if store.ok() && ok {
		one, _ := store.metric("one-retention-MB")
		end, _ := store.metric("end-MB")
		sec.printf("| %s | %.2f MB after one retention, %.2f MB after 6: **%.2fx** | %.1f | %.0f |\n",
			windowStoreRow, one, end, ratio, store.cpu.Seconds(), float64(store.maxRSS)/1e6)
	}
	p99, ok99 := timers.metric("late-p99-ms")
	if timers.ok() && ok99 {
		p50, _ := timers.metric("late-p50-ms")
		most, _ := timers.metric("late-max-ms")
		n, _ := timers.metric("timers")
		sec.printf("| %s | p50 %.1f ms, **p99 %.1f ms**, max %.1f ms over %s timers | %.1f | %.0f |\n",
			timerRow, p50, p99, most, thousands(n), timers.cpu.Seconds(), float64(timers.maxRSS)/1e6)
	}
	sec.printf("\n")
	for _, row := range []struct {
		name string
		c    child
		ok   bool
	}{{windowStoreRow, store, ok}, {timerRow, timers, ok99}} {
		if row.c.ok() && row.ok {
			sec.filled(row.name)
		} else {
			sec.missing(row.name, row.c.failure())
		}
	}
	if !store.ok() || !ok {
		ratio = math.NaN()
	}
	if !timers.ok() || !ok99 {
		p99 = math.NaN()
	}
	d.targets = append(d.targets,
		target{name: "window store within 2x of one retention's worth after 6 retentions, " + b.kind + " (issue 35)", binding: true,
			want: "<= 2.00", measured: num("%.2f", ratio), met: metVerdict(ratio, 2, false)},
		target{name: "wall-clock timers fire within 100 ms of their time at p99, " + b.kind + " (issue 35)",
			want: "<= 100 ms", measured: num("%.1f ms", p99), met: metVerdict(p99, 100, false)},
	)
}
