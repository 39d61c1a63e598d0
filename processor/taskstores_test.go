package processor

import (
	"context"
	"testing"
	"time"

	"github.com/rackstream/rackstream/state"
)

// TestADroppedTaskWhoseCommitOutlivesTheDropClosesWhenTheCommitEnds: a
// drop that cannot take the task's lock within the shutdown timeout (a
// commit flushing to brokers that are gone) no longer leaves the stores
// open for good: they close as soon as the commit lets go, and a new task
// of the same id, waiting for them, then opens. Before, the stores stayed
// active and the next start of the task failed with "stores are active"
// until another rebalance (seen in the fault suite's exactly-once broker
// scenario: an instance never ready again).
func TestADroppedTaskWhoseCommitOutlivesTheDropClosesWhenTheCommitEnds(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ShutdownTimeout = 50 * time.Millisecond })
	h.start(0)
	tk := h.feed(0, 0, "k", "a")
	h.waitProcessed(tk, 1)
	st := h.mgr.Task(0)
	if st == nil || st.Role() != state.RoleActive {
		t.Fatalf("task 0's stores before the drop: %v", st)
	}

	tk.mu.Lock() // a commit holds the task
	tk.drop()    // gives up after the shutdown timeout
	if st.Role() != state.RoleActive {
		t.Fatalf("stores closed under a commit holding the task: %s", st.Role())
	}

	waited := make(chan error, 1)
	go func() { waited <- waitClosed(context.Background(), st, time.Minute) }()
	if err := waitClosed(context.Background(), st, 20*time.Millisecond); err == nil {
		t.Fatal("waitClosed returned while the stores were still active")
	}
	tk.mu.Unlock() // the commit ends
	if err := <-waited; err != nil {
		t.Fatalf("waiting for the dropped task's stores: %v", err)
	}
	eventually(t, "task 0 gone from the manager", func() bool { return h.mgr.Task(0) == nil })
}
