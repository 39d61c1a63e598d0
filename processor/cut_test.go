package processor

import (
	"errors"
	"testing"
)

// A task's part in an at-least-once commit (cut.go) when the task has
// none to give. No broker: see harness_test.go.

// TestACommitTakesNothingOfAFailedTask: a task that failed before the
// commit has no cut. Its records since the last commit are not committed,
// while another task's are.
func TestACommitTakesNothingOfAFailedTask(t *testing.T) {
	h := newHarness(t, nil)
	h.start(0, 1)
	t0 := h.feed(0, 0, "k", "a", "b")
	t1 := h.feed(1, 0, "k", "a")
	h.waitProcessed(t0, 2)
	h.waitProcessed(t1, 1)
	t0.setErr(errors.New("handler gave up"))
	if err := h.c.commit(h.ctx, []*task{t0, t1}); err != nil {
		t.Fatalf("commit = %v; a failed task fails itself, not the commit", err)
	}
	if got := h.offsets.committed(0); got != -1 {
		t.Errorf("failed task 0's offset %d committed", got)
	}
	if got := h.offsets.committed(1); got != 1 {
		t.Errorf("task 1's committed offset %d, want 1", got)
	}
	if n := h.count(0, "k"); n != 0 {
		t.Errorf("failed task 0's count %d committed, want 0", n)
	}
}
