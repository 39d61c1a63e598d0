package processor

import (
	"context"
	"sync"
	"sync/atomic"
)

// ackEpochs counts a task's output and dead-letter records that the
// producer has not acknowledged yet, by commit epoch. So an at-least-once
// commit waits for the records of the work it commits, and not for those
// the task produces after its cut (commit.go). The producer's Flush would
// wait for every buffered record, and might not return while tasks
// produce on.
//
// A record joins the current epoch when it is produced (add, under the
// task's lock). A commit's cut moves the task to the other epoch (cut,
// under the lock) and waits for the old one to drain (wait, no lock). Two
// epochs are enough, since one commit of the task at a time cuts and waits
// (task.commitMu). A cut whose wait was abandoned leaves records in the
// epoch the next cut but one returns to. That wait then covers them too,
// which only makes it wait longer.
//
// The counts only grow. The task counts what it produced (sent, in its own
// memory), the promises what came back (done, on a cache line of its own).
// A cut's target is what the epoch had sent by then. Keeping the two sides
// on separate cache lines spares every record's add and acknowledgement a
// cache-line transfer between the task's core and the producer's.
type ackEpochs struct {
	cur  int      // the epoch records join: the task's lock guards it
	sent [2]int64 // records produced per epoch, ever: the task's lock guards it

	_    [64]byte // done apart from the task's fields
	done [2]atomic.Int64
	// want is each epoch's target: sent when it was last cut.
	want [2]atomic.Int64
	_    [64]byte

	// mu guards waiting, the channel a wait for each epoch blocks on: the
	// promise that brings done to want closes it.
	mu      sync.Mutex
	waiting [2]chan struct{}
}

// add counts a record produced now and returns its epoch, for its promise.
func (a *ackEpochs) add() int {
	a.sent[a.cur]++
	return a.cur
}

// acked counts the acknowledgement (or failure) of a record of epoch e.
func (a *ackEpochs) acked(e int) {
	// The counts grow by one, so exactly one acknowledgement reaches a
	// target. done is added before want is read, as cut stores want before
	// wait reads done: one of the two sees the other.
	if a.done[e].Add(1) != a.want[e].Load() {
		return
	}
	a.mu.Lock()
	if ch := a.waiting[e]; ch != nil && a.drained(e) {
		close(ch)
		a.waiting[e] = nil
	}
	a.mu.Unlock()
}

// drained says every record of epoch e up to its last cut is acknowledged.
func (a *ackEpochs) drained(e int) bool { return a.done[e].Load() >= a.want[e].Load() }

// cut starts a new epoch and returns the one it ends.
func (a *ackEpochs) cut() int {
	old := a.cur
	a.want[old].Store(a.sent[old])
	a.cur ^= 1
	return old
}

// wait returns when every record of epoch e produced before its cut is
// acknowledged, or ctx is done.
func (a *ackEpochs) wait(ctx context.Context, e int) error {
	a.mu.Lock()
	if a.drained(e) {
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
