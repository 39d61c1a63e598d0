package processor

import (
	"slices"
	"testing"
	"time"

	"github.com/rackstream/rackstream/state"
)

// TestAssignReturnsBeforeItsReplicasOpen: the client loads a newly
// assigned partition's committed offset only once the group callback
// returns, so assign must not open the standby and warmup replicas inline.
// Each is a LevelDB open, and they would hold back the moved task's first
// fetch. The
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

// TestAReconcileLeavesStoresItDidNotOpen: stores the state manager holds
// for another use (a revoke keeping its task as a standby registers them
// once its commit is done) are not a reconcile's to take: it neither keeps
// nor closes them. A reconcile that closed them, the replica no longer
// wanted, would leave the next assignment a closed standby to promote.
func TestAReconcileLeavesStoresItDidNotOpen(t *testing.T) {
	h := newHarness(t, nil)
	held, err := h.m.mgr.OpenTask(3, h.m.specs)
	if err != nil {
		t.Fatal(err)
	}
	h.m.assign(nil, []int32{3})
	h.m.reconciling.Wait()
	if r := held.Role(); r == state.RoleClosed {
		t.Fatal("the reconcile closed stores it did not open")
	}
	h.m.mu.Lock()
	got := h.m.standby[3]
	h.m.mu.Unlock()
	if got != nil {
		t.Fatal("the reconcile kept as its standby stores it did not open")
	}
	// Once their holder lets them go, the next reconcile opens its own.
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	h.m.assign(nil, []int32{3})
	h.m.reconciling.Wait()
	h.m.mu.Lock()
	got = h.m.standby[3]
	h.m.mu.Unlock()
	if got == nil || got == held || got.Role() != state.RoleStandby {
		t.Fatalf("standby 3 after its stores were let go: %v; want a tailing replica of the reconcile's own", got)
	}
}
