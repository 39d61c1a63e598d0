package processor

// The task's side of the record processor (record.go): taskBackend, through
// which a handler's reads, staged writes, outputs and dead letters reach the
// task's record cache, its stores and the session's producer, and the
// write-through from the cache. Split from task.go, which keeps the task's
// life (run, work, start, stop, drop).

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// taskBackend applies a task's records to its state stores and the
// session's producer.
type taskBackend struct{ t *task }

func (b taskBackend) get(_ int32, s *storeSpec, key []byte) ([]byte, bool, error) {
	b.t.closeMu.RLock()
	defer b.t.closeMu.RUnlock()
	if b.t.closed.Load() {
		return nil, false, fmt.Errorf("task %d: read store %s: %w", b.t.id, s.name, ErrTaskClosed)
	}
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

func (b taskBackend) apply(_ int32, ts time.Time, ws []write) error {
	t := b.t
	t.closeMu.RLock()
	defer t.closeMu.RUnlock()
	if t.closed.Load() {
		return fmt.Errorf("task %d: apply writes: %w", t.id, ErrTaskClosed)
	}
	if err := t.stoppedInTransaction(); err != nil {
		return err
	}
	if c := t.cache; c != nil {
		// Writes the cache must not merge go past it, before it is locked:
		// producing may block.
		if t.uncached {
			for i := range ws {
				if w := &ws[i]; w.uncached() {
					if err := t.writeOne(w, ts); err != nil {
						return err
					}
				}
			}
		}
		c.mu.Lock() // against latest readers (cache.go)
		for i := range ws {
			w := &ws[i]
			if t.uncached && w.uncached() {
				continue
			}
			target := len(t.stores) + w.outputIndex()
			if w.store != nil {
				target = w.store.index
			}
			value := w.value
			if w.del {
				value = nil
			}
			c.put(target, w.key, value, w.headers)
		}
		c.mu.Unlock()
		if c.over() {
			return c.evict(t.writeThrough)
		}
		return nil
	}
	// Written through, every record is stamped with the input record's
	// timestamp (Kafka Streams' default for what a record makes); merged
	// in the cache above, with the time it is flushed.
	for i := range ws {
		if err := t.writeOne(&ws[i], ts); err != nil {
			return err
		}
	}
	return nil
}

// writeOne writes w through, past the record cache: a store write or an
// emit stamped ts.
func (t *task) writeOne(w *write, ts time.Time) error {
	if w.store != nil {
		return t.write(w.store.index, w.key, w.value, w.del, ts)
	}
	if !w.at.IsZero() {
		ts = w.at
	}
	t.emit(w.output.topic, w.key, w.value, w.headers, ts)
	return nil
}

// write applies one store write: the write buffer and the changelog.
func (t *task) write(store int, key, value []byte, del bool, ts time.Time) error {
	if del {
		return t.stores[store].DeleteAt(key, ts)
	}
	return t.stores[store].PutAt(key, value, ts)
}

// emit produces one output record, stamped ts (the zero time: when it is
// produced). The key and value may live in a reused buffer: the record
// gets its own copy, with the record from the task's arena (t.outs, under
// the task's lock like every caller of emit), back there in its promise.
func (t *task) emit(topic string, key, value []byte, headers []kgo.RecordHeader, ts time.Time) {
	r := t.outs.New(key, value)
	r.Topic, r.Headers, r.Timestamp = topic, headers, ts
	t.env.prod.Produce(t.env.ctx, r, t.emitted[t.acks.add()])
}

// flushCache sends the record cache's merged writes and emits on; the task's
// lock must be held (and closeMu, shared, by the record path; a commit
// takes it here).
func (t *task) flushCache() error {
	if t.cache == nil {
		return nil
	}
	return t.cache.drain(t.writeThrough)
}

// writeThrough writes one entry of the record cache, flushed or evicted,
// as the task would have without a cache: a store write (value nil: a
// delete) or an emit (value nil: a tombstone).
func (t *task) writeThrough(target int, key, value []byte, headers []kgo.RecordHeader) error {
	if target < len(t.stores) {
		return t.write(target, key, value, value == nil, time.Time{})
	}
	t.emit(t.env.topo.outputs[target-len(t.stores)].topic, key, value, headers, time.Time{})
	return nil
}

// setCommitted records the committed offset of the task's partition of
// topic, for the commit (committed) and the record path (durable).
func (t *task) setCommitted(topic string, offset int64) {
	t.committed[topic] = offset
	t.durable.Store(topic, offset)
}

func (b taskBackend) committedOffset(_ int32, topic string) int64 {
	if v, ok := b.t.durable.Load(topic); ok {
		return v.(int64)
	}
	return -1
}

func (b taskBackend) deadLetter(dl *kgo.Record) error {
	b.t.env.prod.Produce(b.t.env.ctx, dl, b.t.deadLettered[b.t.acks.add()])
	return nil
}
