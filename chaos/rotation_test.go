package chaos

import (
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/cluster"
)

// TestStandbyRotation is scenario 6, after Kafka Streams' standby system
// test: instances stopped and started again in turn (each down long enough
// for its tasks to move and the changelogs to advance), while a watcher
// checks that no replica's checkpoint, on any instance, ever goes
// backwards: a restarted instance resumes its standbys from its own
// checkpoints, never from older ones.
func TestStandbyRotation(t *testing.T) {
	needMode(t, true)
	standbyRotation(t, setup{})
}

// TestStandbyRotationExactlyOnce is scenario 6 under exactly_once_v2: each
// clean stop commits or aborts its transaction, checkpoints must still
// never go backwards, and the counts and the output, read committed, must
// be exact.
func TestStandbyRotationExactlyOnce(t *testing.T) {
	needMode(t, true)
	standbyRotation(t, setup{eos: true})
}

func standbyRotation(t *testing.T, s setup) {
	r := beginWith(t, "standby-rotation", s)
	w := cluster.WatchCheckpoints(r.g, 500*time.Millisecond)
	var back time.Time
	for _, in := range r.ins {
		if code := in.Stop(time.Minute); code != 0 {
			t.Errorf("%s exited %d after SIGTERM", in.Name, code)
		}
		r.waitTakeover(in)
		r.settle()
		back = time.Now()
		in.StartReady(deadline)
	}
	r.healed(back)
	r.settle()
	regressions, replicas := w.Stop()
	t.Logf("checkpoints of %d replicas followed", replicas)
	for _, reg := range regressions {
		t.Errorf("checkpoint went backwards: %s", reg)
	}
	if replicas < r.p.partitions*3 {
		t.Errorf("followed %d replicas, want at least %d (every task's three)", replicas, r.p.partitions*3)
	}
	r.end(r.activeBound())
}
