package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The exactly-once commit path (processing.guarantee=exactly_once_v2,
// docs/design.md §7). Each commit interval is one Kafka transaction of the
// instance's one transactional producer. It holds every task's changelog
// records, outputs and dead letters and, through TxnOffsetCommit, their
// input offsets. Local state follows the transaction. A task's store
// writes stay in its write buffer, where its handler's reads see them,
// until the transaction commits. Only then is each store's LevelDB batch
// written, with its checkpoint; an abort drops the buffers. After a crash
// the checkpoint, atomic with the data, and a read_committed restore of the
// changelog after it bring a store back exactly, with no wipe.
//
// The session's client is a plain kgo client with a transactional id and
// the group, and this file drives the transaction: Begin, Flush,
// AddOffsetsToTxn, TxnOffsetCommit at the tasks' processed watermarks
// (session's TxnCommitOffsets), and EndTxn. After an abort the tasks
// restart from their last commit, and the poll loop rewinds their
// partitions (rewind.go). franz-go's GroupTransactSession does not fit: it
// commits the offsets polled, not those processed, and its End cannot run
// from the revoke callback where our revoke commits.
//
// Fencing. The transactional id is stable per process id, so a restarted
// instance's InitProducerID (at its session's start) fences its
// predecessor and aborts its open transaction at once. A zombie (an
// instance paused past its session timeout, then resumed) keeps its own
// producer epoch: what fences it is KIP-447's group generation check on
// TxnOffsetCommit, which carries the member id and generation the
// instance last joined with. The group has moved on, so the broker
// answers ILLEGAL_GENERATION (or UNKNOWN_MEMBER_ID), and the zombie aborts
// its transaction: its records are never read by read_committed
// consumers, and its offsets never commit. A transaction it left open
// past the transaction timeout (10 s) is aborted by the coordinator, and
// its late EndTxn is refused (its epoch was bumped). The new owner's
// offset fetch waits for any such transaction to end (RequireStable).
//
// A revoke commits the open transaction with every task's work (they
// share it), as Kafka Streams does under exactly_once_v2; a loss aborts it
// and restarts the remaining tasks from their last commit.

// txnProducer is what the exactly-once commit needs of the instance's
// transactional client (the session's kgo client; a fake in the unit
// tests).
type txnProducer interface {
	BeginTransaction() error
	EndTransaction(ctx context.Context, commit kgo.TransactionEndTry) error
	AbortBufferedRecords(ctx context.Context) error
	// TxnCommitOffsets adds input offsets to the open transaction, under
	// the member's group generation (KIP-447).
	TxnCommitOffsets(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset) error
	// ProducedInTransaction reports whether a record was produced since
	// the transaction began.
	ProducedInTransaction() bool
}

// txnCommits is what commits need under exactly-once, beside what every
// commit needs.
type txnCommits struct {
	txn txnProducer
	// gate is the tasks' env.gate: a commit holds it exclusively.
	gate *sync.RWMutex
	// live returns the member's active tasks: the transaction spans them.
	live func() []*task
	// onAbort stops the tasks of an aborted transaction and has them
	// restarted from their last commit (the member's suspend).
	onAbort func([]*task)
	// abortTimeout bounds the abort of a transaction.
	abortTimeout time.Duration
	// pauseTimeout (shutdown.timeout.ms) bounds a commit's wait for every
	// task to finish its record: a handler stuck past it holds the gate,
	// and with it every task and every later commit (stuckHandlers).
	pauseTimeout time.Duration
}

// txnAbortedError is a transaction aborted for cause: its tasks restart
// from their last commit, and the session goes on.
type txnAbortedError struct{ cause error }

func (e *txnAbortedError) Error() string { return "transaction aborted: " + e.cause.Error() }
func (e *txnAbortedError) Unwrap() error { return e.cause }

// commitTransaction commits the open transaction with the work of every
// active task. asked are tasks a revoke already took out of the active
// ones. With every task paused between records, it flushes the producer,
// checks every changelog record, adds the processed watermarks to the
// transaction and commits it. Only then are each task's stores written
// with their checkpoints, and the next transaction begun. Anything failing
// before the commit aborts the transaction and returns a *txnAbortedError
// inside an *offsetCommitError: the session goes on, and the tasks restart
// from their last commit. A commit whose outcome is unknown returns another
// error, which ends the session.
func (c *commits) commitTransaction(ctx context.Context, asked []*task) error {
	c.phase("a commit to finish the previous one")
	if err := c.turn.LockContext(ctx); err != nil {
		return fmt.Errorf("waiting for the previous commit: %w", err)
	}
	defer c.turn.Unlock()
	tasks := spanning(asked, c.eos.live())
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, c.eos.pauseTimeout)
	release, err := c.lockAll(pctx, tasks)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			return c.stuckHandlers(tasks, err)
		}
		return err
	}
	aborted, committed, err := c.transact(ctx, tasks)
	release()
	if aborted != nil {
		c.eos.onAbort(aborted)
	}
	if err == nil && committed {
		c.met.commitLatency.Observe(time.Since(start).Seconds())
		c.log.Debug("transaction committed", "tasks", len(tasks), "took", time.Since(start))
	}
	return err
}

// abortOpen aborts the open transaction and restarts live (the tasks
// sharing it) from their last commit: a loss dropped tasks whose records
// are in it. Nothing to do under at-least-once. An error other than a
// *txnAbortedError means the abort failed: the session must end.
func (c *commits) abortOpen(live []*task) error {
	if c.eos == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.eos.abortTimeout)
	defer cancel()
	if err := c.turn.LockContext(ctx); err != nil {
		return fmt.Errorf("abort the transaction: waiting for the commit in progress: %w", err)
	}
	defer c.turn.Unlock()
	release, err := c.lockAll(ctx, live)
	if err != nil {
		return fmt.Errorf("abort the transaction: %w", err)
	}
	aborted, err := c.abortTransaction(live, errors.New("partitions lost"))
	release()
	if aborted != nil {
		c.eos.onAbort(aborted)
	}
	return err
}

// stuckHandlers is a commit that could not pause the tasks within
// pauseTimeout: a handler has not returned from its record, because it
// ignores its context, say. Its records since the last commit are in the
// open transaction, and it may still write more into it. So the
// transaction can be neither committed nor aborted while it runs, and
// every other task waits behind the gate. The tasks still in a record fail
// (logged, counted in rackstream_task_failures_total, not ready). The
// returned error ends the session, and the instance leaves the group. The
// next session's producer id aborts the open transaction, and its tasks
// restart from their last commit.
func (c *commits) stuckHandlers(tasks []*task, err error) error {
	var stuck []int32
	for _, t := range tasks {
		if len(t.mu) > 0 { // held: in a record (or a revoke's drop)
			stuck = append(stuck, t.id)
			t.setErr(fmt.Errorf("task %d: its handler has not returned within shutdown.timeout.ms (%s) while a transaction waited to commit; the session restarts without it", t.id, c.eos.pauseTimeout))
		}
	}
	c.met.commitFailures.Inc()
	return fmt.Errorf("a transaction could not pause tasks %v within shutdown.timeout.ms (%s), handlers stuck in tasks %v; the session restarts and the open transaction is aborted: %w",
		ids(tasks), c.eos.pauseTimeout, stuck, err)
}

// lockAll pauses every task between records: the gate (no record starts
// on a task the caller does not know of yet) and each task's lock. The
// returned release undoes both.
func (c *commits) lockAll(ctx context.Context, tasks []*task) (release func(), err error) {
	c.phase("a transaction's commit to pause every task between records")
	if err := lockGate(ctx, c.eos.gate); err != nil {
		return nil, fmt.Errorf("waiting for the tasks to finish their records: %w", err)
	}
	for i, t := range tasks {
		if err := t.mu.LockContext(ctx); err != nil {
			for _, u := range tasks[:i] {
				u.mu.Unlock()
			}
			c.eos.gate.Unlock()
			return nil, fmt.Errorf("waiting for task %d to finish its record: %w", t.id, err)
		}
	}
	held := time.Now()
	return func() {
		for _, t := range tasks {
			t.mu.Unlock()
		}
		c.eos.gate.Unlock()
		paused := time.Since(held).Seconds()
		for range tasks {
			c.met.commitPause.Observe(paused)
		}
	}, nil
}

// transact is commitTransaction's work with every task locked. It returns
// the tasks to restart after an abort, and whether a transaction committed.
func (c *commits) transact(ctx context.Context, tasks []*task) (aborted []*task, committed bool, err error) {
	var cause error
	for _, t := range tasks {
		if !t.activated {
			continue
		}
		if err := t.getErr(); err != nil {
			// Its records since the last commit are in the transaction,
			// and its offsets will not be: they must not commit.
			cause = fmt.Errorf("task %d failed: %w", t.id, err)
			continue
		}
		t.closeMu.RLock()
		if !t.closed.Load() {
			if err := t.flushCache(); err != nil {
				cause = fmt.Errorf("task %d: flush the record cache: %w", t.id, err)
			}
		}
		t.closeMu.RUnlock()
	}
	offsets, committing := processedOffsets(tasks)
	if len(offsets) == 0 && cause == nil {
		return nil, false, nil // nothing processed: the transaction is empty
	}
	c.phase(fmt.Sprintf("a transaction of tasks %v to flush the producer (changelog, outputs, dead letters)", ids(tasks)))
	if cause == nil {
		if err := c.prod.Flush(ctx); err != nil {
			cause = fmt.Errorf("flush: %w", err)
		}
	}
	if cause == nil {
		cause = c.prodErr.get()
	}
	for _, t := range committing {
		if cause == nil && t.st != nil {
			cause = t.st.Unacknowledged()
		}
	}
	produced := c.eos.txn.ProducedInTransaction()
	if cause == nil && produced {
		c.phase(fmt.Sprintf("a transaction of tasks %v to add their offsets (TxnOffsetCommit)", ids(committing)))
		if err := c.eos.txn.TxnCommitOffsets(ctx, offsets); err != nil {
			cause = fmt.Errorf("commit offsets in the transaction: %w", err)
		}
	}
	if cause != nil {
		aborted, err := c.abortTransaction(tasks, cause)
		return aborted, false, err
	}
	c.phase(fmt.Sprintf("a transaction of tasks %v to commit (EndTxn)", ids(committing)))
	if err := c.eos.txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		if errors.Is(err, kerr.OperationNotAttempted) || errors.Is(err, kerr.TransactionAbortable) {
			aborted, err := c.abortTransaction(tasks, fmt.Errorf("end the transaction: %w", err))
			return aborted, false, err
		}
		// The outcome is unknown: neither the stores nor the offsets can
		// be trusted here. The session ends; the next one restores from
		// the changelog and fetches from the offsets Kafka has.
		deactivate(tasks)
		c.met.commitFailures.Inc()
		return nil, false, fmt.Errorf("end the transaction (outcome unknown; the session restarts from what Kafka committed): %w", err)
	}
	if !produced {
		// Nothing produced, so no transaction in Kafka and nothing the
		// offsets must be atomic with: a plain commit, which is checked
		// against the group generation too.
		if err := c.offsets.CommitOffsets(ctx, offsets); err != nil {
			c.met.commitFailures.Inc()
			return nil, false, &offsetCommitError{err}
		}
	}
	for _, t := range committing {
		if err := t.commitStores(); err != nil {
			// The transaction is committed: the changelog has the data,
			// and the next open restores it. The task stops meanwhile.
			c.met.commitFailures.Inc()
			t.setErr(fmt.Errorf("task %d: commit stores: %w", t.id, err))
		}
		for topic, m := range offsets {
			if eo, ok := m[t.id]; ok {
				t.setCommitted(topic, eo.Offset)
			}
		}
	}
	if err := c.eos.txn.BeginTransaction(); err != nil {
		deactivate(tasks)
		return nil, true, fmt.Errorf("begin the next transaction: %w", err)
	}
	return nil, true, nil
}

// abortTransaction aborts the open transaction for cause, drops the write
// buffers of tasks and stops them (no record of theirs may reach the next
// transaction), and begins the next transaction. It returns the tasks to
// restart from their last commit (those not failed) and a
// *txnAbortedError in an *offsetCommitError; or, when the abort itself
// failed, an error that ends the session.
func (c *commits) abortTransaction(tasks []*task, cause error) ([]*task, error) {
	c.phase(fmt.Sprintf("aborting the transaction of tasks %v", ids(tasks)))
	ctx, cancel := context.WithTimeout(context.Background(), c.eos.abortTimeout)
	defer cancel()
	err := c.eos.txn.AbortBufferedRecords(ctx)
	if err == nil {
		err = c.eos.txn.EndTransaction(ctx, kgo.TryAbort)
	}
	if err == nil {
		err = c.eos.txn.BeginTransaction()
	}
	var restart []*task
	for _, t := range tasks {
		if t.activated && t.getErr() == nil {
			restart = append(restart, t)
		}
	}
	deactivate(tasks)
	c.prodErr.reset()
	c.met.commitFailures.Inc()
	if err != nil {
		return nil, fmt.Errorf("abort the transaction (after: %v): %w", cause, err)
	}
	c.log.Warn("transaction aborted; its tasks restart from their last commit", "cause", cause, "tasks", ids(restart))
	return restart, &offsetCommitError{&txnAbortedError{cause}}
}

// stoppedInTransaction refuses, under exactly-once, the writes of a record
// whose task was stopped while its handler ran: by a revoke, a loss, an
// abort or a shutdown. They would land in whatever transaction is open
// then, which commits without this task's offsets. The record counts as
// not processed, and the error wraps the task's context error. The task's
// next owner, or its restart, processes it again. The task's lock is held,
// as by deactivate's cancel, so the check and a commit never interleave.
func (t *task) stoppedInTransaction() error {
	if t.env.gate == nil || t.ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("task %d stopped during its record: its writes are dropped, not added to the open transaction: %w", t.id, t.ctx.Err())
}

// deactivate takes tasks (locked) out of every later commit: their
// uncommitted writes are dropped and they stop before their next record.
func deactivate(tasks []*task) {
	for _, t := range tasks {
		if !t.activated {
			continue
		}
		t.activated = false
		if t.st != nil && !t.closed.Load() {
			t.st.Abort()
		}
		t.cancel()
	}
}

// processedOffsets returns the input offsets after the last processed
// records of the healthy active tasks not committed yet, and those tasks.
// The tasks are locked.
func processedOffsets(tasks []*task) (map[string]map[int32]kgo.EpochOffset, []*task) {
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	var committing []*task
	for _, t := range tasks {
		if !t.activated || t.getErr() != nil {
			continue
		}
		addProcessed(offsets, t)
		committing = append(committing, t)
	}
	return offsets, committing
}

// addProcessed adds to offsets the offsets after task t's (locked) last
// processed records that are not committed yet.
func addProcessed(offsets map[string]map[int32]kgo.EpochOffset, t *task) {
	for topic, eo := range t.next {
		if eo.Offset > t.committed[topic] {
			if offsets[topic] == nil {
				offsets[topic] = make(map[int32]kgo.EpochOffset)
			}
			offsets[topic][t.id] = eo
		}
	}
}

// spanning returns asked and the tasks of live not among them, in id
// order of each.
func spanning(asked, live []*task) []*task {
	out := append([]*task(nil), asked...)
	for _, t := range live {
		dup := false
		for _, a := range asked {
			if a == t {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, t)
		}
	}
	return out
}

// lockGate takes g exclusively, giving up when ctx ends (a handler stuck
// in its record holds it shared); the lock is then released as soon as it
// is had.
func lockGate(ctx context.Context, g *sync.RWMutex) error {
	if g.TryLock() {
		return nil
	}
	locked := make(chan struct{})
	go func() {
		g.Lock()
		close(locked)
	}()
	select {
	case <-locked:
		return nil
	case <-ctx.Done():
		go func() {
			<-locked
			g.Unlock()
		}()
		return ctx.Err()
	}
}

// reset forgets the error kept: after an aborted transaction, the failed
// records are gone with it.
func (f *firstError) reset() { f.p.Store(nil) }
