package processor

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A task's part in an at-least-once commit (commit.go): what the commit
// does with the task paused between two records (writeCacheChunk, cut),
// and what it waits for once the task goes on (waitCut).

// taskCut is one task's part of a commit: the epoch of its outputs and
// dead letters to wait for, and the offsets after its last records
// processed before the cut.
type taskCut struct {
	t       *task
	epoch   int
	offsets map[string]kgo.EpochOffset
	err     error // waiting for its stores failed: not committed
}

// committable reports whether the task has work a commit may take: started,
// healthy, its stores open. The caller holds the lock and closeMu.
func (t *task) committable() bool {
	return t.activated && !t.closed.Load() && t.getErr() == nil
}

// writeCacheChunk writes at most n entries of the record cache through
// ahead of the cut and returns how many are left (0 when the task has
// nothing to commit). The task is paused; a failed write-through stops it.
func (t *task) writeCacheChunk(n int) (left int) {
	t.closeMu.RLock()
	defer t.closeMu.RUnlock()
	if !t.committable() {
		return 0
	}
	left, err := t.cache.drainSome(n, t.writeThrough)
	if err != nil {
		t.setErr(fmt.Errorf("task %d: flush the record cache: %w", t.id, err))
		return 0
	}
	return left
}

// cacheAskRequest is a commit's request that the task write its record
// cache through ahead of the cut (commits.writeCacheAhead). The task writes
// one chunk between two batches, or chunk after chunk while no batch
// waits. It closes done when at most a chunk is left or rounds run out.
type cacheAskRequest struct {
	rounds int // chunks the task may still write for it: the task goroutine's
	done   chan struct{}
}

// writeAhead writes a chunk of the record cache through for the commit's
// request, when there is one, and reports whether the request wants more.
// The task goroutine calls it between batches, so each of the commit's
// pauses of the task is one chunk and the task's records get their turn
// between them. A commit that took the task's lock for each chunk would
// get it back after one record, since the lock goes to a waiter at every
// release, and the task would stand still for the whole write-through.
func (t *task) writeAhead() bool {
	r := t.cacheAsk.Load()
	if r == nil {
		return false
	}
	t.mu.Lock()
	held := time.Now()
	left := t.writeCacheChunk(cutChunk)
	t.mu.Unlock()
	t.env.met.commitPause.Observe(time.Since(held).Seconds())
	r.rounds--
	if left > cutChunk && r.rounds > 0 {
		return true
	}
	if t.cacheAsk.CompareAndSwap(r, nil) {
		close(r.done)
	}
	return false
}

// cut takes the task's part of a commit, the task paused between two
// records. It writes the record cache through, freezes the stores' writes
// (state.Task.Freeze), starts a new epoch for the outputs and takes the
// offsets after the last processed records. It returns nil when there is
// nothing to commit: the task is not started, failed or closed. A failure
// here stops the task.
func (t *task) cut() *taskCut {
	t.closeMu.RLock()
	defer t.closeMu.RUnlock()
	if !t.committable() {
		return nil
	}
	if err := t.flushCache(); err != nil {
		t.setErr(fmt.Errorf("task %d: flush the record cache: %w", t.id, err))
		return nil
	}
	if t.st != nil {
		if err := t.st.Freeze(); err != nil {
			t.setErr(fmt.Errorf("task %d: cut the stores' writes: %w", t.id, err))
			return nil
		}
	}
	ct := &taskCut{t: t, epoch: t.acks.cut()}
	for topic, eo := range t.next {
		if eo.Offset > t.committed[topic] {
			if ct.offsets == nil {
				ct.offsets = make(map[string]kgo.EpochOffset, len(t.next))
			}
			ct.offsets[topic] = eo
		}
	}
	return ct
}

// waitCut waits until the records produced before the cut of epoch are
// acknowledged: outputs and dead letters, and the stores' changelog
// records. The task runs on meanwhile.
func (t *task) waitCut(ctx context.Context, epoch int) error {
	if err := t.acks.wait(ctx, epoch); err != nil {
		return fmt.Errorf("task %d: waiting for its outputs to be acknowledged: %w", t.id, err)
	}
	if t.st == nil {
		return nil
	}
	if err := t.st.WaitFrozen(ctx); err != nil {
		return fmt.Errorf("task %d: %w", t.id, err)
	}
	return nil
}
