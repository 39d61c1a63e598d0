package state

import "fmt"

// Codec turns values of type T into bytes and back. It has the method set
// of the processor's codecs, so those satisfy it as they are.
type Codec[T any] interface {
	Encode(v T) ([]byte, error)
	Decode(b []byte) (T, error)
}

// Typed is a DB seen through key and value codecs. Like DB, it
// belongs to the task's goroutine and sees uncommitted writes.
type Typed[K, V any] struct {
	s  *DB
	kc Codec[K]
	vc Codec[V]
}

// NewTyped returns s seen through the codecs kc and vc.
func NewTyped[K, V any](s *DB, kc Codec[K], vc Codec[V]) Typed[K, V] {
	return Typed[K, V]{s: s, kc: kc, vc: vc}
}

// Store returns the underlying store.
func (t Typed[K, V]) Store() *DB { return t.s }

// Get returns the decoded value of key.
func (t Typed[K, V]) Get(key K) (value V, found bool, err error) {
	kb, err := t.kc.Encode(key)
	if err != nil {
		return value, false, fmt.Errorf("state: store %s: encode key: %w", t.s.name, err)
	}
	b, found, err := t.s.Get(kb)
	if err != nil || !found {
		return value, found, err
	}
	value, err = t.vc.Decode(b)
	if err != nil {
		return value, false, fmt.Errorf("state: store %s: decode value of key %q: %w", t.s.name, kb, err)
	}
	return value, true, nil
}

// Put encodes and writes key and value.
func (t Typed[K, V]) Put(key K, value V) error {
	kb, err := t.kc.Encode(key)
	if err != nil {
		return fmt.Errorf("state: store %s: encode key: %w", t.s.name, err)
	}
	vb, err := t.vc.Encode(value)
	if err != nil {
		return fmt.Errorf("state: store %s: encode value of key %q: %w", t.s.name, kb, err)
	}
	return t.s.Put(kb, vb)
}

// Delete encodes and deletes key.
func (t Typed[K, V]) Delete(key K) error {
	kb, err := t.kc.Encode(key)
	if err != nil {
		return fmt.Errorf("state: store %s: encode key: %w", t.s.name, err)
	}
	return t.s.Delete(kb)
}

// ScanPrefix calls fn with the decoded entries whose encoded key starts
// with prefix, in key order, until fn returns false. A decode error stops
// the scan and is returned.
func (t Typed[K, V]) ScanPrefix(prefix []byte, fn func(key K, value V) bool) error {
	var derr error
	err := t.s.ScanPrefix(prefix, func(kb, vb []byte) bool {
		k, err := t.kc.Decode(kb)
		if err != nil {
			derr = fmt.Errorf("state: store %s: decode key %q: %w", t.s.name, kb, err)
			return false
		}
		v, err := t.vc.Decode(vb)
		if err != nil {
			derr = fmt.Errorf("state: store %s: decode value of key %q: %w", t.s.name, kb, err)
			return false
		}
		return fn(k, v)
	})
	if err != nil {
		return err
	}
	return derr
}
