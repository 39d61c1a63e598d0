package processor

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rackstream/rackstream/codec"
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

// TestAWriteAheadOfAFailedTaskEndsAtOnce: a commit asks a task with a
// large record cache to write it through ahead of the cut. The task
// failed meanwhile, so it writes nothing and answers at once: the commit
// does not wait out its write-ahead deadline for it, and commits nothing
// of it.
func TestAWriteAheadOfAFailedTaskEndsAtOnce(t *testing.T) {
	const keys = cutChunk + 44
	h := newHarness(t, func(o *Options) {
		o.CacheMaxBytes = 64 << 20
		o.CommitInterval = time.Minute // a write-ahead deadline of 5 s
	})
	h.start(0)
	tk := h.m.task(0)
	for i := range keys {
		h.feed(0, int64(i), fmt.Sprintf("k%04d", i), "x")
	}
	h.waitProcessed(tk, keys)
	tk.setErr(errors.New("handler gave up"))
	h.kafka.mu.Lock()
	before := len(h.kafka.records)
	h.kafka.mu.Unlock()
	// Shorter than the write-ahead deadline: a commit still waiting for
	// the task when it ends fails with it.
	ctx, cancel := context.WithTimeout(h.ctx, 2*time.Second)
	defer cancel()
	if err := h.c.commitTasks(ctx, []*task{tk}, true); err != nil {
		t.Fatalf("commit = %v; the failed task must answer its write-ahead at once", err)
	}
	h.kafka.mu.Lock()
	after := len(h.kafka.records)
	h.kafka.mu.Unlock()
	if after != before {
		t.Errorf("%d records produced from a failed task's cache", after-before)
	}
	if n := len(h.offsets.commits()); n != 0 {
		t.Errorf("offsets committed for a failed task: %v", h.offsets.commits())
	}
}

// TestAStatelessTasksCommitWaitsForItsOutputsOnly: a task with no stores
// has no changelog to wait for. Its commit waits until its outputs are
// acknowledged, then commits the offset after its last processed record.
func TestAStatelessTasksCommitWaitsForItsOutputsOnly(t *testing.T) {
	h := newHarness(t, nil)
	topo := New(harnessApp)
	out := NewOutput(topo, harnessOutput, codec.String(), codec.String())
	NewInput(topo, harnessInput, codec.String(), codec.String(), func(ctx *Context, k, v string) error {
		return out.Emit(ctx, k, v)
	})
	h.env.topo = topo
	h.kafka.hang = make(chan struct{})
	h.start(0)
	tk := h.feed(0, 0, "k", "a", "b")
	h.waitProcessed(tk, 2)
	if tk.st != nil {
		t.Fatal("a stateless task has stores")
	}
	ctx, cancel := context.WithTimeout(h.ctx, 50*time.Millisecond)
	defer cancel()
	if err := h.c.commit(ctx, []*task{tk}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("commit = %v; want it to wait for the unacknowledged outputs", err)
	}
	if n := len(h.offsets.commits()); n != 0 {
		t.Fatalf("offsets committed before the outputs were acknowledged: %v", h.offsets.commits())
	}
	close(h.kafka.hang)
	if err := h.c.commit(h.ctx, []*task{tk}); err != nil {
		t.Fatal(err)
	}
	if got := h.offsets.committed(0); got != 2 {
		t.Errorf("committed offset %d, want 2", got)
	}
}
