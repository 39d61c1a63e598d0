package window

import (
	"bytes"
	"fmt"
	"slices"
)

// Keyed is a stored window with its key.
type Keyed[V any] struct {
	Key []byte
	Entry[V]
}

// sorted is an ordered map of byte keys, the shape of a LevelDB keyspace.
type sorted[T any] struct {
	keys [][]byte
	vals []T
}

func (s *sorted[T]) find(k []byte) (int, bool) {
	return slices.BinarySearchFunc(s.keys, k, bytes.Compare)
}

func (s *sorted[T]) put(k []byte, v T) {
	i, ok := s.find(k)
	if ok {
		s.vals[i] = v
		return
	}
	s.keys = slices.Insert(s.keys, i, k)
	s.vals = slices.Insert(s.vals, i, v)
}

func (s *sorted[T]) delete(k []byte) {
	if i, ok := s.find(k); ok {
		s.keys = slices.Delete(s.keys, i, i+1)
		s.vals = slices.Delete(s.vals, i, i+1)
	}
}

// scan returns the values of the keys in [lo, hi); a nil hi has no bound.
func (s *sorted[T]) scan(lo, hi []byte) []T {
	i, _ := s.find(lo)
	j := len(s.keys)
	if hi != nil {
		j, _ = s.find(hi)
	}
	return slices.Clone(s.vals[i:max(i, j)])
}

// MemWindows is an in-memory window store for time and sliding windows,
// laid out as a durable store would be: by WindowKey, with a WindowTimeKey
// index for final results. It serves tests and test drivers.
type MemWindows[V any] struct {
	byKey  sorted[Keyed[V]]
	byTime sorted[Keyed[V]]
}

// Windows implements WindowReader.
func (m *MemWindows[V]) Windows(key []byte, from, to int64) ([]Entry[V], error) {
	if from > to {
		return nil, nil
	}
	ks := m.byKey.scan(WindowRange(key, from, to))
	out := make([]Entry[V], len(ks))
	for i, k := range ks {
		out[i] = k.Entry
	}
	return out, nil
}

// Apply applies the store writes of ops, for key; emits are the caller's.
func (m *MemWindows[V]) Apply(key []byte, ops []Op[V]) error {
	key = bytes.Clone(key)
	for _, op := range ops {
		switch op.Kind {
		case OpPut:
			e := Keyed[V]{Key: key, Entry: Entry[V]{Window: op.Window, Value: op.Value, Timestamp: op.Timestamp}}
			m.byKey.put(WindowKey(key, op.Window.Start), e)
			m.byTime.put(WindowTimeKey(op.Window.Start, key), e)
		case OpDelete:
			m.byKey.delete(WindowKey(key, op.Window.Start))
			m.byTime.delete(WindowTimeKey(op.Window.Start, key))
		case OpEmit:
		default:
			return fmt.Errorf("apply to key %q: unknown op kind %d", key, op.Kind)
		}
	}
	return nil
}

// Finals returns the windows of f, by start then key: the final results to
// emit.
func (m *MemWindows[V]) Finals(f Finals) []Keyed[V] {
	return m.byTime.scan(WindowTimeRange(f.From, f.To))
}

// All returns every stored window, by key then start.
func (m *MemWindows[V]) All() []Keyed[V] { return m.byKey.scan(nil, nil) }

// MemSessions is an in-memory session store, laid out by SessionKey with a
// SessionTimeKey index for final results. It serves tests and test drivers.
type MemSessions[V any] struct {
	byKey  sorted[Keyed[V]]
	byTime sorted[Keyed[V]]
}

// Sessions implements SessionReader.
func (m *MemSessions[V]) Sessions(key []byte, earliestEnd, latestStart int64) ([]Entry[V], error) {
	var out []Entry[V]
	lo, hi := SessionRange(key, earliestEnd, maxTime)
	for _, k := range m.byKey.scan(lo, hi) {
		if k.Window.Start <= latestStart {
			out = append(out, k.Entry)
		}
	}
	return out, nil
}

// Apply applies the store writes of ops, for key; emits are the caller's.
func (m *MemSessions[V]) Apply(key []byte, ops []Op[V]) error {
	key = bytes.Clone(key)
	for _, op := range ops {
		switch op.Kind {
		case OpPut:
			e := Keyed[V]{Key: key, Entry: Entry[V]{Window: op.Window, Value: op.Value}}
			m.byKey.put(SessionKey(key, op.Window), e)
			m.byTime.put(SessionTimeKey(op.Window, key), e)
		case OpDelete:
			m.byKey.delete(SessionKey(key, op.Window))
			m.byTime.delete(SessionTimeKey(op.Window, key))
		case OpEmit:
		default:
			return fmt.Errorf("apply to key %q: unknown op kind %d", key, op.Kind)
		}
	}
	return nil
}

// Finals returns the sessions of f, by end, start, then key: the final
// results to emit.
func (m *MemSessions[V]) Finals(f Finals) []Keyed[V] {
	return m.byTime.scan(SessionTimeRange(f.From, f.To))
}

// All returns every stored session, by key then end.
func (m *MemSessions[V]) All() []Keyed[V] { return m.byKey.scan(nil, nil) }
