package processor

import (
	"slices"
	"testing"
	"time"

	"github.com/rackstream/rackstream/state"
)

// TestAssignReturnsBeforeItsReplicasOpen (issue 17, failover): the client
// loads a newly assigned partition's committed offset only once the group
// callback returns, so assign must not open the standby and warmup
// replicas inline: an assignment after a failover opens several, each a
// LevelDB open, and they held back the moved task's first fetch. The
// replicas open after it; an assignment meanwhile goes ahead, except that
// a task whose replica is opening waits for it and is promoted from it,
// not opened beside it.
func TestAssignReturnsBeforeItsReplicasOpen(t *testing.T) {
	h := newHarness(t, nil)
	release := make(chan struct{})
	opening := make(chan int32, 4)
	h.m.openReplicaHook = func(id int32) (*state.Task, error) {
		opening <- id
		<-release
		return h.m.openReplicaDefault(id)
	}
	// A deadline, not a timing: an assign that waits for the open never
	// returns before release.
	assignWithoutWaiting := func(what string, tasks, replicas []int32) {
		t.Helper()
		done := make(chan struct{})
		go func() {
			h.m.assign(tasks, replicas)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			close(release)
			t.Fatal(what)
		}
	}
	assignWithoutWaiting("assign waited for its replica to open", []int32{0}, []int32{1})
	if id := <-opening; id != 1 {
		t.Fatalf("opening replica %d, want 1", id)
	}
	eventually(t, "task 0 running with its partition resumed while replica 1 opens", func() bool {
		tk := h.m.task(0)
		h.kafka.mu.Lock()
		paused := h.kafka.paused[0]
		h.kafka.mu.Unlock()
		return tk != nil && tk.running.Load() && !paused
	})

	// An assignment of another task does not wait for the open.
	assignWithoutWaiting("assigning task 2 waited for replica 1 to open", []int32{2}, []int32{1})
	eventually(t, "task 2 running while replica 1 opens", func() bool { tk := h.m.task(2); return tk != nil && tk.running.Load() })

	// The next assignment makes task 1 active while its replica is still
	// opening: it waits for that open, and promotes the replica.
	promoted := make(chan struct{})
	go func() {
		h.m.assign([]int32{1}, nil)
		close(promoted)
	}()
	close(release)
	<-promoted
	eventually(t, "task 1 running", func() bool { tk := h.m.task(1); return tk != nil && tk.running.Load() })
	h.mu.Lock()
	got := slices.Clone(h.promoted)
	h.mu.Unlock()
	if !slices.Equal(got, []int32{1}) {
		t.Errorf("tasks started from a replica held here: %v; want [1] (the replica promoted, not opened beside)", got)
	}
	h.m.mu.Lock()
	n := len(h.m.standby)
	h.m.mu.Unlock()
	if n != 0 {
		t.Errorf("%d replicas left after task 1 became active; want 0", n)
	}
}
