package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// driver is one run: its configuration, the binaries it built, and the
// targets its sections measured.
type driver struct {
	cfg     config
	repo    string            // the repository's root
	work    string            // a temporary directory for builds and state
	bins    map[string]string // built binaries by key
	log     io.Writer
	targets []target
	// ksRestores are the Kafka Streams at_least_once count runs of the
	// current broker (each also timed a restore), nil when none gave
	// figures.
	ksRestores []child
}

// rounds is the number of rounds on b.
func (d *driver) rounds(b broker) int {
	if b.kind == "kfake" && d.cfg.kfakeRounds > 0 {
		return d.cfg.kfakeRounds
	}
	return d.cfg.rounds
}

func (d *driver) logf(format string, args ...any) {
	fmt.Fprintf(d.log, time.Now().UTC().Format("15:04:05")+" "+format+"\n", args...)
}

// broker is where a section's processes run.
type broker struct {
	kind  string            // kfake or kafka
	title string            // for headings
	note  string            // what a reader must know about it
	env   map[string]string // added to benchmark children
	// brokers are the real broker's addresses; empty for kfake (each
	// benchmark process starts its own, the cluster section one in the
	// driver).
	brokers []string
}

// clusterNote is what the cluster section says of the broker: there kfake
// runs in a process of its own (bench/kfakebroker), which the instances and
// the driver reach over loopback.
func (b broker) clusterNote() string {
	if b.kind == "kfake" {
		return "kfake runs in a process of its own (bench/kfakebroker), apart from the driver that produces the load and runs the load generator, on the same two cores; the instances and the driver reach it over loopback."
	}
	return b.note
}

func (b broker) inProcessNote() string {
	if b.kind == "kfake" {
		return " and, on kfake, the in-process broker's work"
	}
	return ""
}

// result is what run produced: the sections, for the smoke test.
type result struct {
	sections []*section
	markdown string
}

// run runs every section the configuration asks for and writes cfg.out.
func run(ctx context.Context, cfg config, log io.Writer) (*result, error) {
	repo, err := repoRoot()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "rackstream-bench-")
	if err != nil {
		return nil, err
	}
	if os.Getenv("BENCH_DRIVER_KEEP") == "" {
		defer func() {
			if !cfg.smoke { // the smoke run (make test) leaves nothing behind
				if _, err := keepLogs(work, time.Now(), log); err != nil {
					fmt.Fprintf(log, "keeping the logs: %v\n", err)
				}
			}
			os.RemoveAll(work)
		}()
	} else {
		fmt.Fprintf(log, "keeping %s (BENCH_DRIVER_KEEP is set)\n", work)
	}
	d := &driver{cfg: cfg, repo: repo, work: work, bins: map[string]string{}, log: log}
	started := time.Now()
	m := readMachine(repo)
	if err := d.build(ctx); err != nil {
		return nil, err
	}
	var brokers []broker
	for _, kind := range d.brokerKinds() {
		b, ok := d.broker(kind)
		if !ok {
			continue
		}
		brokers = append(brokers, b)
	}
	res := &result{}
	var skipped []string
	for _, kind := range d.brokerKinds() {
		if _, ok := d.broker(kind); !ok {
			skipped = append(skipped, kind)
		}
	}
	// Each finished section is written at once (marked unfinished), so that
	// a run cut short leaves what it measured.
	add := func(sec *section) {
		res.sections = append(res.sections, sec)
		m.loadEnd, m.took = loadAverage()+" (run unfinished)", time.Since(started)
		_ = os.WriteFile(cfg.out, []byte(d.render(m, brokers, skipped, res.sections)), 0o644)
	}
	for i, b := range brokers {
		if i == 1 && cfg.wants("placement") {
			add(d.placementSection(ctx)) // before the second broker: placement needs none
		}
		var outcome countOutcome
		if cfg.wants("count") {
			var sec *section
			sec, outcome = d.countSection(ctx, b)
			add(sec)
		}
		if cfg.wants("restore") {
			add(d.restoreSection(ctx, b))
		}
		if cfg.wants("cluster") || cfg.wants("freshness") || cfg.wants("failover") {
			add(d.clusterSection(ctx, b, outcome))
		}
		if cfg.wants("windowed") {
			add(d.windowedSection(ctx, b))
		}
	}
	if cfg.wants("placement") && len(brokers) < 2 {
		add(d.placementSection(ctx))
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	m.loadEnd = loadAverage()
	m.took = time.Since(started)
	res.markdown = d.render(m, brokers, skipped, res.sections)
	if err := os.WriteFile(cfg.out, []byte(res.markdown), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", cfg.out, err)
	}
	d.logf("wrote %s after %v", cfg.out, m.took.Round(time.Second))
	return res, nil
}

func (d *driver) brokerKinds() []string {
	if len(d.cfg.brokers) > 0 {
		return d.cfg.brokers
	}
	return []string{"kafka", "kfake"} // the real broker's figures first: they matter most
}

// broker describes kind, and whether it can be had in this run.
func (d *driver) broker(kind string) (broker, bool) {
	switch kind {
	case "kfake":
		return broker{kind: "kfake", title: "kfake",
			note: "kfake (franz-go's in-process fake broker) runs inside each benchmark process, so a process's CPU and memory include the broker's."}, true
	case "kafka":
		addrs := os.Getenv("RACKSTREAM_TEST_BROKERS")
		if addrs == "" {
			return broker{}, false
		}
		return broker{kind: "kafka", title: "Apache Kafka 4.4.0",
			note:    "The real broker (deploy/local/kafka.sh: one KRaft node on loopback, the same two cores) runs outside the measured processes.",
			env:     map[string]string{"RACKSTREAM_TEST_BROKERS": addrs, "RACKSTREAM_TEST_BROKER_RUN": os.Getenv("RACKSTREAM_TEST_BROKER_RUN")},
			brokers: strings.Split(addrs, ",")}, true
	}
	return broker{}, false
}

// build compiles the benchmark binaries and rackstream, two at a time.
func (d *driver) build(ctx context.Context) error {
	d.logf("building %d binaries in %s", len(packages), d.work)
	sem := make(chan struct{}, 2)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
	)
	for key, pkg := range packages {
		out := filepath.Join(d.work, key)
		args := []string{"test", "-c", "-o", out, "./" + pkg}
		switch key {
		case "rackstream":
			args = []string{"build", "-o", out, "./cmd/rackstream"}
		case "gokacount":
			args = []string{"build", "-o", out, "./bench/goka/cmd/gokacount"}
		case "kfakebroker":
			args = []string{"build", "-o", out, "./bench/kfakebroker"}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			cmd := exec.CommandContext(ctx, goTool(), args...)
			cmd.Dir = d.repo
			if b, err := cmd.CombinedOutput(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("go %s: %v\n%s", strings.Join(args, " "), err, b))
				mu.Unlock()
				return
			}
			mu.Lock()
			d.bins[key] = out
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("build: %s", strings.Join(errs, "\n"))
	}
	return nil
}

// packages are the directories of the built binaries' packages: a test
// binary runs in its own (the Kafka Streams benchmark and Kafka's assignor
// find their Java projects there).
var packages = map[string]string{"processor": "processor", "state": "state", "goka": "bench/goka",
	"kstreams": "bench/kstreams", "kafkaref": "assignor/kafkaref", "rackstream": ".", "gokacount": "bench/goka",
	"kfakebroker": "bench/kfakebroker"}

func (d *driver) pkgDir(key string) string { return filepath.Join(d.repo, packages[key]) }

func goTool() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// repoRoot is the module's root: the directory of go.mod above the
// working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
