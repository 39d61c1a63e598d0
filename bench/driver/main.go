// Command driver is `make bench`: it runs Rackstream's benchmarks and its
// peers' (goka v1.1.13, Kafka Streams 4.4.0, the franz-go pipe and
// restore ceilings, Kafka's own assignor) as separate processes in one
// run, against kfake and the real broker, and writes bench/results.md.
//
// It reuses the benchmarks the repository has rather than copies of them:
// each row of a table is one `go test -bench` of processor, state,
// bench/goka or bench/kstreams, built once with `go test -c` and run alone
// in its own process with one system selected and sized by environment
// variables; the driver reads the figures it reports and what the kernel
// accounted to the process (CPU, peak RSS). Every figure is the median of
// several rounds, each round running every system once in a rotating
// order, and every ratio is the median of the ratios within rounds, so
// that the load of a shared machine falls on both sides of each ratio.
// Three `rackstream run` processes of the built-in count measure what
// only a real deployment shows: lookups against a bare net/http handler,
// end-to-end freshness under load, and failover by kill -9 and SIGTERM.
//
// A row whose process cannot run gets a line with the command and its
// error, never a silent gap; the smoke run (-smoke: tiny sizes, one
// round, about a minute) is a test of this package, in `make test`, so the
// harness does not rot.
//
//	go run ./bench/driver                       # kfake, and the real broker when RACKSTREAM_TEST_BROKERS is set
//	eval "$(deploy/local/kafka.sh env)"; make bench
//	go run ./bench/driver -smoke -out /tmp/results.md
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	serveBareIfAsked()
	cfg := fullConfig()
	flag.StringVar(&cfg.out, "out", "bench/results.md", "where to write the results")
	smoke := flag.Bool("smoke", false, "tiny sizes and one round: checks the harness in about a minute")
	rounds := flag.Int("rounds", 0, "rounds per table (0: 3, or 1 with -smoke)")
	only := flag.String("brokers", "", "comma-separated brokers to run on: kfake, kafka (default: kfake, and kafka when RACKSTREAM_TEST_BROKERS is set)")
	records := flag.Int("records", 0, "input records of the count (0: 1,000,000, or 3,000 with -smoke)")
	keys := flag.Int("keys", 0, "keys of the count's input (0: 100,000, or 300 with -smoke)")
	restoreKeys := flag.Int("restore-keys", 0, "keys of the restored store (0: 1,000,000, or 3,000 with -smoke)")
	windowRecords := flag.Int("window-records", 0, "input records of the windowed count, over the count's keys (0: 200,000, or 3,000 with -smoke)")
	sections := flag.String("sections", "", "comma-separated sections to run: count, restore, cluster, placement, freshness (the cluster section with only its freshness rows), failover (only its failover rows, instances logging at debug level) or windowed (windows and timers) (default: all)")
	loadRate := flag.Float64("load-rate", 0, "records/s of the cluster section's load (0: half the maximum the cluster sustains, measured in the run, or 20,000 when that fails; 500 with -smoke)")
	freshFor := flag.Duration("fresh-duration", 0, "how long the freshness rows probe (the row at the section's interval: each of its windows) (0: 30s, or 1.5s with -smoke)")
	freshWindows := flag.Int("fresh-windows", 0, "windows of -fresh-duration the freshness row at the section's interval probes, its p99 their median (0: 3, or 2 with -smoke)")
	flag.StringVar(&cfg.traceDir, "trace-dir", "", "a directory: the instances serve their profiles (http.pprof=true) and an 8 s execution trace of each, of the driver and (on kfake) of the broker's process is taken into it during the freshness row at the section's commit interval (tracefetch.go)")
	flag.Func("instance-set", "key=value: a configuration key the cluster section's instances run with (--set), over the driver's own; repeatable (to measure a setting's effect: the results say it ran with it)", func(kv string) error {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not key=value", kv)
		}
		if cfg.instanceSet == nil {
			cfg.instanceSet = map[string]string{}
		}
		cfg.instanceSet[k] = v
		return nil
	})
	flag.Parse()
	if *smoke {
		cfg = smokeConfig(cfg.out, cfg.traceDir)
	}
	if *rounds > 0 {
		cfg.rounds, cfg.kfakeRounds = *rounds, *rounds
	}
	if *records > 0 {
		cfg.countRecords = *records
	}
	if *keys > 0 {
		cfg.countKeys = *keys
	}
	if *restoreKeys > 0 {
		cfg.restoreKeys = *restoreKeys
	}
	if *windowRecords > 0 {
		cfg.windowRecords = *windowRecords
	}
	if *loadRate > 0 {
		cfg.fallbackRate, cfg.loadRate = *loadRate, *loadRate
	}
	if *freshFor > 0 {
		cfg.freshDuration = *freshFor
	}
	if *freshWindows > 0 {
		cfg.freshWindows = *freshWindows
	}
	if *only != "" {
		cfg.brokers = strings.Split(*only, ",")
	}
	if *sections != "" {
		cfg.sections = strings.Split(*sections, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := run(ctx, cfg, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench driver:", err)
		os.Exit(1)
	}
}

// config sizes one run.
type config struct {
	out                     string
	smoke                   bool
	rounds                  int
	kfakeRounds             int      // rounds on kfake when not 0: the real broker's figures matter more, and time is short
	brokers                 []string // kfake, kafka; empty: kfake, and kafka when the environment names it
	sections                []string // empty: all
	countRecords, countKeys int
	restoreKeys             int
	windowRecords           int           // input records of the windowed count
	storeKeys               int           // keys of the window store's size rows
	timerRate, timerKeys    int           // the timers' load: records/s over this many keys
	timerFor                time.Duration // and for how long
	queryKeys               int
	queryClients            int
	queryDuration           time.Duration
	freshDuration           time.Duration
	freshWindows            int               // the 1 s freshness row probes this many windows of freshDuration; its p99 is their median
	freshWarm               time.Duration     // the load runs this long before the freshness probes
	instanceSet             map[string]string // -instance-set: keys over the cluster instances' configuration
	traceDir                string            // -trace-dir: where the instances' execution traces go ("": none taken)
	traceAfter, traceFor    time.Duration     // each trace starts this long into the probes and lasts this long (under the query server's 30 s write timeout)
	fallbackRate            float64
	loadRate                float64       // the cluster section's load when set (-load-rate; the smoke run's, which checks the harness, not speed), instead of half its measured maximum
	clusterBacklog          int           // records of the backlog that measures the cluster's maximum throughput
	clusterDrain            time.Duration // a drain shorter than this is measured again with a larger backlog (0: never)
	sustainWarm             time.Duration // each rate of the sustained maximum's search runs this long before its window
	sustainWindow           time.Duration // and is measured over this
	sessionTimeout          time.Duration
	commitInterval          time.Duration
	scaleTimeout            time.Duration
	childTimeout            time.Duration
}

// fullConfig is `make bench`: the sizes.
func fullConfig() config {
	return config{
		// Three rounds on each broker: the median of two is their mean, and
		// one disturbed round moved a ratio by a third (the count against
		// the fair ceiling at 37668ba: 0.48 and 0.87).
		out: "bench/results.md", rounds: 3,
		countRecords: 1_000_000, countKeys: 100_000, restoreKeys: 1_000_000,
		// The windowed count reads a key's windows through its task's
		// uncommitted writes, a cost per record that grows with them.
		windowRecords: 200_000, storeKeys: 3000, timerRate: 2000, timerKeys: 10_000, timerFor: 20 * time.Second,
		queryKeys: 2000, queryClients: 8, queryDuration: 3 * time.Second, freshDuration: 30 * time.Second, freshWindows: 3, freshWarm: 10 * time.Second,
		traceAfter: 5 * time.Second, traceFor: 8 * time.Second,
		fallbackRate: 20_000, sessionTimeout: 10 * time.Second, commitInterval: time.Second, clusterBacklog: 300_000, clusterDrain: 8 * time.Second,
		sustainWarm: 3 * time.Second, sustainWindow: 8 * time.Second,
		scaleTimeout: 3 * time.Minute, childTimeout: 20 * time.Minute,
	}
}

// smokeConfig is the smoke run: every row, tiny sizes.
func smokeConfig(out, traceDir string) config {
	return config{
		out: out, smoke: true, rounds: 1, traceDir: traceDir, traceFor: time.Second,
		countRecords: 3000, countKeys: 300, restoreKeys: 3000,
		windowRecords: 3000, storeKeys: 100, timerRate: 200, timerKeys: 100, timerFor: 2 * time.Second,
		queryKeys: 300, queryClients: 2, queryDuration: 300 * time.Millisecond, freshDuration: 1500 * time.Millisecond, freshWindows: 2, freshWarm: 500 * time.Millisecond,
		fallbackRate: 500, loadRate: 500, sessionTimeout: 3 * time.Second, commitInterval: 500 * time.Millisecond, clusterBacklog: 20_000,
		scaleTimeout: 2 * time.Second, childTimeout: 5 * time.Minute,
	}
}

func (c config) wants(section string) bool {
	if len(c.sections) == 0 {
		return true
	}
	for _, s := range c.sections {
		if s == section {
			return true
		}
	}
	return false
}
