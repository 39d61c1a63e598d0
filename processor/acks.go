package processor

import (
	"context"
	"sync"
	"sync/atomic"
)

// ackEpochs counts a task's output and dead-letter records that the
// producer has not acknowledged yet, by commit epoch, so that an
// at-least-once commit waits for the records of the work it commits and
// not for those the task produces after its cut (commit.go): unlike the
// producer's Flush, which waits for every buffered record and, with tasks
// producing on, might not return while the load lasts.
//
// A record joins the current epoch when it is produced (add, under the
// task's lock); a commit's cut moves the task to the other epoch (cut,
// under the lock) and waits for the old one to drain (wait, no lock). Two
// epochs are enough: one commit at a time cuts and waits. A cut whose wait
// was abandoned leaves records in the epoch the next cut but one returns
// to: its wait then covers them too, which only makes it wait longer.
type ackEpochs struct {
	cur int // the epoch records join: the task's lock guards it
	n   [2]atomic.Int64
	// mu guards waiting, the channel a wait for each epoch blocks on: a
	// promise that drains the epoch closes it.
	mu      sync.Mutex
	waiting [2]chan struct{}
}

// add counts a record produced now and returns its epoch, for its promise.
func (a *ackEpochs) add() int {
	a.n[a.cur].Add(1)
	return a.cur
}

// acked counts the acknowledgement (or failure) of a record of epoch e.
func (a *ackEpochs) acked(e int) {
	if a.n[e].Add(-1) != 0 {
		return
	}
	a.mu.Lock()
	if ch := a.waiting[e]; ch != nil && a.n[e].Load() == 0 {
		close(ch)
		a.waiting[e] = nil
	}
	a.mu.Unlock()
}

// cut starts a new epoch and returns the one it ends.
func (a *ackEpochs) cut() int {
	old := a.cur
	a.cur ^= 1
	return old
}

// wait returns when every record of epoch e is acknowledged, or ctx is
// done.
func (a *ackEpochs) wait(ctx context.Context, e int) error {
	a.mu.Lock()
	if a.n[e].Load() == 0 {
		a.mu.Unlock()
		return nil
	}
	ch := a.waiting[e]
	if ch == nil {
		ch = make(chan struct{})
		a.waiting[e] = ch
	}
	a.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
