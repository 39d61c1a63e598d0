package state

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// writeBuffer holds an active task's writes to one store since its last
// commit: the latest value or tombstone of each key written. Commit writes
// it to LevelDB in one batch with the checkpoint; Abort drops it.
//
// It is shaped for the per-record path, where a handler typically reads a
// key and writes it back, as a count or an aggregate does. A hash index
// finds the key in one map lookup for the Get and one for the Put; a
// skiplist would compare about log2(n) keys each time. Only scans need key
// order, and they are rare on that path. So sortKeys sorts the keys when a
// scan asks, and only those written since the last sort.
//
// Keys and values live in one append-only arena. The index maps each key,
// a string over the arena's bytes, to where its current value is. An
// overwrite appends the new value and repoints the index. So bytes once
// handed out never change until the buffer is reset, after a commit or an
// abort. A reader holding slices of the buffer, such as a latest scan on
// another goroutine, stays valid while the buffer is not reset under it;
// latest.go's reader count ensures that. When append moves the arena, the
// old array stays alive through the strings and slices that point into it.
type writeBuffer struct {
	// mu guards index, arena, vals and keys against readers on other
	// goroutines (LatestView). The task's goroutine is the only writer: it
	// takes mu to change them and reads them without it, since nothing
	// else changes them.
	mu    sync.RWMutex
	index map[string]int32 // key -> its slot in vals
	vals  []bufSpan        // slot -> the key's current value in arena
	arena []byte
	// keys are index's keys; keys[:sorted] are in order (sortKeys).
	keys   []string
	sorted int
	// scratch is the task goroutine's merge space for sortKeys.
	scratch []string
}

// bufSpan is where a value is in the arena: off, then n bytes, the first
// of which is the tag (bufValue or bufTombstone).
type bufSpan struct{ off, n uint32 }

// maxBufferBytes bounds the arena so that a span's offset fits its uint32.
const maxBufferBytes = math.MaxUint32 - 1

func newWriteBuffer() *writeBuffer {
	return &writeBuffer{index: make(map[string]int32), arena: make([]byte, 0, 64<<10)}
}

// Len returns the number of keys in the buffer. Task goroutine only.
func (b *writeBuffer) Len() int { return len(b.vals) }

// get returns key's tagged value, a slice of the arena valid until the
// next reset. Task goroutine only.
func (b *writeBuffer) get(key []byte) ([]byte, bool) {
	i, ok := b.index[string(key)]
	if !ok {
		return nil, false
	}
	sp := b.vals[i]
	return b.arena[sp.off : sp.off+sp.n : sp.off+sp.n], true
}

// getCopy is get for readers on other goroutines: the value (without its
// tag) is copied under the read lock.
func (b *writeBuffer) getCopy(key []byte) (value []byte, deleted, found bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	i, ok := b.index[string(key)]
	if !ok {
		return nil, false, false
	}
	sp := b.vals[i]
	if b.arena[sp.off] == bufTombstone {
		return nil, true, true
	}
	return append([]byte(nil), b.arena[sp.off+1:sp.off+sp.n]...), false, true
}

// put sets key to the tag and value. Task goroutine only.
func (b *writeBuffer) put(key []byte, tag byte, value []byte) error {
	if len(b.arena)+len(key)+1+len(value) > maxBufferBytes {
		return fmt.Errorf("write buffer holds %d bytes, the most one commit can carry: commit more often", len(b.arena))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	i, ok := b.index[string(key)]
	if !ok {
		off := len(b.arena)
		b.arena = append(b.arena, key...)
		// The key's string shares the arena's bytes: no allocation per key,
		// and the arena's bytes never change until reset, which clears the
		// index first.
		k := unsafe.String(unsafe.SliceData(b.arena[off:]), len(key))
		if len(key) == 0 {
			k = ""
		}
		i = int32(len(b.vals))
		b.index[k] = i
		b.keys = append(b.keys, k)
		b.vals = append(b.vals, bufSpan{})
	}
	off := len(b.arena)
	b.arena = append(b.arena, tag)
	b.arena = append(b.arena, value...)
	b.vals[i] = bufSpan{off: uint32(off), n: uint32(len(b.arena) - off)}
	return nil
}

// each calls fn with every key and its tagged value, in no particular
// order (a LevelDB batch needs none). Task goroutine only.
func (b *writeBuffer) each(fn func(key string, tagged []byte)) {
	for k, i := range b.index {
		sp := b.vals[i]
		fn(k, b.arena[sp.off:sp.off+sp.n])
	}
}

// keySpan is a buffer's key and where its tagged value is (appendSorted).
type keySpan struct {
	key string
	sp  bufSpan
}

// appendSorted appends the buffer's keys with their values' spans to dst,
// in key order, to be written to LevelDB in that order (batchSorter says
// why). It reads the index and never reorders keys. So a commit writing a
// frozen buffer may call it while the task goroutine sorts that buffer's
// keys for a scan: a frozen buffer's index does not change.
func (b *writeBuffer) appendSorted(dst []keySpan) []keySpan {
	n := len(dst)
	for k, i := range b.index {
		dst = append(dst, keySpan{k, b.vals[i]})
	}
	slices.SortFunc(dst[n:], func(x, y keySpan) int { return strings.Compare(x.key, y.key) })
	return dst
}

// tagged returns the tagged value at sp, a slice of the arena.
func (b *writeBuffer) tagged(sp bufSpan) []byte { return b.arena[sp.off : sp.off+sp.n] }

// reset empties the buffer, keeping its memory for the next writes. The
// caller makes sure no reader holds slices of it (latest.go).
func (b *writeBuffer) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.index)
	clear(b.keys) // let the strings go: they point into the arena
	b.keys, b.vals, b.arena, b.sorted = b.keys[:0], b.vals[:0], b.arena[:0], 0
}

// insertSortedMax is the most new keys sortKeys inserts one by one (a
// binary search and a move of the string headers after it); more are
// sorted and merged.
const insertSortedMax = 8

// sortKeys puts keys in order: the keys added since the last sort are
// sorted and merged into the sorted prefix, O(n + m log m) for m new keys;
// up to insertSortedMax of them are inserted by binary search, which moves
// the headers after each but compares only log n keys. A task scanning
// after every record or two (a windowed aggregation) takes the second way.
// Task goroutine only; it changes keys under the lock.
func (b *writeBuffer) sortKeys() {
	if b.sorted == len(b.keys) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := len(b.keys) - b.sorted; m <= insertSortedMax {
		var add [insertSortedMax]string
		n := copy(add[:], b.keys[b.sorted:])
		b.keys = b.keys[:b.sorted]
		for _, k := range add[:n] {
			i, _ := slices.BinarySearch(b.keys, k)
			b.keys = slices.Insert(b.keys, i, k)
		}
		b.sorted = len(b.keys)
		return
	}
	old, tail := b.keys[:b.sorted], b.keys[b.sorted:]
	slices.Sort(tail)
	if len(old) > 0 && len(tail) > 0 && old[len(old)-1] > tail[0] {
		b.scratch = append(b.scratch[:0], old...)
		i, j, k := 0, 0, 0
		for i < len(b.scratch) && j < len(tail) {
			if b.scratch[i] <= tail[j] {
				b.keys[k], i = b.scratch[i], i+1
			} else {
				b.keys[k], j = tail[j], j+1
			}
			k++
		}
		// What is left of tail is in place already; what is left of the
		// copy of old goes at the end.
		k += copy(b.keys[k:], b.scratch[i:])
		clear(b.scratch)
	}
	b.sorted = len(b.keys)
}

// appendRange appends to dst the buffer's entries with keys in [start,
// end), in key order; nil bounds are open. Their slices point into the
// arena. The task goroutine calls it with sorted true, after sortKeys. A
// reader on another goroutine must not reorder keys: it passes false, and
// the entries are sorted in dst.
func (b *writeBuffer) appendRange(dst []Entry, start, end []byte, sorted bool) []Entry {
	if !sorted {
		b.mu.RLock()
		defer b.mu.RUnlock()
	}
	ks := b.keys
	if sorted {
		lo, hi := 0, len(ks)
		if start != nil {
			lo, _ = slices.BinarySearch(ks, string(start))
		}
		if end != nil {
			hi, _ = slices.BinarySearch(ks, string(end))
		}
		ks = ks[lo:max(lo, hi)]
	}
	n := len(dst)
	for _, k := range ks {
		if !sorted && !inRange(k, start, end) {
			continue
		}
		sp := b.vals[b.index[k]]
		v := b.arena[sp.off : sp.off+sp.n]
		dst = append(dst, Entry{Key: unsafe.Slice(unsafe.StringData(k), len(k)), Value: v[1:], Deleted: v[0] == bufTombstone})
	}
	if !sorted {
		slices.SortFunc(dst[n:], func(a, b Entry) int { return bytes.Compare(a.Key, b.Key) })
	}
	return dst
}

func inRange(k string, start, end []byte) bool {
	return (start == nil || strings.Compare(k, string(start)) >= 0) && (end == nil || strings.Compare(k, string(end)) < 0)
}
