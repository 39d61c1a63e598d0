package processor

import (
	"bytes"
	"math"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/state"
)

// recordCache is a task's record cache (statestore.cache.max.bytes, Kafka
// Streams' name): within a commit interval, the writes to one key of a store,
// and the emits of one key to an output, are merged so that only the last
// reaches the changelog and the output. Reads see it. It is flushed whole
// before every commit (so the commit covers it), and dropped with the task's
// other uncommitted work.
//
// When it outgrows its budget it evicts the least-recently-written entry,
// one at a time, until it fits again: the evicted key's latest value is
// written through exactly as a flush would write it (to the store's write
// buffer and changelog, or to the output). A hot key is rewritten often, so
// it stays near the most-recent end and keeps merging its writes even when
// a flood of cold keys, far more than the budget holds, passes through.
// Flushing whole instead (what this cache did first) merged nothing once
// the key set outgrew it: every flush emptied the hot keys with the cold.
//
// # Layout and allocations
//
// Entries live in one slice of slots, linked into a doubly linked list by
// index (head: most recently written; tail: least), and found through one
// map per target from key to slot index. Evicted and flushed slots go on a
// free list and keep their value buffers, so in steady state (a cold-key
// flood evicting as fast as it inserts) a new key costs one allocation (its
// map key string) and a rewrite of a cached key costs none: its value is
// copied into the slot's own buffer. A lookup converts the key in place
// (m[string(b)] does not allocate). Freed slots' buffers are not counted in
// the budget; they are at most one value each (of at most maxKeptValue
// bytes), for at most as many slots as the budget ever held at once.
//
// # Concurrency
//
// The task's goroutine (or a commit holding the task's mu, task.go, while
// the task is paused between records) is the one writer. Queries at
// isolation=latest read the cache from other goroutines (lookup, collect):
// mu guards every field against them. The writer takes mu only to change
// the cache, once per record's writes (apply) and once per eviction or
// drain, never across I/O, and reads it without mu (only it writes); a
// reader holds mu for one map lookup and a copy, or, in a scan, for one
// chunk of collectChunk slots, so it never holds up the record loop for
// longer than that. Uncontended, mu costs the per-record path one lock
// and unlock.
//
// An entry leaves the cache only after it is written through (to the
// store's write buffer, which latest readers see too): evict and drain
// first hand the entries to the write-through and then remove them under
// mu. A latest reader looking in the cache, then in the write buffer, then
// in LevelDB (the order an entry moves in) therefore always finds a key's
// latest value, or a newer one, in one of them.
type recordCache struct {
	// mu guards everything below against readers on other goroutines;
	// the writer holds it while it changes them (see above).
	mu     sync.Mutex
	closed bool // the task's stores are closed: readers fail

	budget int64
	size   int64 // sum of entrySize over the live entries
	live   int
	// index is, per target, key -> slot index of the live entries.
	index []map[string]int32
	slots []cacheSlot
	// head is the most recently written live slot, tail the least; free
	// is the first free slot (linked by next). nilSlot when none.
	head, tail, free int32
	// scratch holds the key handed to a write-through, so that it needs
	// no allocation (the store and the producer copy it).
	scratch []byte
}

// cacheSlot is one entry: the latest write to key of target, a store or an
// output (by index; outputs after stores).
type cacheSlot struct {
	target int
	key    string
	value  []byte // never nil while live unless del: empty is not a delete
	del    bool   // a delete (store) or a tombstone (output)
	hdrs   []kgo.RecordHeader
	prev   int32 // toward head
	next   int32 // toward tail, or the next free slot
}

// nilSlot marks the end of a list.
const nilSlot int32 = -1

// cacheOverhead approximates an entry's bookkeeping bytes beyond its key
// and value: its slot (about 90 bytes) and its map entry.
const cacheOverhead = 128

// maxKeptValue is the largest value buffer a freed slot keeps for reuse.
const maxKeptValue = 4 << 10

// cacheFlushFunc writes one entry through: value is nil for a delete or a
// tombstone. key and value are only valid during the call.
type cacheFlushFunc func(target int, key, value []byte, headers []kgo.RecordHeader) error

func newRecordCache(budget int64) *recordCache {
	return &recordCache{budget: budget, head: nilSlot, tail: nilSlot, free: nilSlot}
}

// entrySize is what an entry counts against the budget.
func entrySize(key string, value []byte) int64 {
	return int64(len(key)+len(value)) + cacheOverhead
}

// put records a write, copying key and value out of the caller's buffer
// (value nil: a delete or tombstone), and makes key the most recently
// written. The caller holds mu. It may leave the cache over budget: the
// caller evicts, after the record's writes are all in.
func (c *recordCache) put(target int, key, value []byte, headers []kgo.RecordHeader) {
	for len(c.index) <= target {
		c.index = append(c.index, make(map[string]int32))
	}
	m := c.index[target]
	i, ok := m[string(key)]
	if ok {
		s := &c.slots[i]
		c.size -= entrySize(s.key, s.value)
		c.unlink(i)
	} else {
		i = c.alloc()
		s := &c.slots[i]
		s.target, s.key = target, string(key)
		m[s.key] = i
		c.live++
	}
	s := &c.slots[i]
	s.del = value == nil
	s.value = append(s.value[:0], value...)
	if s.value == nil && !s.del {
		s.value = []byte{} // an empty value, not a delete
	}
	s.hdrs = headers
	c.size += entrySize(s.key, s.value)
	c.pushHead(i)
}

// over reports whether the cache holds more than its budget.
func (c *recordCache) over() bool { return c.size > c.budget }

// get returns a store's cached value of key: found reports whether the
// cache has the key at all, and value is nil for a cached delete. value is
// the cache's: valid until the next put. For the writer only (no mu).
func (c *recordCache) get(target int, key []byte) (value []byte, found bool) {
	if target >= len(c.index) {
		return nil, false
	}
	i, ok := c.index[target][string(key)]
	if !ok {
		return nil, false
	}
	s := &c.slots[i]
	if s.del {
		return nil, true
	}
	return s.value, true
}

// evict writes through the least-recently-written entries, one at a time,
// until the cache is within its budget, and then removes them (under mu:
// latest readers find them in the cache until the write buffer has them).
// On an error the entries handed on so far, the failed one included, are
// gone anyway: the caller fails the task, which drops its uncommitted
// work.
func (c *recordCache) evict(fn cacheFlushFunc) error {
	_, err := c.writeOldest(math.MaxInt, c.budget, fn)
	return err
}

// writeOldest writes entries through, least recently written first, until
// it has written most of them or what is left counts at most toSize
// against the budget, and then removes them (under mu: latest readers see
// an entry until it is removed, and LevelDB's buffer has it by then). An
// entry whose write failed is removed too: the caller fails the task. It
// returns how many entries are left.
func (c *recordCache) writeOldest(most int, toSize int64, fn cacheFlushFunc) (left int, err error) {
	n, size := 0, c.size
	for i := c.tail; i != nilSlot && n < most && size > toSize; i = c.slots[i].prev {
		size -= entrySize(c.slots[i].key, c.slots[i].value)
		n++
		if err = c.writeThrough(i, fn); err != nil {
			break
		}
	}
	c.mu.Lock()
	for ; n > 0; n-- {
		c.remove(c.tail)
	}
	left = c.live
	c.mu.Unlock()
	return left, err
}

// entries returns how many entries the cache holds, for another goroutine
// than the writer's.
func (c *recordCache) entries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

// drainSome writes at most n entries through, least recently written
// first, and removes them, as evict does; it returns how many are left.
// The commit writes a cache through this way in chunks before its cut, so
// that the task, paused only for a chunk at a time, processes on between
// them (commit.go).
func (c *recordCache) drainSome(n int, fn cacheFlushFunc) (left int, err error) {
	return c.writeOldest(n, -1, fn)
}

// drain writes every entry through, least recently written first, and
// empties the cache. It stops at the first error, keeping nothing: the
// caller fails the task.
func (c *recordCache) drain(fn cacheFlushFunc) error {
	var err error
	for i := c.tail; i != nilSlot; i = c.slots[i].prev {
		if err = c.writeThrough(i, fn); err != nil {
			break
		}
	}
	c.mu.Lock()
	c.reset()
	c.mu.Unlock()
	return err
}

// writeThrough hands live slot i's entry to fn, leaving it in place.
func (c *recordCache) writeThrough(i int32, fn cacheFlushFunc) error {
	s := &c.slots[i]
	c.scratch = append(c.scratch[:0], s.key...)
	value := s.value
	if s.del {
		value = nil
	}
	return fn(s.target, c.scratch, value, s.hdrs)
}

// remove takes live slot i out of the cache; the caller holds mu.
func (c *recordCache) remove(i int32) {
	s := &c.slots[i]
	c.unlink(i)
	delete(c.index[s.target], s.key)
	c.size -= entrySize(s.key, s.value)
	c.live--
	c.release(i)
}

// reset empties the cache, keeping its slots' buffers for reuse; the
// caller holds mu.
func (c *recordCache) reset() {
	for c.tail != nilSlot {
		i := c.tail
		c.unlink(i)
		c.release(i)
	}
	for _, m := range c.index {
		clear(m)
	}
	c.size, c.live = 0, 0
}

// close empties the cache for good: its task's stores are closed, and
// latest readers on other goroutines get state.ErrTaskClosed from now on.
func (c *recordCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.reset()
}

// lookup is get for a reader on another goroutine: under mu, the value
// copied. found reports whether the cache has the key at all (value nil:
// a cached delete).
func (c *recordCache) lookup(target int, key []byte) (value []byte, found bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, false, state.ErrTaskClosed
	}
	v, found := c.get(target, key)
	if v != nil {
		v = append([]byte{}, v...) // empty stays non-nil: not a delete
	}
	return v, found, nil
}

// collectChunk is how many slots collect reads per hold of mu.
const collectChunk = 256

// collect returns copies of target's entries with keys in [start, end)
// (nil bounds are open), sorted by key, for a reader on another goroutine.
// It walks the slots in chunks, taking mu per chunk, so that a large cache
// never holds up the writer for longer than one chunk. An entry written
// while it walks may be missed (its slot was read already) or seen with
// its older value: each key's value is one it had during the walk, and an
// entry the walk missed because it was evicted meanwhile is in the write
// buffer, which the caller reads after.
func (c *recordCache) collect(target int, start, end []byte) ([]state.Entry, error) {
	var out []state.Entry
	for from := 0; ; from += collectChunk {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, state.ErrTaskClosed
		}
		n := len(c.slots)
		for i := from; i < min(n, from+collectChunk); i++ {
			s := &c.slots[i]
			if s.target != target || !c.isLive(int32(i)) {
				continue
			}
			if (start != nil && s.key < string(start)) || (end != nil && s.key >= string(end)) {
				continue
			}
			e := state.Entry{Key: []byte(s.key), Deleted: s.del}
			if !s.del {
				e.Value = append([]byte{}, s.value...)
			}
			out = append(out, e)
		}
		c.mu.Unlock()
		if from+collectChunk >= n {
			break
		}
	}
	slices.SortFunc(out, func(a, b state.Entry) int { return bytes.Compare(a.Key, b.Key) })
	// A key seen twice (rewritten into another slot during the walk)
	// keeps one entry: either value is one it had.
	return slices.CompactFunc(out, func(a, b state.Entry) bool { return bytes.Equal(a.Key, b.Key) }), nil
}

// isLive reports whether slot i holds a live entry (not on the free list);
// the caller holds mu.
func (c *recordCache) isLive(i int32) bool {
	if c.slots[i].target >= len(c.index) {
		return false
	}
	j, ok := c.index[c.slots[i].target][c.slots[i].key]
	return ok && j == i
}

// alloc returns a free slot, growing the slice when none is free.
func (c *recordCache) alloc() int32 {
	if i := c.free; i != nilSlot {
		c.free = c.slots[i].next
		return i
	}
	c.slots = append(c.slots, cacheSlot{})
	return int32(len(c.slots) - 1)
}

// release puts an unlinked slot on the free list, dropping its key and
// headers but keeping its value buffer.
func (c *recordCache) release(i int32) {
	s := &c.slots[i]
	s.key, s.hdrs, s.value = "", nil, s.value[:0]
	if cap(s.value) > maxKeptValue {
		s.value = nil // a rare large value is not worth keeping
	}
	s.next, s.prev = c.free, nilSlot
	c.free = i
}

// pushHead links slot i in as the most recently written.
func (c *recordCache) pushHead(i int32) {
	s := &c.slots[i]
	s.prev, s.next = nilSlot, c.head
	if c.head != nilSlot {
		c.slots[c.head].prev = i
	} else {
		c.tail = i
	}
	c.head = i
}

// unlink takes live slot i out of the recency list.
func (c *recordCache) unlink(i int32) {
	s := &c.slots[i]
	if s.prev != nilSlot {
		c.slots[s.prev].next = s.next
	} else {
		c.head = s.next
	}
	if s.next != nilSlot {
		c.slots[s.next].prev = s.prev
	} else {
		c.tail = s.prev
	}
	s.prev, s.next = nilSlot, nilSlot
}
