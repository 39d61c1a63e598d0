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

	"github.com/rackstream/rackstream/internal/recarena"
	"github.com/rackstream/rackstream/state"
)

// taskEnv is all a task sees of the runtime around it: its topology and
// settings, its stores, its producer, the fetch control of its
// partitions, a clock, and hooks into its session's bookkeeping. It is
// built once per session, shared by the session's tasks, and never
// changed. A task reaches nothing else, no session and no Kafka client, so
// the unit tests of commit.go and rebalance.go build one from fakes.
type taskEnv struct {
	topo *Topology
	opts *Options
	log  *slog.Logger
	met  *metrics
	// tasks is the task count: the record cache is divided among them.
	tasks int32
	// ctx is the session's: the tasks' contexts and produces derive from it.
	ctx context.Context
	// globals are the runtime's global tables, read by any task.
	globals *globals

	prod    producer
	promise func(*kgo.Record, error) // of outputs and dead letters
	fetch   fetcher
	// openStores opens (or promotes) the stores of a task that starts: a
	// standby held here (held, may be nil) catches up its lag, anything
	// else is opened and restored; either way they end active with prod.
	openStores func(ctx context.Context, id int32, held *state.Task) (*state.Task, error)
	now        func() time.Time

	// taken is called with the records that leave a task's queue: a batch
	// taken up, or those dropped unprocessed as the task ends.
	taken func(records int)
	// worked is called after each batch a task has worked through;
	// promoted says it was the first record of a task that moved here
	// (task.moved), which run hands over alone.
	worked func(t *task, promoted bool)
	// abandoned is called with a task stop gave up waiting for.
	abandoned func(*task)
	// failed, when set, is called once with a task's stopping error
	// (restart.go).
	failed func(t *task, err error)
	// emitted, when set, is called with each output record a task
	// produced, once the broker has it, before the record is reused.
	emitted func(task int32, r *kgo.Record)
	// ahead, under at-most-once, commits a batch's offsets before the
	// task processes it (guarantee.go); false: the task is stopped.
	ahead func(t *task, records []*kgo.Record) bool
	// gate, under exactly-once, is held shared by every record in
	// process and exclusively by a commit: the transaction spans every
	// task, so that no record straddles a commit (txn.go).
	gate *sync.RWMutex

	// caches holds each task's record cache by task id, from the task's
	// making until its stores close, for latest reads (replica.go): the
	// one field that changes, safe for concurrent use. It outlives the
	// task's place in the member's active tasks, which a revoke leaves
	// before it commits the cache.
	caches sync.Map // int32 -> *recordCache
}

// partitions returns the input partitions of tasks: partition i of every
// input is task i's.
func (e *taskEnv) partitions(tasks ...int32) map[string][]int32 {
	m := make(map[string][]int32)
	for _, topic := range e.topo.InputTopics() {
		m[topic] = append([]int32(nil), tasks...)
	}
	return m
}

// task is one active partition slot: partition id of every input, handled
// on its own goroutine in offset order, and the task's stores.
type task struct {
	id    int32
	env   *taskEnv
	q     batchQueue
	proc  *recordProcessor
	stats *taskStats // its metric series, read at scrape time while it lives
	// untimed counts down the records until the next latency sample
	// (work): the task goroutine's.
	untimed int

	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	done   chan struct{}

	running atomic.Bool // restored and processing
	// cacheAsk is a commit's request that the task write its record cache
	// through itself, a chunk between two batches, ahead of the commit's
	// cut (cut.go); cacheWake (capacity 1) wakes the task for it when
	// no batch is queued.
	cacheAsk  atomic.Pointer[cacheAskRequest]
	cacheWake chan struct{}
	// moved says the task moved here after the instance's first tasks
	// started (a failover, a scale-in), or was promoted from a replica held
	// here. A commit follows its first record at once (session.worked), so
	// the move shows progress without waiting for the commit interval.
	moved bool
	// exit is taskRunning, then taskExited when run returns, or
	// taskAbandoned when stop gave up waiting (run then drops the task
	// itself when it finally returns).
	exit atomic.Int32
	err  firstError // the error that stopped the task

	// mu is held while a record is processed; a commit holds it for the
	// task's cut (commit.go), an exactly-once commit for the whole
	// transaction (txn.go). It guards st, stores, activated, cache, outs,
	// next and committed. Latest reads on other goroutines never take it:
	// they read the cache under the cache's own lock (cache.go), which the
	// writer takes while it changes the cache.
	mu        ctxMutex
	st        *state.Task
	stores    []*state.DB // in topology order
	activated bool
	cache     *recordCache // nil when statestore.cache.max.bytes is 0
	// uncached: the topology has writes the cache must not take (an
	// AsStream output, a window store); set once, at creation.
	uncached bool
	// outs carves the output records the task emits (emit), two
	// allocations per emit saved on the per-record path (recarena).
	outs      recarena.Arena
	next      map[string]kgo.EpochOffset // per input topic: offset after the last processed record
	committed map[string]int64           // per input topic: last committed offset (commitMu; turn under exactly-once)
	// durable is committed as the record path reads it (Context's
	// committedOffset): topic -> int64, stored by setCommitted.
	durable sync.Map
	// wall wakes the task for what is due on the wall clock, set to
	// wallAt (ms; math.MaxInt64: stopped); nil when its topology has
	// nothing on the wall clock (wallclock.go). The task goroutine's.
	wall   *time.Timer
	wallAt int64
	// align is the timestamp alignment with co-partitioned tables
	// (table_align.go), made at the first batch; the task goroutine's.
	align *tableAlign
	// inputs is the timestamp order across several inputs
	// (input_align.go), made at the first batch; the task goroutine's.
	inputs *inputAlign
	// first is, per input topic, the offset of the first record pushed
	// to the task: where an aborted transaction rewinds to when the task
	// committed nothing yet (rewind.go). The poll goroutine's.
	first map[string]int64

	// commitMu is held by the at-least-once commit of the task in
	// progress, from its cut to its offsets (lockTasks). It keeps the
	// epochs of acks and committed to one commit at a time. Commits of
	// other tasks run beside it.
	commitMu ctxMutex

	// acks counts the task's output and dead-letter records not yet
	// acknowledged, by commit epoch (acks.go): an at-least-once commit
	// waits for those of its cut.
	acks ackEpochs
	// emitted and deadLettered are, per epoch, the promises of the output
	// records the task emits and of its dead letters: the session's
	// (env.promise), the epoch's count, and an output record back to its
	// arena (t.outs). Made once: a closure made per record would allocate.
	emitted, deadLettered [2]func(*kgo.Record, error)

	// closeMu guards the stores against a forced close, which Run makes
	// when a handler outlives the shutdown bound. The record path's store
	// reads and writes hold it shared, forceClose exclusively. closed says
	// the stores are closed; closeOnce closes them once, whoever comes
	// first.
	closeMu   sync.RWMutex
	closed    atomic.Bool
	closeOnce sync.Once
}

// ErrTaskClosed is what a handler's store reads and writes fail with once
// its task's stores are closed under it: the shutdown gave up waiting for
// the handler (it ignored its context past shutdown.timeout.ms). It wraps
// state.ErrTaskClosed.
var ErrTaskClosed = fmt.Errorf("processor: the task's stores were closed under its handler: %w", state.ErrTaskClosed)

func newTask(env *taskEnv, id int32, held *state.Task) *task {
	ctx, cancel := context.WithCancel(env.ctx)
	t := &task{
		id: id, env: env,
		stats:     newTaskStats(id),
		mu:        make(ctxMutex, 1),
		commitMu:  make(ctxMutex, 1),
		q:         batchQueue{ready: make(chan struct{}, 1)},
		cacheWake: make(chan struct{}, 1),
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		st:        held,
		next:      make(map[string]kgo.EpochOffset),
		committed: make(map[string]int64),
		first:     make(map[string]int64),
	}
	t.uncached = env.topo.hasUncached()
	if b := env.opts.CacheMaxBytes; b > 0 {
		// Kafka Streams divides the cache among its threads; the member
		// divides it among its active tasks (shareCache) as soon as this
		// one is among them. Until then, a share of every task.
		t.cache = newRecordCache(max(1, b/int64(max(1, env.tasks))), len(env.topo.stores))
		env.caches.Store(id, t.cache)
	}
	for e := range 2 {
		t.emitted[e] = func(r *kgo.Record, err error) {
			if err == nil && env.emitted != nil {
				env.emitted(id, r)
			}
			env.promise(r, err)
			t.acks.acked(e)
			recarena.Release(r)
		}
		t.deadLettered[e] = func(r *kgo.Record, err error) {
			env.promise(r, err)
			t.acks.acked(e)
		}
	}
	t.proc = newRecordProcessor(env.topo, env.opts.ErrorPolicy, env.opts.retry, env.opts.DLQTopic,
		env.log.With("task", id), taskBackend{t}, env.now)
	return t
}

// run restores (or promotes) the task's stores, resumes its partitions and
// processes its records until stopped.
func (t *task) run() {
	defer func() {
		// The records still queued will be fetched again by the next
		// owner; release them from the session's count.
		if n := t.q.close(); n > 0 {
			t.env.taken(n)
		}
		if t.wall != nil {
			t.wall.Stop()
		}
		if !t.exit.CompareAndSwap(taskRunning, taskExited) {
			t.drop() // abandoned by stop: nobody else will
		}
		close(t.done) // after the drop: the session waits for abandoned tasks
	}()
	if err := t.start(); err != nil {
		if t.ctx.Err() == nil {
			t.setErr(fmt.Errorf("task %d: start: %w", t.id, err))
		}
		return
	}
	if !t.startClock() {
		return
	}
	t.env.fetch.ResumeFetchPartitions(t.env.partitions(t.id))
	t.running.Store(true)
	promoted := t.moved // until its first record is worked through
	for {
		p, ok := t.q.pop()
		if !ok {
			if t.writeAhead() {
				continue // more of the cache to write, and no record waiting
			}
			select {
			case <-t.ctx.Done():
				return
			case <-t.q.ready:
				continue
			case <-t.cacheWake:
				continue
			case <-t.wallC():
				if !t.fireWall() {
					return
				}
				continue
			}
		}
		// Not split for an input alignment (input_task.go), which takes
		// the batches queued behind this one in before the rest of it:
		// that would break the partition's offset order.
		if promoted && len(p.Records) > 1 && !t.alignsInputs() {
			// A moved task asks for its first commit after its first
			// record, not after its whole first batch. After a failover
			// the first fetch holds up to a partition's fetch size of
			// backlog. A commit asked for after all of it would wait for
			// all their changelog and output records and their LevelDB
			// batch. The task works on meanwhile; the commit cuts where
			// it has got to when it takes the task's lock.
			head := p
			head.Records = p.Records[:1]
			if !t.take(head) {
				return
			}
			t.env.worked(t, true)
			promoted = false
			p.Records = p.Records[1:]
		}
		if !t.take(p) { // table_task.go
			return
		}
		if t.ctx.Err() == nil {
			t.q.resume(t.env.opts.taskQueue, func() { t.env.fetch.ResumeFetchPartitions(t.env.partitions(t.id)) })
		}
		t.env.worked(t, promoted)
		promoted = false
		t.writeAhead() // a chunk of the cache between two batches, when a commit asks
		if !t.wallTick() {
			return
		}
	}
}

// work processes one batch in offset order: the per-record path. It
// reports false when the task must end (stopped, or failed).
func (t *task) work(records []*kgo.Record) bool {
	for _, rec := range records {
		if t.ctx.Err() != nil {
			return false
		}
		// The latency histogram times one record in latencyEvery, from
		// its lock to its staged effects. Quantiles need a sample, not
		// every record, and two clock reads per record cost more.
		var began time.Time
		timed := t.untimed == 0
		if timed {
			began = t.env.now()
			t.untimed = latencyEvery
		}
		t.untimed--
		if g := t.env.gate; g != nil {
			g.RLock()
		}
		t.mu.Lock()
		if t.ctx.Err() != nil { // stopped while waiting: by an aborted transaction, say
			t.mu.Unlock()
			if g := t.env.gate; g != nil {
				g.RUnlock()
			}
			return false
		}
		out, err := t.proc.process(t.ctx, rec)
		if err == nil {
			t.next[rec.Topic] = kgo.EpochOffset{Epoch: rec.LeaderEpoch, Offset: rec.Offset + 1}
		}
		t.mu.Unlock()
		if g := t.env.gate; g != nil {
			g.RUnlock()
		}
		if err != nil {
			if t.ctx.Err() != nil && errors.Is(err, t.ctx.Err()) {
				return false // stopped during a retry backoff: the record was not processed
			}
			t.setErr(fmt.Errorf("task %d: %w", t.id, err))
			return false
		}
		if timed {
			now := t.env.now()
			t.stats.latency.Observe(now.Sub(began).Seconds())
			t.stats.endToEnd.Observe(max(0, now.Sub(rec.Timestamp).Seconds()))
		}
		t.stats.record(out, t.proc.lastStage)
		for _, l := range t.proc.late {
			t.stats.late.WithLabelValues(l.store.name).Add(float64(l.windows))
		}
	}
	return true
}

// latencyEvery is how many records of a task one latency sample stands for
// (task.work).
const latencyEvery = 16

// push queues a fetched batch without blocking, pausing the task's
// partitions when its queue is too long; false when the task has ended.
func (t *task) push(p kgo.FetchTopicPartition) bool {
	if _, ok := t.first[p.Topic]; !ok && len(p.Records) > 0 {
		t.first[p.Topic] = p.Records[0].Offset
	}
	return t.q.push(p, t.env.opts.taskQueue, func() { t.env.fetch.PauseFetchPartitions(t.env.partitions(t.id)) })
}

// start opens the task's stores: a standby (or warmup) replica held here is
// promoted, catching up only its lag; otherwise the stores are opened and
// restored from their checkpoints.
func (t *task) start() error {
	if len(t.env.topo.stores) == 0 { // stateless: nothing to open or restore
		t.mu.Lock()
		t.activated = true
		t.mu.Unlock()
		return nil
	}
	t.mu.Lock()
	held := t.st
	t.mu.Unlock()
	began := t.env.now()
	st, err := t.env.openStores(t.ctx, t.id, held)
	if st != nil {
		t.mu.Lock()
		t.st = st // to be closed by drop even when it failed to start
		t.mu.Unlock()
	}
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.stores = st.Stores()
	t.activated = true
	t.mu.Unlock()
	t.env.log.Info("task active", "task", t.id, "restore", t.env.now().Sub(began).Round(time.Millisecond), "checkpoints", st.Checkpoints())
	return nil
}

const (
	taskRunning int32 = iota
	taskExited
	taskAbandoned
)

// stop makes the task finish its in-flight record and waits for it, at
// most until deadline. It reports whether the task stopped. If not, its
// goroutine is blocked, producing to unreachable brokers, say, and the
// task is abandoned. The caller must neither commit nor drop it. It drops
// itself when its goroutine returns, and the session waits for that.
// Waiting longer inside a group callback would keep the client from
// leaving the group, the one thing that unblocks the producer.
func (t *task) stop(deadline time.Time) bool {
	t.cancel()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-t.done:
		return true
	case <-timer.C:
	}
	if t.exit.CompareAndSwap(taskRunning, taskAbandoned) {
		t.env.log.Error("task did not finish its record in time; abandoning it uncommitted", "task", t.id)
		t.env.abandoned(t)
		return false
	}
	<-t.done // it returned just now
	return true
}

// stopAll stops tasks, all within one bound, and returns those that stopped.
func stopAll(tasks []*task, within time.Duration) []*task {
	var stopped []*task
	for _, t := range tasks {
		t.cancel() // all at once: their in-flight records finish in parallel
	}
	deadline := time.Now().Add(within)
	for _, t := range tasks {
		if t.stop(deadline) {
			stopped = append(stopped, t)
		}
	}
	return stopped
}

// drop discards the task's uncommitted writes and closes its stores: its
// checkpoint stays at the last commit, and the changelog has the rest.
//
// An exactly-once commit holds the lock while it flushes, so callers abort
// background commits first. drop waits for the lock at most the shutdown
// timeout. A task it cannot lock then is closed in the background once the
// commit lets go of the lock, which it does when its requests fail or the
// session closes its client. So drop never hangs a group callback, the poll
// loop or the shutdown. Until then the task's stores stay open, and a new
// task of the same id waits for them (openStores).
func (t *task) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), t.env.opts.ShutdownTimeout)
	err := t.mu.LockContext(ctx)
	cancel()
	if err != nil {
		t.env.log.Error("dropping a task: its lock is held by a commit; its stores close when the commit ends", "task", t.id, "waited", t.env.opts.ShutdownTimeout)
		go func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.activated = false
			t.closeStores()
			t.env.log.Info("dropped task's stores closed after its commit ended", "task", t.id)
		}()
		return
	}
	defer t.mu.Unlock()
	t.activated = false
	t.closeStores()
}

// closeStores drops the uncommitted writes and closes the stores, once.
func (t *task) closeStores() {
	t.closeOnce.Do(func() {
		t.closed.Store(true)
		if t.cache != nil {
			t.cache.close() // its latest readers fail from now on
			t.env.caches.CompareAndDelete(t.id, t.cache)
		}
		if t.st == nil {
			return
		}
		t.st.Abort()
		if err := t.st.Close(); err != nil {
			t.env.log.Warn("closing a task's stores", "task", t.id, "err", err)
		}
	})
}

// writeStores writes the stores' writes of the last cut (state.Task.Freeze)
// and their checkpoints, beside the task's record path (nothing for a
// stateless topology).
func (t *task) writeStores() error { return t.withStores((*state.Task).WriteFrozen) }

// commitStores writes the stores' buffers and checkpoints (nothing for a
// stateless topology); the task's lock must be held.
func (t *task) commitStores() error { return t.withStores((*state.Task).Commit) }

// withStores runs op on the task's stores unless they are closed.
func (t *task) withStores(op func(*state.Task) error) error {
	t.closeMu.RLock()
	defer t.closeMu.RUnlock()
	if t.closed.Load() {
		return ErrTaskClosed
	}
	if t.st == nil {
		return nil
	}
	return op(t.st)
}

// forceClose closes the task's stores without its lock, which a handler
// that ignores its context may hold forever: from now on its store reads
// and writes fail with ErrTaskClosed. It reports whether the task's
// goroutine was still running.
func (t *task) forceClose() (running bool) {
	t.cancel()
	t.closeMu.Lock()
	t.closeStores()
	t.closeMu.Unlock()
	select {
	case <-t.done:
		return false
	default:
		return true
	}
}

// setErr stops the task with err (the first one wins) and pauses its
// partitions.
func (t *task) setErr(err error) {
	if t.err.set(err) {
		t.env.met.taskFailures.Inc()
		t.env.log.Error("task stopped", "task", t.id, "err", err)
		t.env.fetch.PauseFetchPartitions(t.env.partitions(t.id))
		if t.env.failed != nil {
			t.env.failed(t, err)
		}
	}
}

func (t *task) getErr() error { return t.err.get() }
