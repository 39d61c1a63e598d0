package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	serveBareIfAsked() // the queries' bare handler is this binary too
	os.Exit(m.Run())
}

// TestSmokeRunFillsOrExplainsEveryRow runs the whole driver at smoke sizes
// on the broker of this test pass (kfake, or the real broker when
// RACKSTREAM_TEST_BROKERS is set) and checks that every row results.md
// promises is there, each with figures or with a line saying why not (a
// peer that cannot run here gets its command and error): the harness of
// `make bench` cannot rot unnoticed.
func TestSmokeRunFillsOrExplainsEveryRow(t *testing.T) {
	if testing.Short() {
		t.Skip("the smoke run takes about a minute; -short skips it")
	}
	out := filepath.Join(t.TempDir(), "results.md")
	traces := t.TempDir()
	cfg := smokeConfig(out, traces)
	cfg.brokers = []string{"kfake"}
	if os.Getenv("RACKSTREAM_TEST_BROKERS") != "" {
		cfg.brokers = []string{"kafka"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := run(ctx, cfg, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("smoke run on %s took %v", cfg.brokers[0], time.Since(start).Round(time.Second))

	want := map[string][]string{
		"Stateful count": {"franz-go pipe, 1 record per input (ceiling of the count without output)", "franz-go pipe, 2 records per input (**the fair ceiling**)",
			"Rackstream count, at-least-once, changelog + output", "Rackstream count, at-least-once, changelog only (no output topic)",
			"Rackstream count, exactly_once_v2, changelog + output", "goka v1.1.13 count (group table only)", "Rackstream count in the Kafka Streams driver (changelog + output)",
			"Rackstream count in the Kafka Streams driver, exactly_once_v2",
			"Kafka Streams 4.4.0, at_least_once", "Kafka Streams 4.4.0, exactly_once_v2"},
		"Restore": {"Rackstream restore (one changelog partition, state benchmark)", "ceiling: plain franz-go consumer of the same partition",
			"ceiling: goleveldb batch load, no Kafka", "Rackstream recovery in the goka driver (12 partitions, group join included)",
			"goka v1.1.13 recovery (the same table)", "Kafka Streams 4.4.0 restore (its count's changelog, start to RUNNING)"},
		"Three `rackstream run` instances": {"local lookups", "forwarded lookups", "bare net/http handler", freshRow, freshDefaultRow,
			"failover, kill -9 of a task's owner", "failover, SIGTERM of a task's owner",
			"goka v1.1.13 hot standby, kill -9 of a partition's owner", "goka v1.1.13 hot standby, SIGTERM of a partition's owner"},
		"Placement": {"placement, ours and Kafka's"},
		"Windows and timers": {windowedCountRow, "Rackstream count, at-least-once, changelog + output (processor benchmark)",
			"Rackstream windowed count in the Kafka Streams driver", "Kafka Streams 4.4.0 windowed count, at_least_once",
			windowStoreRow, timerRow},
	}
	for prefix, rows := range want {
		var sec *section
		for _, s := range res.sections {
			if strings.HasPrefix(s.title, prefix) {
				sec = s
			}
		}
		if sec == nil {
			t.Errorf("no section %q in the results", prefix)
			continue
		}
		got := map[string]rowCheck{}
		for _, r := range sec.rows {
			got[r.name] = r
		}
		for _, name := range rows {
			r, ok := got[name]
			switch {
			case !ok:
				t.Errorf("section %q: no row %q", sec.title, name)
			case !r.filled && r.why == "":
				t.Errorf("section %q: row %q has neither figures nor an explanation", sec.title, name)
			case !r.filled:
				t.Logf("section %q: row %q explained: %s", sec.title, name, r.why)
			}
		}
	}
	// Rackstream's own rows must have figures: only peers may be explained.
	for _, s := range res.sections {
		for _, r := range s.rows {
			ours := strings.HasPrefix(r.name, "Rackstream") || strings.HasPrefix(r.name, "franz-go pipe") ||
				strings.HasPrefix(r.name, "ceiling") || strings.HasPrefix(r.name, "local") || strings.HasPrefix(r.name, "forwarded") ||
				strings.HasPrefix(r.name, "failover") || strings.HasPrefix(r.name, freshRow) || r.name == "bare net/http handler"
			if ours && !r.filled && !strings.Contains(r.why, "smoke") {
				t.Errorf("section %q: our row %q has no figures: %s", s.title, r.name, r.why)
			}
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| machine |", "| load average", "| commit |", "| versions |", "## Targets (issue 17)"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("results.md lacks %q", s)
		}
	}
	// -trace-dir: an execution trace of every instance, taken over
	// http.pprof during the freshness row, of the driver, and of kfake's
	// process (bench/kfakebroker) when the broker is kfake.
	traced := []string{"i0", "i1", "i2", "driver"}
	if cfg.brokers[0] == "kfake" {
		traced = append(traced, "broker")
	}
	for _, m := range traced {
		tr, err := os.ReadFile(filepath.Join(traces, strings.ReplaceAll(freshRow, " ", "-")+"-"+m+".trace"))
		if err != nil || !strings.HasPrefix(string(tr), "go 1.") {
			t.Errorf("the freshness row's trace of %s: %v, %d bytes, not a Go execution trace", m, err, len(tr))
		}
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
