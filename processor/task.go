package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/state"
)

// task is one active partition slot: partition id of every input, handled
// on its own goroutine in offset order, and the task's stores.
type task struct {
	id   int32
	s    *session
	q    batchQueue
	proc *recordProcessor
	// bpMu guards paused: the task's partitions are paused because its
	// queue grew past Options.TaskQueue records.
	bpMu   sync.Mutex
	paused bool

	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	done   chan struct{}

	running atomic.Bool // restored and processing
	// exit is taskRunning, then taskExited when run returns, or
	// taskAbandoned when stop gave up waiting (run then drops the task
	// itself when it finally returns).
	exit atomic.Int32

	// mu is held while a record is processed; commit holds every task's
	// to flush and write the stores between records.
	mu        ctxMutex
	st        *state.Task
	stores    []*state.Store // in topology order
	activated bool
	cache     *recordCache               // nil when statestore.cache.max.bytes is 0
	next      map[string]kgo.EpochOffset // per input topic: offset after the last processed record
	committed map[string]int64           // per input topic: last committed offset

	errMu sync.Mutex
	err   error
}

func newTask(s *session, id int32) *task {
	ctx, cancel := context.WithCancel(s.ctx)
	t := &task{
		id: id, s: s,
		mu:        make(ctxMutex, 1),
		q:         batchQueue{ready: make(chan struct{}, 1)},
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		next:      make(map[string]kgo.EpochOffset),
		committed: make(map[string]int64),
	}
	if b := s.r.opts.CacheMaxBytes; b > 0 {
		// Kafka Streams divides the cache among its threads; we divide it
		// among the tasks the inputs can have.
		t.cache = newRecordCache(max(1, b/int64(max(1, s.n))))
	}
	t.proc = newRecordProcessor(s.r.topo, s.r.opts.ErrorPolicy, s.r.opts.Retry, s.r.opts.DLQTopic,
		s.log.With("task", id), taskBackend{t})
	return t
}

// run restores (or promotes) the task's stores, resumes its partitions and
// processes its records until stopped.
func (t *task) run() {
	defer func() {
		// The records still queued will be fetched again by the next
		// owner; release them from the session's count.
		if n := t.q.close(); n > 0 {
			t.s.queued.Add(-int64(n))
			select {
			case t.s.drained <- struct{}{}:
			default:
			}
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
	t.s.cl.ResumeFetchPartitions(t.s.partitionsOf([]int32{t.id}))
	t.running.Store(true)
	label := taskLabel(t.id)
	processed := t.s.r.met.processed.WithLabelValues(label)
	latency := t.s.r.met.processLatency.WithLabelValues(label)
	for {
		p, ok := t.q.pop()
		if !ok {
			select {
			case <-t.ctx.Done():
				return
			case <-t.q.ready:
				continue
			}
		}
		t.s.queued.Add(-int64(len(p.Records)))
		select {
		case t.s.drained <- struct{}{}:
		default:
		}
		// One clock read per record: a record's latency runs from the end
		// of the previous one (or the batch's turn).
		prev := time.Now()
		for _, rec := range p.Records {
			if t.ctx.Err() != nil {
				return
			}
			t.mu.Lock()
			out, err := t.proc.process(t.ctx, rec)
			if err == nil {
				t.next[rec.Topic] = kgo.EpochOffset{Epoch: rec.LeaderEpoch, Offset: rec.Offset + 1}
			}
			t.mu.Unlock()
			if err != nil {
				if t.ctx.Err() != nil && errors.Is(err, t.ctx.Err()) {
					return // stopped during a retry backoff: the record was not processed
				}
				t.setErr(fmt.Errorf("task %d: %w", t.id, err))
				return
			}
			now := time.Now()
			processed.Inc()
			latency.Observe(now.Sub(prev).Seconds())
			prev = now
			switch stage := t.proc.lastStage; out {
			case outcomeDeadLettered:
				t.s.r.met.deadLettered.WithLabelValues(label, stage).Inc()
			case outcomeSkipped:
				t.s.r.met.skipped.WithLabelValues(label, stage).Inc()
			}
		}
		t.maybeResume()
		if t.s.r.opts.CommitInterval == 0 {
			select {
			case t.s.commitWanted <- time.Time{}:
			default: // a commit is due already: it covers this batch too
			}
		}
	}
}

// maybePause pauses the task's partitions when its queue is too long.
func (t *task) maybePause() {
	t.bpMu.Lock()
	defer t.bpMu.Unlock()
	if !t.paused && t.q.len() > t.s.r.opts.TaskQueue {
		t.paused = true
		t.s.cl.PauseFetchPartitions(t.s.partitionsOf([]int32{t.id}))
	}
}

// maybeResume resumes them once the task has worked through half. Both
// check the queue's live length under bpMu, so a pause is always followed
// by a resume: the task still has the queued batches to work through.
func (t *task) maybeResume() {
	t.bpMu.Lock()
	defer t.bpMu.Unlock()
	if t.paused && t.q.len() <= t.s.r.opts.TaskQueue/2 && t.ctx.Err() == nil {
		t.paused = false
		t.s.cl.ResumeFetchPartitions(t.s.partitionsOf([]int32{t.id}))
	}
}

// batchQueue holds a task's fetched batches in order. Pushing never blocks
// (the poll loop must hand over every batch before it allows a rebalance);
// its length is bounded by pausing the task's partitions instead.
type batchQueue struct {
	mu      sync.Mutex
	batches []kgo.FetchTopicPartition
	records int
	closed  bool
	ready   chan struct{} // signalled (capacity 1) on push
}

// push appends p and returns the records now queued; ok is false when the
// queue is closed (its task has ended) and p was not taken.
func (q *batchQueue) push(p kgo.FetchTopicPartition) (queued int, ok bool) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return 0, false
	}
	q.batches = append(q.batches, p)
	q.records += len(p.Records)
	n := q.records
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return n, true
}

// close empties the queue for good and returns the records it dropped.
func (q *batchQueue) close() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.records
	q.closed, q.batches, q.records = true, nil, 0
	return n
}

// pop removes the oldest batch.
func (q *batchQueue) pop() (p kgo.FetchTopicPartition, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.batches) == 0 {
		return p, false
	}
	p = q.batches[0]
	q.batches[0] = kgo.FetchTopicPartition{}
	q.batches = q.batches[1:]
	q.records -= len(p.Records)
	return p, true
}

// len returns the records queued.
func (q *batchQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.records
}

// start opens the task's stores: a standby (or warmup) replica held here is
// promoted, catching up only its lag; otherwise the stores are opened and
// restored from their checkpoints.
func (t *task) start() error {
	if len(t.s.r.topo.stores) == 0 { // stateless: nothing to open or restore
		t.mu.Lock()
		t.activated = true
		t.mu.Unlock()
		return nil
	}
	mgr := t.s.mgr
	st := t.st
	if st == nil {
		st = mgr.Task(t.id)
	}
	var err error
	if st == nil {
		if st, err = mgr.OpenTask(t.id, t.s.r.storeSpecs()); err != nil {
			return err
		}
	}
	t.mu.Lock()
	t.st = st
	t.mu.Unlock()
	began := time.Now()
	switch st.Role() {
	case state.RoleStandby:
		err = st.Promote(t.ctx, t.s.cl)
	case state.RoleIdle:
		if err = st.Restore(t.ctx); err == nil {
			err = st.Activate(t.s.cl)
		}
	default:
		err = fmt.Errorf("stores are %s", st.Role())
	}
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.stores = st.Stores()
	t.activated = true
	t.mu.Unlock()
	t.s.log.Info("task active", "task", t.id, "restore", time.Since(began).Round(time.Millisecond), "checkpoints", st.Checkpoints())
	return nil
}

const (
	taskRunning int32 = iota
	taskExited
	taskAbandoned
)

// stop makes the task finish its in-flight record and waits for it, at
// most until deadline. It reports whether the task stopped; if not (its
// goroutine is blocked producing to unreachable brokers), the task is
// abandoned: it must be neither committed nor dropped by the caller, and
// drops itself when its goroutine returns (the session waits for that). Waiting longer inside a group callback would keep the
// client from leaving the group, the one thing that unblocks the producer.
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
		t.s.log.Error("task did not finish its record in time; abandoning it uncommitted", "task", t.id)
		t.s.mu.Lock()
		t.s.abandoned = append(t.s.abandoned, t)
		t.s.mu.Unlock()
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

// drop discards the task's uncommitted writes and closes its stores: its
// checkpoint stays at the last commit, and the changelog has the rest.
//
// A commit holds the lock while it flushes; callers abort background
// commits first, and drop waits for the lock at most the shutdown timeout:
// a task it cannot lock is left open, logged, rather than hanging a group
// callback (and with it the poll loop and the shutdown).
func (t *task) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), t.s.r.opts.ShutdownTimeout)
	err := t.mu.LockContext(ctx)
	cancel()
	if err != nil {
		t.s.log.Error("dropping a task: its lock is held by a commit; leaving its stores open", "task", t.id, "waited", t.s.r.opts.ShutdownTimeout)
		return
	}
	defer t.mu.Unlock()
	if t.st == nil {
		return
	}
	t.st.Abort()
	if err := t.st.Close(); err != nil {
		t.s.log.Warn("closing a dropped task", "task", t.id, "err", err)
	}
	t.activated = false
}

func (t *task) setErr(err error) {
	t.errMu.Lock()
	first := t.err == nil
	if first {
		t.err = err
	}
	t.errMu.Unlock()
	if first {
		t.s.r.met.taskFailures.Inc()
		t.s.log.Error("task stopped", "task", t.id, "err", err)
		t.s.cl.PauseFetchPartitions(t.s.partitionsOf([]int32{t.id}))
	}
}

func (t *task) getErr() error {
	t.errMu.Lock()
	defer t.errMu.Unlock()
	return t.err
}

// taskBackend applies a task's records to its state stores and the
// session's producer.
type taskBackend struct{ t *task }

func (b taskBackend) get(_ int32, s *storeSpec, key []byte) ([]byte, bool, error) {
	if c := b.t.cache; c != nil {
		if v, found := c.get(s.index, key); found {
			if v == nil {
				return nil, false, nil
			}
			return append([]byte(nil), v...), true, nil
		}
	}
	return b.t.stores[s.index].Get(key)
}

func (b taskBackend) apply(_ int32, _ *kgo.Record, ws []write) error {
	t := b.t
	if c := t.cache; c != nil {
		over := false
		for i := range ws {
			w := &ws[i]
			target := len(t.stores) + w.outputIndex()
			if w.store != nil {
				target = w.store.index
			}
			value := w.value
			if w.del {
				value = nil
			}
			if c.put(target, w.key, value, w.headers) {
				over = true
			}
		}
		if over {
			return t.flushCache()
		}
		return nil
	}
	for i := range ws {
		w := &ws[i]
		if w.store != nil {
			if err := t.write(w.store.index, w.key, w.value, w.del); err != nil {
				return err
			}
			continue
		}
		t.emit(w.output.topic, w.key, w.value, w.headers)
	}
	return nil
}

// write applies one store write: the write buffer and the changelog.
func (t *task) write(store int, key, value []byte, del bool) error {
	if del {
		return t.stores[store].Delete(key)
	}
	return t.stores[store].Put(key, value)
}

// emit produces one output record. The key and value may live in a reused
// buffer: the record gets its own copy, both in one allocation.
func (t *task) emit(topic string, key, value []byte, headers []kgo.RecordHeader) {
	kv := make([]byte, len(key)+len(value))
	copy(kv, key)
	copy(kv[len(key):], value)
	r := &kgo.Record{Topic: topic, Key: kv[:len(key):len(key)], Headers: headers}
	if value != nil {
		r.Value = kv[len(key):]
	}
	t.s.cl.Produce(t.s.ctx, r, t.s.promise)
}

// flushCache sends the record cache's merged writes and emits on; the task's
// lock must be held.
func (t *task) flushCache() error {
	if t.cache == nil {
		return nil
	}
	outputs := t.s.r.topo.outputs
	return t.cache.drain(func(target int, key []byte, e *cacheEntry) error {
		if target < len(t.stores) {
			return t.write(target, key, e.value, e.value == nil)
		}
		t.emit(outputs[target-len(t.stores)].topic, key, e.value, e.headers)
		return nil
	})
}

func (b taskBackend) deadLetter(dl *kgo.Record) error {
	b.t.s.cl.Produce(b.t.s.ctx, dl, b.t.s.promise)
	return nil
}
