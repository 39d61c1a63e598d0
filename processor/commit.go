package processor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The commit path at-least-once (docs/design.md §7). Each task in turn
// pauses between two records for its cut and goes on. The cut writes the
// record cache through, freezes the stores' write buffers and takes the
// offsets after the last processed records. The commit then waits until
// the producer has acknowledged every record produced before the cut:
// changelog records, outputs and dead letters. It writes each task's frozen
// writes with their checkpoints in one LevelDB batch per store, and commits
// the offsets it took. A crash between any two steps loses nothing: what
// was processed after the last commit is processed again. A task pauses
// only for its own cut, so the producer's round trips and the LevelDB
// writes never hold it, and latest reads stay fresh.
//
// commits holds what that needs, explicitly: the producer, the
// committer, and the first failed produce of an output or dead letter.
// The session's commit loop, the rebalance path and the unit tests in
// commit_test.go drive it. Exactly-once commits are transactions that span
// every task, and hold them all (txn.go).
type commits struct {
	prod    producer
	offsets committer
	prodErr *firstError // outputs' and dead letters' (the stores track their own)
	ctx     context.Context
	log     *slog.Logger
	met     *metrics
	phase   func(what string) // what the commit waits for, for a stuck shutdown's log

	// turn is held by the exactly-once commit in progress (a transaction
	// spans every task): one at a time. An at-least-once commit holds its
	// tasks' commit locks instead (lockTasks), so that commits of other
	// tasks, a moved task's prompt one, run beside it.
	turn ctxMutex

	// mu guards aborts and stopped: the cancels of the background commits
	// in progress. A lost partition and a shutdown abort them. A commit
	// flushing to unreachable brokers holds its tasks' locks, and the group
	// callback that drops those tasks must not wait for brokers that may
	// never come back. The poll loop, and so the shutdown, waits for it.
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
// offsets (above). A task whose cut or store write fails is stopped and
// its offsets are not committed; a failed output or dead letter commits
// nothing.
func (c *commits) commit(ctx context.Context, tasks []*task) error {
	return c.commitTasks(ctx, tasks, true)
}

// commitPromptly is commit without the record caches written through ahead
// of the cuts. The cut writes a task's whole cache and pauses it for
// longer, but the commit does not wait up to aheadWait for the tasks to get
// to it. A moved task's first commit is one: its latency is the failover's.
func (c *commits) commitPromptly(ctx context.Context, tasks []*task) error {
	return c.commitTasks(ctx, tasks, false)
}

func (c *commits) commitTasks(ctx context.Context, tasks []*task, ahead bool) error {
	if c.eos != nil {
		return c.commitTransaction(ctx, tasks)
	}
	if len(tasks) == 0 {
		return nil
	}
	c.phase(fmt.Sprintf("a commit of tasks %v to finish an earlier commit of them", ids(tasks)))
	unlock, err := lockTasks(ctx, tasks)
	if err != nil {
		return err
	}
	defer unlock()
	start := time.Now()
	// One deadline for the whole commit's write-ahead (writeCacheAhead).
	aheadCtx := ctx
	if ahead && len(tasks) > 0 {
		var cancel context.CancelFunc
		aheadCtx, cancel = context.WithTimeout(ctx, aheadWait(tasks[0].env.opts.CommitInterval))
		defer cancel()
	}
	cuts := make([]*taskCut, 0, len(tasks))
	for _, t := range tasks {
		c.phase(fmt.Sprintf("a commit to cut task %d (finishing its record)", t.id))
		if ahead {
			if err := c.writeCacheAhead(ctx, aheadCtx, t); err != nil {
				return err
			}
		}
		var ct *taskCut
		if err := c.paused(ctx, t, func() { ct = t.cut() }); err != nil {
			return err
		}
		if ct != nil {
			cuts = append(cuts, ct)
		}
	}
	c.phase(fmt.Sprintf("a commit of tasks %v: the producer to acknowledge their records (changelog, outputs, dead letters)", ids(tasks)))
	waited := time.Now()
	for _, ct := range cuts {
		if err := ct.t.waitCut(ctx, ct.epoch); err != nil {
			if ctx.Err() != nil {
				c.met.commitFailures.Inc()
				return err
			}
			ct.err = err // a failed changelog produce, or the task closed
		}
	}
	if err := c.prodErr.get(); err != nil {
		c.met.commitFailures.Inc()
		return err
	}
	c.log.Debug("producer acknowledged the commit's records", "took", time.Since(waited))
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	var committing []*task
	for _, ct := range cuts {
		err := ct.err
		if err == nil {
			err = ct.t.writeStores()
		}
		if err != nil {
			c.met.commitFailures.Inc()
			ct.t.setErr(fmt.Errorf("task %d: commit stores: %w", ct.t.id, err))
			continue
		}
		for topic, eo := range ct.offsets {
			if offsets[topic] == nil {
				offsets[topic] = make(map[int32]kgo.EpochOffset)
			}
			offsets[topic][ct.t.id] = eo
		}
		committing = append(committing, ct.t)
	}
	if len(offsets) == 0 {
		return nil
	}
	c.phase(fmt.Sprintf("a commit of tasks %v to commit their offsets", ids(committing)))
	if err := c.offsets.CommitOffsets(ctx, offsets); err != nil {
		c.met.commitFailures.Inc()
		return &offsetCommitError{err}
	}
	// committed is read and written by the commits of its task, one at a
	// time (the task's commitMu).
	for _, t := range committing {
		for topic, m := range offsets {
			if eo, ok := m[t.id]; ok {
				t.setCommitted(topic, eo.Offset)
			}
		}
	}
	c.met.commitLatency.Observe(time.Since(start).Seconds())
	c.log.Debug("committed", "tasks", len(committing), "took", time.Since(start))
	return nil
}

// cutChunk is how many record cache entries a commit writes through per
// pause of a task before its cut: a fraction of a millisecond of work.
const cutChunk = 256

// writeCacheAhead has t write its record cache through ahead of its cut,
// cutChunk entries between two of its batches (task.writeAhead). It waits
// until at most a chunk is left for the cut. In chunks the task processes
// records between them, where one burst at the commit would hold the task
// for the whole cache. The rounds are bounded to twice the chunks the cache
// held at the start, so a task that adds keys as fast as the chunks go
// cannot keep the commit chasing it.
//
// The tasks of a commit write ahead in turn, each just before its cut, so
// that an instance's tasks never all write through at once. They share one
// deadline, ahead: aheadWait from the commit's start. A task that does not
// get to it, such as a handler retrying or a table task waiting for its
// tables, holds the commit at most that long in all. The tasks after the
// deadline are not asked, and their cuts write their caches whole. A
// deadline per task would let a commit of n tasks take n times aheadWait.
func (c *commits) writeCacheAhead(ctx, ahead context.Context, t *task) error {
	if t.cache == nil || !t.running.Load() || ahead.Err() != nil {
		return nil
	}
	n := t.cache.entries()
	if n <= cutChunk {
		return nil // the cut writes it through
	}
	r := &cacheAskRequest{rounds: 2 * (n / cutChunk), done: make(chan struct{})}
	t.cacheAsk.Store(r)
	defer t.cacheAsk.CompareAndSwap(r, nil)
	select {
	case t.cacheWake <- struct{}{}:
	default:
	}
	select {
	case <-r.done:
	case <-t.done: // stopped (a revoke commits it after): the cut writes it whole, no record waits
	case <-ahead.Done():
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("waiting for task %d to write its record cache through: %w", t.id, err)
		}
	}
	return nil
}

// aheadWait bounds writeCacheAhead's wait for a task: the commit interval,
// within [100 ms, 5 s].
func aheadWait(interval time.Duration) time.Duration {
	return min(max(interval, 100*time.Millisecond), 5*time.Second)
}

// paused runs fn with t paused between two records (its lock held),
// giving up when ctx ends first; the pause is measured.
func (c *commits) paused(ctx context.Context, t *task, fn func()) error {
	if err := t.mu.LockContext(ctx); err != nil {
		return fmt.Errorf("waiting for task %d to finish its record: %w", t.id, err)
	}
	held := time.Now()
	fn()
	t.mu.Unlock()
	c.met.commitPause.Observe(time.Since(held).Seconds())
	return nil
}

// lockTasks takes the commit locks of tasks (task.commitMu) in id order,
// so that two commits of overlapping tasks never wait for each other in a
// cycle, and returns what releases them.
func lockTasks(ctx context.Context, tasks []*task) (unlock func(), err error) {
	sorted := slices.SortedFunc(slices.Values(tasks), func(a, b *task) int { return cmp.Compare(a.id, b.id) })
	for i, t := range sorted {
		if err := t.commitMu.LockContext(ctx); err != nil {
			for _, held := range sorted[:i] {
				held.commitMu.Unlock()
			}
			return nil, fmt.Errorf("waiting for an earlier commit of task %d: %w", t.id, err)
		}
	}
	return func() {
		for _, t := range sorted {
			t.commitMu.Unlock()
		}
	}, nil
}

// background commits tasks like commit (promptly: like commitPromptly),
// abortably: see mu.
func (c *commits) background(tasks []*task, promptly bool) error {
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
	return c.commitTasks(ctx, tasks, !promptly)
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
