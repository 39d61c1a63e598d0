package window

import (
	"bytes"
	"fmt"
)

// MemJoin is an in-memory store of a stream-stream join, laid out as a
// durable one: each side's records by JoinRecordKey, the pending unmatched
// records by JoinTimeKey. It serves tests and test drivers. Its stores keep
// every record written; Process hides those past retention from itself.
type MemJoin[V any] struct {
	sides   [2]sorted[Buffered[V]]
	pending sorted[Buffered[V]]
}

// Buffered implements JoinReader.
func (m *MemJoin[V]) Buffered(side Side, key []byte, from, to int64) ([]Buffered[V], error) {
	if from > to {
		return nil, nil
	}
	return m.sides[side].scan(JoinRecordRange(key, from, to)), nil
}

// Pending implements JoinReader.
func (m *MemJoin[V]) Pending(fn func(Buffered[V]) bool) error {
	for _, p := range m.pending.scan(nil, nil) {
		if !fn(p) {
			break
		}
	}
	return nil
}

// Apply applies the store writes of ops; emits are the caller's.
func (m *MemJoin[V]) Apply(ops []JoinOp[V]) error {
	for _, op := range ops {
		r := op.Record
		r.Key = bytes.Clone(r.Key)
		switch op.Kind {
		case JoinStore:
			m.sides[r.Side].put(JoinRecordKey(r.Key, r.Timestamp, r.Seq), r)
		case JoinPend:
			m.pending.put(JoinTimeKey(r.Timestamp, r.Side, r.Key, r.Seq), r)
		case JoinUnpend:
			p := JoinTimePrefix(r.Timestamp, r.Side, r.Key)
			for _, q := range m.pending.scan(p, PrefixEnd(p)) {
				m.pending.delete(JoinTimeKey(q.Timestamp, q.Side, q.Key, q.Seq))
			}
		case JoinEmit:
		default:
			return fmt.Errorf("apply join op of key %q: unknown kind %d", r.Key, op.Kind)
		}
	}
	return nil
}

// All returns side's stored records, by key, timestamp and seq.
func (m *MemJoin[V]) All(side Side) []Buffered[V] { return m.sides[side].scan(nil, nil) }

// AllPending returns the pending unmatched records in scan order.
func (m *MemJoin[V]) AllPending() []Buffered[V] { return m.pending.scan(nil, nil) }
