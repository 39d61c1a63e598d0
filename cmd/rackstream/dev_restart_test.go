package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
)

// TestDevRestartsAKilledInstanceAtOnce: a killed instance started again
// at once runs on its state directory at the first attempt: the runtime's
// Run released the stores and the directory before returning, so there
// is no lock to wait for or retry on. Twice, to also restart a restart.
func TestDevRestartsAKilledInstanceAtOnce(t *testing.T) {
	d, out := startTestDev(t, "dev-restart")
	in := d.instance("i1")
	ready := func(what string) {
		t.Helper()
		kafkatest.Eventually(t, 2*time.Minute, what, func() bool {
			svc := in.running()
			if svc == nil {
				t.Fatalf("i1 stopped:\n%s", out.String())
			}
			ok, _ := svc.Ready()
			return ok
		})
	}
	ready("i1 ready")
	kafkatest.Eventually(t, 2*time.Minute, "the first placement table", func() bool {
		return strings.Contains(out.String(), "all 2 instances ready")
	})
	pid := in.processID()
	for round := range 2 {
		tables := strings.Count(out.String(), "rackstream dev: new placement")
		if err := d.act("kill", "i1"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := d.act("start", "i1"); err != nil {
			t.Fatalf("round %d: start right after kill: %v", round, err)
		}
		t.Logf("round %d: started again %v after the kill", round, time.Since(start))
		ready("i1 ready again")
		in.mu.Lock()
		err := in.err
		in.mu.Unlock()
		if err != nil || strings.Contains(out.String(), "i1 stopped") {
			t.Fatalf("round %d: the restarted run failed (%v):\n%s", round, err, out.String())
		}
		if got := in.processID(); got != pid {
			t.Fatalf("round %d: process id %q after the restart, want %q (the same state directory)", round, got, pid)
		}
		// The placement with i1 back is printed, from the instances'
		// placement events (nothing polls for it any more).
		kafkatest.Eventually(t, time.Minute, "a new placement table", func() bool {
			return strings.Count(out.String(), "rackstream dev: new placement") > tables
		})
	}
}

// startTestDev starts a dev cluster of two instances on a test Kafka, closed
// when the test ends, and returns it with its console output.
func startTestDev(t *testing.T, app string) (*devCluster, *cluster.Lines) {
	t.Helper()
	c := kafkatest.New(t)
	out := new(cluster.Lines)
	d, err := startDev(t.Context(), devOptions{instances: 2, partitions: 4, standbys: 1, brokers: strings.Join(c.Brokers, ","),
		app: c.Name(app), logLevel: "info"}, slog.LevelInfo, out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return d, out
}
