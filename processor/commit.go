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
// The pause is as short as that allows, because a paused task is a stale
// one for its readers (end-to-end freshness, bench/freshness.md). Most of a
// commit's work under at-least-once was writing the record caches through
// (a store write and a produce per merged entry, a commit interval's worth)
// with every task paused: 40-240 ms a commit with four tasks at 13,000
// records/s. So first each task's cache is written through a chunk at a
// time, each chunk under that task's lock alone (predrain): the others go
// on processing, and it goes on between chunks; and what they wrote is sent
// to the brokers (a flush bounded by preflush). Then every task is paused,
// what its cache took since is written through (a few milliseconds' worth),
// the producer flushed; and each task goes on as soon as its own stores are
// committed and its offsets taken, not after every task's. Nothing changes
// for the contract: a task's checkpoint is written while it is paused after
// the flush, with exactly the data the flush acknowledged, and its offsets
// are those of the records that data covers.
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

	// preflush bounds the flush of what the record caches wrote through
	// before the tasks pause (0: none); set once, before the first commit.
	preflush time.Duration
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
	wrote, err := c.predrain(ctx, tasks)
	if err != nil {
		return err
	}
	if wrote > 0 && c.preflush > 0 {
		// Send what the caches wrote through while the tasks go on: the
		// flush in the pause then waits for little more than the
		// records of the last few milliseconds. Bounded: tasks that
		// produce as they process (no cache, or evicting) keep the
		// producer's buffer from ever emptying; the paused flush does
		// the rest either way.
		c.phase(fmt.Sprintf("a commit of tasks %v to send their record caches before pausing them", ids(tasks)))
		pctx, cancel := context.WithTimeout(ctx, c.preflush)
		_ = c.prod.Flush(pctx) // a failed produce fails the paused flush's check
		cancel()
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
	}
	for i, t := range tasks {
		c.phase(fmt.Sprintf("a commit to lock task %d (finishing its record)", t.id))
		if err := t.mu.LockContext(ctx); err != nil {
			for _, u := range tasks[:i] {
				u.mu.Unlock()
			}
			return fmt.Errorf("waiting for task %d to finish its record: %w", t.id, err)
		}
	}
	// tasks[released:] are still locked; each task is released once its
	// stores are committed and its offsets taken.
	released := 0
	defer func() {
		for _, t := range tasks[released:] {
			t.mu.Unlock()
		}
	}()
	for _, t := range tasks {
		t.flushCacheLocked()
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
		if t.activated && t.getErr() == nil {
			c.phase(fmt.Sprintf("a commit to write the stores of task %d", t.id))
			if err := t.commitStores(); err != nil {
				c.met.commitFailures.Inc()
				t.setErr(fmt.Errorf("task %d: commit stores: %w", t.id, err))
			} else {
				addProcessed(offsets, t)
				committing = append(committing, t)
			}
		}
		released++
		t.mu.Unlock()
	}
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

// predrainChunk is how many record-cache entries a commit writes through
// per hold of a task's lock before every task pauses (predrain): a few
// milliseconds of the task's time at most.
const predrainChunk = 256

// predrain writes each task's record cache through, predrainChunk entries
// per hold of that task's lock, while the other tasks (and this one,
// between chunks) go on processing. It writes at most the entries each
// cache held when it began, so that it ends while records keep coming; the
// commit then writes the rest with every task paused.
func (c *commits) predrain(ctx context.Context, tasks []*task) (wrote int, err error) {
	for _, t := range tasks {
		if t.cache == nil {
			continue
		}
		left := -1 // the entries to write, known under the lock
		for left != 0 {
			c.phase(fmt.Sprintf("a commit to lock task %d (to write its record cache through)", t.id))
			if err := t.mu.LockContext(ctx); err != nil {
				return wrote, fmt.Errorf("waiting for task %d to finish its record: %w", t.id, err)
			}
			if left < 0 {
				left = t.cache.entries()
			}
			n, ok := t.drainCacheChunk(min(left, predrainChunk))
			t.mu.Unlock()
			left -= n
			wrote += n
			if !ok || n == 0 {
				break
			}
		}
	}
	return wrote, nil
}

// flushCacheLocked flushes the record cache of an active, healthy task for
// a commit, which holds the task's lock; a failure stops the task.
func (t *task) flushCacheLocked() {
	t.closeMu.RLock()
	defer t.closeMu.RUnlock()
	if t.activated && !t.closed.Load() && t.getErr() == nil {
		if err := t.flushCache(); err != nil {
			t.setErr(fmt.Errorf("task %d: flush the record cache: %w", t.id, err))
		}
	}
}

// drainCacheChunk writes through at most n of the record cache's oldest
// entries, for a commit holding the task's lock (commits.predrain), and
// returns how many; ok is false when the task cannot take writes (not
// active yet, closed, failed: the commit then leaves it to the paused
// flush, which skips it too).
func (t *task) drainCacheChunk(n int) (written int, ok bool) {
	t.closeMu.RLock()
	defer t.closeMu.RUnlock()
	if t.cache == nil || !t.activated || t.closed.Load() || t.getErr() != nil {
		return 0, false
	}
	written, err := t.cache.drainOldest(n, t.writeThrough)
	if err != nil {
		t.setErr(fmt.Errorf("task %d: flush the record cache: %w", t.id, err))
		return written, false
	}
	return written, true
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

// maxPreflush is the longest a commit flushes the record caches' writes
// before pausing the tasks (commits.preflush): a quarter of the commit
// interval, at most this.
const maxPreflush = 250 * time.Millisecond
