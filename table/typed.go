package table

import (
	"fmt"

	"github.com/rackstream/rackstream/codec"
)

// Typed reads a Mirror through codecs: the key and value codecs the
// topic's writer used. For a goka table, codec.FromGoka adapts its codecs.
type Typed[K, V any] struct {
	r  *Mirror
	kc codec.Codec[K]
	vc codec.Codec[V]
}

// NewTyped wraps r with a key and a value codec.
func NewTyped[K, V any](r *Mirror, key codec.Codec[K], value codec.Codec[V]) Typed[K, V] {
	return Typed[K, V]{r: r, kc: key, vc: value}
}

// Mirror returns the underlying Mirror, for Lag, WaitCaughtUp and Close.
func (t Typed[K, V]) Mirror() *Mirror { return t.r }

// Get returns key's value; found is false for a key absent or deleted.
func (t Typed[K, V]) Get(key K) (value V, found bool, err error) {
	k, err := t.kc.Encode(key)
	if err != nil {
		return value, false, fmt.Errorf("table %s: encode key: %w", t.r.topic, err)
	}
	b, found, err := t.r.Get(k)
	if err != nil || !found {
		return value, false, err
	}
	if value, err = t.vc.Decode(b); err != nil {
		return value, false, fmt.Errorf("table %s: decode value of key %q: %w", t.r.topic, k, err)
	}
	return value, true, nil
}

// Scan calls fn for every key, in the order of the encoded keys, until fn
// returns false. A key or value that does not decode ends the scan with
// an error naming it.
func (t Typed[K, V]) Scan(fn func(key K, value V) bool) error {
	var derr error
	err := t.r.Scan(nil, nil, func(kb, vb []byte) bool {
		k, err := t.kc.Decode(kb)
		if err != nil {
			derr = fmt.Errorf("table %s: decode key %q: %w", t.r.topic, kb, err)
			return false
		}
		v, err := t.vc.Decode(vb)
		if err != nil {
			derr = fmt.Errorf("table %s: decode value of key %q: %w", t.r.topic, kb, err)
			return false
		}
		return fn(k, v)
	})
	if err != nil {
		return err
	}
	return derr
}
