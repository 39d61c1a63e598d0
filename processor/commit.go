package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The commit path (design §7): tasks pause between records, the producer
// is flushed (changelog records, outputs and dead letters acknowledged),
// each task's stores write their buffers and checkpoints in one LevelDB
// batch, and the offsets after the last processed records are committed.
// A crash between any two steps loses nothing; what was processed after the
// last commit is processed again.
//
// commits holds what that needs, explicitly: the producer to flush, the
// committer, and the first failed produce of an output or dead letter.
// The session's commit loop, the rebalance path and the unit tests in
// commit_test.go drive it.
type commits struct {
	prod    producer
	offsets committer
	prodErr *firstError // outputs' and dead letters' (the stores track their own)
	ctx     context.Context
	log     *slog.Logger
	met     *metrics
	phase   func(what string) // what the commit waits for, for a stuck shutdown's log

	// turn is held by the commit in progress: one at a time, so that two
	// never interleave their flushes and offset commits.
	turn ctxMutex

	// mu guards aborts and stopped: the cancels of the background commits
	// in progress. A lost partition and a shutdown abort them: a commit
	// flushing to unreachable brokers holds its tasks' locks, and the group
	// callback that drops those tasks (which the poll loop, and so the
	// shutdown, waits for) must not wait for brokers that may never come
	// back.
	mu      sync.Mutex
	aborts  map[*context.CancelFunc]struct{}
	stopped bool // shutting down: no new background commit starts

	// eos is set under exactly-once: commits are transactions (txn.go).
	eos *txnCommits
}

func newCommits(ctx context.Context, prod producer, offsets committer, log *slog.Logger, met *metrics, phase func(string)) *commits {
	return &commits{
		prod: prod, offsets: offsets, prodErr: new(firstError), ctx: ctx, log: log, met: met, phase: phase,
		turn:   make(ctxMutex, 1),
		aborts: make(map[*context.CancelFunc]struct{}),
	}
}

// offsetCommitError is a failed offset commit: the next commit retries it
// (typically a rebalance in progress).
type offsetCommitError struct{ err error }

func (e *offsetCommitError) Error() string { return "commit offsets: " + e.err.Error() }
func (e *offsetCommitError) Unwrap() error { return e.err }

// commit makes the processed work of tasks durable and commits their
// offsets: tasks pause between records, the producer is flushed, each
// task's stores write their buffers and checkpoints, and the offsets after
// the last processed records are committed. A task whose store write fails
// is stopped and its offsets are not committed; a failed produce or flush
// commits nothing.
func (c *commits) commit(ctx context.Context, tasks []*task) error {
	if c.eos != nil {
		return c.commitTransaction(ctx, tasks)
	}
	if len(tasks) == 0 {
		return nil
	}
	c.phase("a commit to finish the previous one")
	if err := c.turn.LockContext(ctx); err != nil {
		return fmt.Errorf("waiting for the previous commit: %w", err)
	}
	defer c.turn.Unlock()
	start := time.Now()
	for i, t := range tasks {
		c.phase(fmt.Sprintf("a commit to lock task %d (finishing its record)", t.id))
		if err := t.mu.LockContext(ctx); err != nil {
			for _, u := range tasks[:i] {
				u.mu.Unlock()
			}
			return fmt.Errorf("waiting for task %d to finish its record: %w", t.id, err)
		}
	}
	locked := true
	unlock := func() {
		if locked {
			for _, t := range tasks {
				t.mu.Unlock()
			}
			locked = false
		}
	}
	defer unlock()
	for _, t := range tasks {
		t.closeMu.RLock()
		if t.activated && !t.closed.Load() && t.getErr() == nil {
			if err := t.flushCache(); err != nil {
				t.setErr(fmt.Errorf("task %d: flush the record cache: %w", t.id, err))
			}
		}
		t.closeMu.RUnlock()
	}

	c.phase(fmt.Sprintf("a commit of tasks %v to flush the producer (changelog, outputs, dead letters)", ids(tasks)))
	if err := c.prod.Flush(ctx); err != nil {
		c.met.commitFailures.Inc()
		return fmt.Errorf("flush: %w", err)
	}
	if err := c.prodErr.get(); err != nil {
		c.met.commitFailures.Inc()
		return err
	}
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	var committing []*task
	for _, t := range tasks {
		if !t.activated || t.getErr() != nil {
			continue
		}
		if err := t.commitStores(); err != nil {
			c.met.commitFailures.Inc()
			t.setErr(fmt.Errorf("task %d: commit stores: %w", t.id, err))
			continue
		}
		addProcessed(offsets, t)
		committing = append(committing, t)
	}
	unlock()
	if len(offsets) == 0 {
		return nil
	}
	c.phase(fmt.Sprintf("a commit of tasks %v to commit their offsets", ids(committing)))
	if err := c.offsets.CommitOffsets(ctx, offsets); err != nil {
		c.met.commitFailures.Inc()
		return &offsetCommitError{err}
	}
	// committed is the task goroutine's only in the sense that commits
	// read and write it: one commit at a time (turn) makes it safe.
	for _, t := range committing {
		for topic, m := range offsets {
			if eo, ok := m[t.id]; ok {
				t.committed[topic] = eo.Offset
			}
		}
	}
	c.met.commitLatency.Observe(time.Since(start).Seconds())
	c.log.Debug("committed", "tasks", len(committing), "took", time.Since(start))
	return nil
}

// background commits tasks like commit, abortably: see mu.
func (c *commits) background(tasks []*task) error {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return context.Canceled
	}
	c.aborts[&cancel] = struct{}{}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.aborts, &cancel)
		c.mu.Unlock()
	}()
	return c.commit(ctx, tasks)
}

// abort cancels the background commits in progress; with stop, none starts
// any more.
func (c *commits) abort(stop bool) {
	if c.eos != nil && !stop {
		// A transaction cut short must be aborted, with every task's
		// work in it: let it finish instead (the revoke commits after it).
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if stop {
		c.stopped = true
	}
	for cancel := range c.aborts {
		(*cancel)()
	}
}

// promise is the callback of output and dead-letter records: the first
// failure fails every later commit of the session.
func (c *commits) promise(r *kgo.Record, err error) {
	if err != nil {
		c.prodErr.set(fmt.Errorf("produce to %s: %w", r.Topic, err))
	}
}

// firstError keeps the first error set; later ones are dropped. It needs
// no lock: the error is published once.
type firstError struct{ p atomic.Pointer[error] }

func (f *firstError) set(err error) bool { return f.p.CompareAndSwap(nil, &err) }

func (f *firstError) get() error {
	if p := f.p.Load(); p != nil {
		return *p
	}
	return nil
}

// ctxMutex is a mutex whose Lock can give up when a context ends: a commit
// must not wait forever for a task stuck on unreachable brokers.
type ctxMutex chan struct{}

func (m ctxMutex) Lock()   { m <- struct{}{} }
func (m ctxMutex) Unlock() { <-m }

func (m ctxMutex) LockContext(ctx context.Context) error {
	select {
	case m <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func ids(ts []*task) []int32 {
	out := make([]int32, len(ts))
	for i, t := range ts {
		out[i] = t.id
	}
	return out
}

// errorsAsOffsetCommit reports whether err is a failed offset commit, which
// the next commit retries.
func errorsAsOffsetCommit(err error) bool {
	var oce *offsetCommitError
	return errors.As(err, &oce)
}
