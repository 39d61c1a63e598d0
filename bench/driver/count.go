package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
)

// countOutcome is what later sections need from the count: the fastest
// Rackstream count's records/s, for the freshness run's half load.
type countOutcome struct {
	rackstreamRate, gokaRate float64
}

// countSection runs the stateful count of every system on broker b: the
// pipes (the ceilings), Rackstream with and without an output, goka, and
// Kafka Streams with Rackstream beside it in the Kafka Streams driver.
func (d *driver) countSection(ctx context.Context, b broker) (*section, countOutcome) {
	cfg := d.cfg
	records, keys := strconv.Itoa(cfg.countRecords), strconv.Itoa(cfg.countKeys)
	proc := map[string]string{"RACKSTREAM_BENCH_RECORDS": records, "RACKSTREAM_BENCH_KEYS": keys}
	gk := map[string]string{"GOKA_BENCH_RECORDS": records, "GOKA_BENCH_KEYS": keys, "GOKA_BENCH_SYSTEMS": "goka"}
	ks := func(engine, guarantee string) map[string]string {
		return map[string]string{"RACKSTREAM_KSTREAMS_RECORDS": records, "RACKSTREAM_KSTREAMS_KEYS": keys,
			"RACKSTREAM_KSTREAMS_ROUNDS": "1", "RACKSTREAM_KSTREAMS_ENGINES": engine,
			"RACKSTREAM_KSTREAMS_GUARANTEE": guarantee, "RACKSTREAM_KSTREAMS_CACHE_BYTES": "0"}
	}
	systems := []system{
		{key: "pipe1", name: "franz-go pipe, 1 record per input (ceiling of the count without output)", writes: "1",
			bin: "processor", bench: "^BenchmarkProcessingPipeCeiling$/^records-per-input=1$", env: proc, rate: "records/s", cpu: "cpu-µs/record", cpuScale: 1},
		{key: "pipe2", name: "franz-go pipe, 2 records per input (**the fair ceiling**)", writes: "2",
			bin: "processor", bench: "^BenchmarkProcessingPipeCeiling$/^records-per-input=2$", env: proc, rate: "records/s", cpu: "cpu-µs/record", cpuScale: 1},
		{key: "rs", name: "Rackstream count, at-least-once, changelog + output", writes: "2",
			bin: "processor", bench: "^BenchmarkProcessingCount$/^output$", env: proc, rate: "records/s", cpu: "cpu-µs/record", cpuScale: 1},
		{key: "rs1", name: "Rackstream count, at-least-once, changelog only (no output topic)", writes: "1",
			bin: "processor", bench: "^BenchmarkProcessingCount$/^no-output$", env: proc, rate: "records/s", cpu: "cpu-µs/record", cpuScale: 1},
		{key: "rseos", name: "Rackstream count, exactly_once_v2, changelog + output", writes: "2",
			bin: "processor", bench: "^BenchmarkProcessingCount$/^output-eos$", env: proc, rate: "records/s", cpu: "cpu-µs/record", cpuScale: 1},
		{key: "goka", name: "goka v1.1.13 count (group table only)", writes: "1",
			bin: "goka", bench: "^BenchmarkCount$", env: gk, rate: "goka-records/s", cpu: "goka-cpu-µs/record", cpuScale: 1},
		{key: "rsks", name: "Rackstream count in the Kafka Streams driver (changelog + output)", writes: "2",
			bin: "kstreams", bench: "^BenchmarkCountSideBySide$", env: ks("rackstream", "at_least_once"), rate: "rackstream-records/s", cpu: "rackstream-cpu-µs/record", cpuScale: 1},
		{key: "rsekseos", name: "Rackstream count in the Kafka Streams driver, exactly_once_v2", writes: "2",
			bin: "kstreams", bench: "^BenchmarkCountSideBySide$", env: ks("rackstream", "exactly_once_v2"), rate: "rackstream-records/s", cpu: "rackstream-cpu-µs/record", cpuScale: 1},
		{key: "ksalos", name: "Kafka Streams 4.4.0, at_least_once", writes: "2",
			bin: "kstreams", bench: "^BenchmarkCountSideBySide$", env: ks("kafka-streams", "at_least_once"), rate: "kstreams-records/s", cpu: "kstreams-cpu-µs/record", rss: "kstreams-peak-rss-MB", cpuScale: 1},
		{key: "kseos", name: "Kafka Streams 4.4.0, exactly_once_v2", writes: "2",
			bin: "kstreams", bench: "^BenchmarkCountSideBySide$", env: ks("kafka-streams", "exactly_once_v2"), rate: "kstreams-records/s", cpu: "kstreams-cpu-µs/record", rss: "kstreams-peak-rss-MB", cpuScale: 1},
	}
	if cfg.smoke {
		noJVM(systems)
	}
	sec := newSection(fmt.Sprintf("Stateful count on %s", b.title))
	sec.printf("%s records over %s keys (`key-<i mod keys>`, 100-byte values), 12 partitions, commit interval 1 s, record cache off "+
		"(every update reaches the changelog and the output). Every row is its own process, run %d time(s) in rotating order. "+
		"%s\n\n", thousands(float64(cfg.countRecords)), thousands(float64(cfg.countKeys)), d.rounds(b), b.note)
	sec.printf("Two measures, not to be mixed: the processor and goka benchmarks time from the instance's start (group join included) "+
		"until every record is handled; the Kafka Streams driver times from the first instance running until the group's "+
		"offsets are committed through the end (up to one commit interval more), so Kafka Streams is compared with the "+
		"Rackstream count run by that same driver. CPU over the measured span is the process's (the JVM's for Kafka Streams); "+
		"the whole-process figure adds start-up and producing the input%s. Peak RSS is the process's (the JVM's for Kafka Streams).\n\n",
		b.inProcessNote())
	r := d.runRounds(ctx, "count", b, d.rounds(b), systems)
	d.ksRestores = nil
	for _, c := range r.byKey["ksalos"] {
		if c.ok() {
			d.ksRestores = r.byKey["ksalos"]
		}
	}
	r.table(sec, cfg.countRecords, "records/s")

	rate := func(k string) []float64 { return r.series(k, rateOf) }
	cpu := func(k string) []float64 { return r.series(k, cpuPerMillion) }
	rss := func(k string) []float64 { return r.series(k, peakRSS) }
	sec.printf("\nRatios (median over rounds of the ratio within each round):\n\n")
	fair := ratioLine(sec, "Rackstream with output / fair pipe (2 records per input), records/s", rate("rs"), rate("pipe2"))
	ratioLine(sec, "Rackstream without output / pipe (1 record per input), records/s", rate("rs1"), rate("pipe1"))
	ratioLine(sec, "Rackstream with output / pipe (1 record per input), records/s (the earlier, unfair comparison)", rate("rs"), rate("pipe1"))
	gokaRate := ratioLine(sec, "Rackstream without output / goka, records/s (the same work: one table record per input)", rate("rs1"), rate("goka"))
	gokaCPU := ratioLine(sec, "goka / Rackstream without output, CPU per record", cpu("goka"), cpu("rs1"))
	gokaRSS := ratioLine(sec, "Rackstream without output / goka, peak RSS", rss("rs1"), rss("goka"))
	ratioLine(sec, "Rackstream / Kafka Streams at_least_once, records/s (both in the Kafka Streams driver)", rate("rsks"), rate("ksalos"))
	ksCPU := ratioLine(sec, "Kafka Streams at_least_once / Rackstream, CPU per record (= Rackstream's records per CPU-second over Kafka Streams')", cpu("ksalos"), cpu("rsks"))
	ratioLine(sec, "Rackstream / Kafka Streams, both exactly_once_v2, records/s (Kafka Streams driver)", rate("rsekseos"), rate("kseos"))
	eos := ratioLine(sec, "Rackstream exactly_once_v2 / its at_least_once, records/s (processor benchmark, both with output, 1 s commits)", rate("rseos"), rate("rs"))
	ratioLine(sec, "Kafka Streams exactly_once_v2 / its at_least_once, records/s", rate("kseos"), rate("ksalos"))

	d.targets = append(d.targets,
		target{name: "count >= 70% of the fair pipe ceiling, " + b.kind, binding: true, want: ">= 0.70", measured: num("%.2f", fair), met: metVerdict(fair, 0.70, true), inTheWay: inTheWayCount},
		target{name: "peak RSS below goka's on the count, " + b.kind, binding: true, want: "< 1.00 (Rackstream / goka)", measured: num("%.2f", gokaRSS), met: metVerdict(gokaRSS, 0.9999, false), inTheWay: inTheWayRSS},
		target{name: "records/s >= 8x goka's, " + b.kind, want: ">= 8", measured: num("%.2f", gokaRate), met: metVerdict(gokaRate, 8, true),
			inTheWay: inTheWayGokaRate + gokaRateAgainstPipe(median(rate("goka")), median(rate("pipe1")))},
		target{name: "CPU per record >= 8x less than goka's, " + b.kind, want: ">= 8", measured: num("%.2f", gokaCPU), met: metVerdict(gokaCPU, 8, true), inTheWay: inTheWayCount},
	)
	if b.kind == "kafka" {
		d.targets = append(d.targets,
			target{name: "records per CPU-second >= 10x Kafka Streams'", want: ">= 10", measured: num("%.2f", ksCPU), met: metVerdict(ksCPU, 10, true), inTheWay: inTheWayCount},
			target{name: "exactly-once >= 70% of at-least-once", want: ">= 0.70", measured: num("%.2f", eos), met: metVerdict(eos, 0.70, true), inTheWay: inTheWayEOS},
		)
	}
	out := countOutcome{rackstreamRate: median(rate("rs")), gokaRate: median(rate("goka"))}
	if math.IsNaN(out.rackstreamRate) {
		out.rackstreamRate = 0
	}
	if math.IsNaN(out.gokaRate) {
		out.gokaRate = 0
	}
	return sec, out
}

// noJVM marks the Kafka Streams driver's systems absent: the smoke run
// starts no JVM.
func noJVM(systems []system) {
	for i := range systems {
		if systems[i].bin == "kstreams" {
			systems[i].absent = "Not run in the smoke run (-smoke), which starts no JVM to stay within a minute or two; `make bench` runs it."
		}
	}
}

// ksRestoreRate is a Kafka Streams count run's restore rate: the records
// it restored over the time from start() returning to RUNNING.
func ksRestoreRate(c child) (float64, bool) {
	ms, ok1 := c.metric("kstreams-restore-ms")
	restored, ok2 := c.metric("kstreams-restored")
	return restored / (ms / 1000), ok1 && ok2 && ms > 0
}

// restoreSection times the rebuild of a store of restoreKeys keys on
// broker b: Rackstream's restore beside its two ceilings (the state
// benchmark), and goka's and Kafka Streams' recovery beside Rackstream's
// in the goka driver.
func (d *driver) restoreSection(ctx context.Context, b broker) *section {
	cfg := d.cfg
	n := strconv.Itoa(cfg.restoreKeys)
	st := map[string]string{"STATE_BENCH_RECORDS": n}
	gk := func(sys string) map[string]string {
		return map[string]string{"GOKA_BENCH_TABLE_KEYS": n, "GOKA_BENCH_SYSTEMS": sys}
	}
	systems := []system{
		{key: "rs", name: "Rackstream restore (one changelog partition, state benchmark)", writes: "-",
			bin: "state", bench: "^BenchmarkRestore$/^restore$", env: st, rate: "records/s", cpu: "cpu-ns/record", cpuScale: 1e-3},
		{key: "consume", name: "ceiling: plain franz-go consumer of the same partition", writes: "-",
			bin: "state", bench: "^BenchmarkRestore$/^ceiling-consume$", env: st, rate: "records/s", cpu: "cpu-ns/record", cpuScale: 1e-3},
		{key: "leveldb", name: "ceiling: goleveldb batch load, no Kafka", writes: "-",
			bin: "state", bench: "^BenchmarkRestore$/^ceiling-leveldb$", env: st, rate: "records/s", cpu: "cpu-ns/record", cpuScale: 1e-3},
		{key: "rsg", name: "Rackstream recovery in the goka driver (12 partitions, group join included)", writes: "-",
			bin: "goka", bench: "^BenchmarkRecovery$", env: gk("rackstream"), rate: "rackstream-records/s", cpu: "rackstream-cpu-µs/record", cpuScale: 1},
		{key: "goka", name: "goka v1.1.13 recovery (the same table)", writes: "-",
			bin: "goka", bench: "^BenchmarkRecovery$", env: gk("goka"), rate: "goka-records/s", cpu: "goka-cpu-µs/record", cpuScale: 1},
		{key: "ks", name: "Kafka Streams 4.4.0 restore (its count's changelog, start to RUNNING)", writes: "-",
			absent: "Not run on this broker."},
	}
	sec := newSection(fmt.Sprintf("Restore of %s keys on %s", thousands(float64(cfg.restoreKeys)), b.title))
	sec.printf("A fresh state directory rebuilt from a changelog of %s keys (one record per key). The state benchmark restores one "+
		"partition (16-byte random keys, 100-byte values) and times the restore alone; the goka driver's table has 12 partitions "+
		"(`key-<i>`, decimal counts) and times from the instance's start, group join included, to every partition recovered. "+
		"Kafka Streams' restore is taken from its at_least_once count runs above (to spare a JVM run per round): a fresh "+
		"instance rebuilding the count's changelog, %s records over %s keys (not yet compacted), timed from `start()` "+
		"returning to `RUNNING`, group join included; its CPU is not measured apart from the count's. %s\n\n",
		thousands(float64(cfg.restoreKeys)), thousands(float64(cfg.countRecords)), thousands(float64(cfg.countKeys)), b.note)
	r := d.runRounds(ctx, "restore", b, d.rounds(b), systems)
	if ks := d.ksRestores; len(ks) > 0 && b.kind == "kafka" {
		// Kafka Streams' restores come from its count runs above: one JVM
		// run less per round.
		systems[5].absent = ""
		r.systems[5] = system{key: "ks", name: systems[5].name, writes: "-", rateOf: ksRestoreRate, rss: "kstreams-restore-peak-rss-MB", borrowed: true}
		r.byKey["ks"] = ks
	} else if d.ksRestores == nil {
		r.systems[5].absent = "Kafka Streams' restore is measured in its count runs, which did not run on this broker in this run (see the count section)."
	}
	r.table(sec, cfg.restoreKeys, "records/s")
	rate := func(k string) []float64 { return r.series(k, rateOf) }
	slower := make([]float64, 0)
	c, l := rate("consume"), rate("leveldb")
	for i := range min(len(c), len(l)) {
		slower = append(slower, math.Min(c[i], l[i]))
	}
	sec.printf("\nRatios (median over rounds of the ratio within each round):\n\n")
	ceil := ratioLine(sec, "Rackstream restore / the slower of its two ceilings, records/s", rate("rs"), slower)
	ratioLine(sec, "Rackstream / goka, recovery records/s (goka driver)", rate("rsg"), rate("goka"))
	ratioLine(sec, "Rackstream (goka driver) / Kafka Streams, restore records/s", rate("rsg"), rate("ks"))
	d.targets = append(d.targets, target{name: "restore >= 90% of the slower ceiling, " + b.kind, want: ">= 0.90",
		measured: num("%.2f", ceil), met: metVerdict(ceil, 0.90, true), inTheWay: inTheWayRestore})
	return sec
}
