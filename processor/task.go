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
	id    int32
	s     *session
	queue chan kgo.FetchTopicPartition
	proc  *recordProcessor

	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	done   chan struct{}

	running atomic.Bool // restored and processing

	// mu is held while a record is processed; commit holds every task's
	// to flush and write the stores between records.
	mu        sync.Mutex
	st        *state.Task
	stores    []*state.Store // in topology order
	activated bool
	next      map[string]kgo.EpochOffset // per input topic: offset after the last processed record
	committed map[string]int64           // per input topic: last committed offset

	errMu sync.Mutex
	err   error
}

func newTask(s *session, id int32) *task {
	ctx, cancel := context.WithCancel(s.ctx)
	t := &task{
		id: id, s: s,
		queue:     make(chan kgo.FetchTopicPartition, s.r.opts.TaskQueue),
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		next:      make(map[string]kgo.EpochOffset),
		committed: make(map[string]int64),
	}
	t.proc = newRecordProcessor(s.r.topo, s.r.opts.ErrorPolicy, s.r.opts.Retry, s.r.opts.DLQTopic,
		s.log.With("task", id), taskBackend{t})
	return t
}

// run restores (or promotes) the task's stores, resumes its partitions and
// processes its records until stopped.
func (t *task) run() {
	defer close(t.done)
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
		select {
		case <-t.ctx.Done():
			return
		case p := <-t.queue:
			// One clock read per record: a record's latency runs from the
			// end of the previous one (or the batch's arrival).
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
		}
	}
}

// start opens the task's stores: a standby (or warmup) replica held here is
// promoted, catching up only its lag; otherwise the stores are opened and
// restored from their checkpoints.
func (t *task) start() error {
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

// stop makes the task finish its in-flight record and waits for it.
func (t *task) stop() {
	t.cancel()
	<-t.done
}

// drop discards the task's uncommitted writes and closes its stores: its
// checkpoint stays at the last commit, and the changelog has the rest.
func (t *task) drop() {
	t.mu.Lock()
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
	return b.t.stores[s.index].Get(key)
}

func (b taskBackend) apply(_ int32, _ *kgo.Record, ws []write) error {
	t := b.t
	for i := range ws {
		w := &ws[i]
		switch {
		case w.store != nil && w.del:
			if err := t.stores[w.store.index].Delete(w.key); err != nil {
				return err
			}
		case w.store != nil:
			if err := t.stores[w.store.index].Put(w.key, w.value); err != nil {
				return err
			}
		default:
			// The staged bytes live in the task's arena: the record gets
			// its own copy, key and value in one allocation.
			kv := make([]byte, len(w.key)+len(w.value))
			copy(kv, w.key)
			copy(kv[len(w.key):], w.value)
			r := &kgo.Record{Topic: w.output.topic, Key: kv[:len(w.key):len(w.key)], Headers: w.headers}
			if w.value != nil {
				r.Value = kv[len(w.key):]
			}
			t.s.cl.Produce(t.s.ctx, r, t.s.promise)
		}
	}
	return nil
}

func (b taskBackend) deadLetter(dl *kgo.Record) error {
	b.t.s.cl.Produce(b.t.s.ctx, dl, b.t.s.promise)
	return nil
}
