package processor

import (
	"bytes"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/state"
)

// recordCache is a task's record cache (statestore.cache.max.bytes, Kafka
// Streams' name). Within a commit interval it merges the writes to one key
// of a store, and the emits of one key to an output: only the last reaches
// the changelog or the output. Reads of the task and of latest queries see
// it. The whole cache is written through before every commit, so the
// commit covers it. Uncommitted entries are dropped with the task's other
// uncommitted work.
//
// A store's entry stays in the cache after it is written through, marked
// clean, until the budget needs its room. A clean entry always holds the
// value the store has: every write of the task goes through the cache, and
// dropped work drops the task and its cache together. Keeping it saves the
// next read of that key a trip to the write buffer or LevelDB.
//
// An output's entry has nothing to be read. Once written through it stays
// as a spent entry: its key alone, value dropped, invisible to get. The
// key's next emit reuses the slot instead of deleting and reinserting the
// map key at every commit (docs/lab/cache.md).
//
// The cache stays within its budget. When it outgrows the budget it drops
// entries in this order, least recently written first within each kind:
// spent entries, then clean ones, then dirty ones one at a time. An evicted
// dirty entry is written through exactly as a flush would write it. A hot
// key is rewritten often, so it stays near the most recent end and keeps
// merging its writes under a flood of cold keys.
//
// # Layout and allocations
//
// Entries live in one slice of slots. Each live slot is on one of three
// recency lists (dirty, clean, spent), linked by index, head the most
// recently written. One map per target finds a key's slot. Freed slots go
// on a free list and keep their value buffers. In steady state a new key
// costs one allocation, its map key string, and a rewrite of a cached key
// costs none. A lookup converts the key in place, which does not allocate.
// Freed buffers are not counted in the budget. Each holds at most
// maxKeptValue bytes, for at most as many slots as the budget ever held.
//
// # Concurrency
//
// The task's goroutine is the one writer. A commit also writes, holding the
// task's mu while the task is paused between records (task.go). Latest
// queries read from other goroutines (lookup, collect), so mu guards every
// field. The writer takes mu only to change the cache and never across
// I/O. It takes it once per record's writes (apply) and once per eviction
// or drain. It reads without mu, since only it writes. A reader holds mu
// for one map lookup and a copy, or for one chunk of collectChunk slots in
// a scan. So a reader never holds up the record loop for longer than that.
//
// An entry leaves the cache only after it is written through to the
// store's write buffer, which latest readers see too. evict writes dirty
// entries through and then removes them under mu; drain marks them clean
// after writing them through. A clean entry was written through when it
// became clean. A latest reader looks in the cache, then the write buffer,
// then LevelDB, the order an entry moves in. So it always finds a key's
// latest value, or a newer one, in one of them.
type recordCache struct {
	// mu guards everything below against readers on other goroutines;
	// the writer holds it while it changes them (see above).
	mu     sync.Mutex
	closed bool // the task's stores are closed: readers fail

	budget atomic.Int64 // set by the member as tasks come and go (shareCache)
	stores int          // targets below it are stores (whose entries stay clean), the rest outputs
	size   int64        // sum of entrySize over the live entries
	live   int          // live entries, dirty and clean
	dirty  int          // live entries not yet written through
	// index is, per target, key -> slot index of the live entries.
	index []map[string]int32
	slots []cacheSlot
	// lists are the dirty entries', the stores' clean ones' and the
	// outputs' spent ones' recency lists (listDirty, listClean,
	// listSpent); free is the first free slot (linked by next), nilSlot
	// when none.
	lists [3]cacheList
	free  int32
	// scratch holds the key handed to a write-through, so that it needs
	// no allocation (the store and the producer copy it).
	scratch []byte
	// last is the slot the writer's last get found, or that its last put
	// of another key than last's wrote (put), nilSlot at first; the
	// writer's alone.
	last int32
}

// cacheSlot is one entry: the latest write to key of target, a store or an
// output (by index; outputs after stores).
type cacheSlot struct {
	target int
	key    string
	value  []byte // never nil while live unless del: empty is not a delete
	del    bool   // a delete (store) or a tombstone (output)
	clean  bool   // written through since its last write: on listClean (a store's) or listSpent (an output's)
	hdrs   []kgo.RecordHeader
	prev   int32 // toward head
	next   int32 // toward tail, or the next free slot
	// twin is the slot of the same key in the target a put of it
	// followed this one's with (a count's output after its store), for
	// that put to find without a lookup; a hint, checked before use.
	twin int32
}

// cacheList is a recency list: head the most recently written slot, tail
// the least, nilSlot when empty.
type cacheList struct{ head, tail int32 }

// The lists.
const (
	listDirty = 0
	listClean = 1
	listSpent = 2
)

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

func newRecordCache(budget int64, stores int) *recordCache {
	c := &recordCache{stores: stores, free: nilSlot, last: nilSlot}
	c.budget.Store(budget)
	for l := range c.lists {
		c.lists[l] = cacheList{nilSlot, nilSlot}
	}
	return c
}

// listOf returns the list slot i is on.
func (c *recordCache) listOf(i int32) *cacheList {
	switch s := &c.slots[i]; {
	case !s.clean:
		return &c.lists[listDirty]
	case s.target >= c.stores:
		return &c.lists[listSpent]
	}
	return &c.lists[listClean]
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
	// A handler typically reads a key, writes it back and emits it. The
	// read's slot (last) saves the write a second hash lookup. Its twin,
	// the slot of the same key that the last emit after it wrote, saves
	// the emit one too. A slot freed since has target -1, and one reused
	// holds another key: then the map decides. Only live slots have a
	// target, and a target's live keys are unique, so a slot that passes
	// is the key's.
	l := c.last
	sameKey := l != nilSlot && c.slots[l].key == string(key)
	i, ok := nilSlot, false
	switch {
	case sameKey && c.slots[l].target == target:
		i, ok = l, true
	case sameKey && c.isSlotOf(c.slots[l].twin, target, key):
		i, ok = c.slots[l].twin, true
	default:
		i, ok = m[string(key)]
	}
	if ok {
		s := &c.slots[i]
		c.size -= entrySize(s.key, s.value)
		c.unlink(i)
		if s.clean {
			s.clean = false
			c.dirty++
		}
	} else {
		i = c.alloc()
		s := &c.slots[i]
		s.target, s.key, s.clean, s.twin = target, string(key), false, nilSlot
		if sameKey {
			s.key = c.slots[l].key // one copy of the key's bytes for both
		}
		m[s.key] = i
		c.live++
		c.dirty++
	}
	switch {
	case !sameKey:
		c.last = i // a new key's store write: its emit follows
	case i != l:
		c.slots[l].twin = i
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
func (c *recordCache) over() bool { return c.size > c.budget.Load() }

// setBudget changes the budget, from any goroutine; the writer evicts to
// a smaller one after its next record's writes.
func (c *recordCache) setBudget(b int64) { c.budget.Store(b) }

// get returns a store's cached value of key: found reports whether the
// cache has the key at all, and value is nil for a cached delete. value is
// the cache's: valid until the next put. For the writer only (no mu): it
// remembers the slot for a put of the same key (last).
func (c *recordCache) get(target int, key []byte) (value []byte, found bool) {
	i, ok := c.find(target, key)
	if !ok || (c.slots[i].clean && target >= c.stores) { // absent, or an output's spent entry
		return nil, false
	}
	c.last = i
	s := &c.slots[i]
	if s.del {
		return nil, true
	}
	return s.value, true
}

// find returns the slot of key in target, if cached.
func (c *recordCache) find(target int, key []byte) (int32, bool) {
	if target >= len(c.index) {
		return nilSlot, false
	}
	i, ok := c.index[target][string(key)]
	return i, ok
}

// evict makes the cache fit its budget. It drops the outputs' spent entries
// and then the stores' clean ones, least recently written first. Then it
// writes through the least recently written dirty entries, one at a time,
// and removes them under mu, so latest readers find them in the cache
// until the write buffer has them. On an error the entries handed on so
// far, the failed one included, are gone anyway. The caller fails the
// task, which drops its uncommitted work.
func (c *recordCache) evict(fn cacheFlushFunc) error {
	budget := c.budget.Load()
	for _, l := range []int{listSpent, listClean} {
		if c.size <= budget || c.lists[l].tail == nilSlot {
			continue
		}
		c.mu.Lock()
		for c.size > budget && c.lists[l].tail != nilSlot {
			c.remove(c.lists[l].tail)
		}
		c.mu.Unlock()
	}
	n, size := 0, c.size
	var err error
	for i := c.lists[listDirty].tail; i != nilSlot && size > budget; i = c.slots[i].prev {
		size -= entrySize(c.slots[i].key, c.slots[i].value)
		n++
		if err = c.writeThrough(i, fn); err != nil {
			break
		}
	}
	if n > 0 {
		c.mu.Lock()
		for ; n > 0; n-- {
			c.remove(c.lists[listDirty].tail)
		}
		c.mu.Unlock()
	}
	return err
}

// entries returns how many dirty entries the cache holds (what a commit
// has to write through), for another goroutine than the writer's.
func (c *recordCache) entries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dirty
}

// drainSome writes at most n dirty entries through, least recently written
// first. A store's entries stay, clean; an output's stay, spent. It returns
// how many dirty entries are left. The commit writes a cache through this
// way in chunks before its cut, so the task, paused only for a chunk at a
// time, processes on between them (commit.go). On an error the cache is
// emptied, and the caller fails the task.
func (c *recordCache) drainSome(n int, fn cacheFlushFunc) (left int, err error) {
	done := 0
	for i := c.lists[listDirty].tail; i != nilSlot && done < n; i = c.slots[i].prev {
		if err = c.writeThrough(i, fn); err != nil {
			break
		}
		done++
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.reset()
		return 0, err
	}
	for ; done > 0; done-- {
		c.written(c.lists[listDirty].tail)
	}
	return c.dirty, nil
}

// drain writes every dirty entry through, least recently written first,
// leaving only clean entries (drainSome). On an error the cache is emptied.
func (c *recordCache) drain(fn cacheFlushFunc) error {
	_, err := c.drainSome(math.MaxInt, fn)
	return err
}

// written moves dirty slot i, just written through, to the clean list (a
// store's entry) or the spent one (an output's, its value dropped); the
// caller holds mu.
func (c *recordCache) written(i int32) {
	c.unlink(i)
	s := &c.slots[i]
	s.clean = true
	c.dirty--
	if s.target >= c.stores {
		c.size -= int64(len(s.value))
		s.value, s.del, s.hdrs = s.value[:0], false, nil
		if cap(s.value) > maxKeptValue {
			s.value = nil
		}
	}
	c.pushHead(i)
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
	if !s.clean {
		c.dirty--
	}
	c.release(i)
}

// reset empties the cache, keeping its slots' buffers for reuse; the
// caller holds mu.
func (c *recordCache) reset() {
	for l := range c.lists {
		for c.lists[l].tail != nilSlot {
			i := c.lists[l].tail
			c.unlink(i)
			c.release(i)
		}
	}
	for _, m := range c.index {
		clear(m)
	}
	c.size, c.live, c.dirty = 0, 0, 0
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
	var v []byte
	i, found := c.find(target, key)
	if found && !c.slots[i].del {
		v = c.slots[i].value
	}
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
// while it walks may be missed, its slot read already, or seen with its
// older value. Each key's value is one it had during the walk. An entry the
// walk missed because it was evicted meanwhile is in the write buffer,
// which the caller reads after.
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
			// A clean entry's value is the store's, which the caller
			// reads after: copying it would only cost the scan.
			if s.target != target || s.clean || !c.isLive(int32(i)) {
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

// isSlotOf reports whether slot i (nilSlot: no) is key's in target: a
// live slot (only those have a target) of target holding key, which only
// key's slot does.
func (c *recordCache) isSlotOf(i int32, target int, key []byte) bool {
	return i != nilSlot && c.slots[i].target == target && c.slots[i].key == string(key)
}

// isLive reports whether slot i holds a live entry (not on the free list);
// the caller holds mu.
func (c *recordCache) isLive(i int32) bool {
	if t := c.slots[i].target; t < 0 || t >= len(c.index) {
		return false // a free slot (release)
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
	s.key, s.hdrs, s.value, s.clean = "", nil, s.value[:0], false
	s.target = -1 // never the target of a put: last cannot find it
	if cap(s.value) > maxKeptValue {
		s.value = nil // a rare large value is not worth keeping
	}
	s.next, s.prev = c.free, nilSlot
	c.free = i
}

// pushHead links slot i in as the most recently written of its list.
func (c *recordCache) pushHead(i int32) {
	s, l := &c.slots[i], c.listOf(i)
	s.prev, s.next = nilSlot, l.head
	if l.head != nilSlot {
		c.slots[l.head].prev = i
	} else {
		l.tail = i
	}
	l.head = i
}

// unlink takes live slot i out of its recency list.
func (c *recordCache) unlink(i int32) {
	s, l := &c.slots[i], c.listOf(i)
	if s.prev != nilSlot {
		c.slots[s.prev].next = s.next
	} else {
		l.head = s.next
	}
	if s.next != nilSlot {
		c.slots[s.next].prev = s.prev
	} else {
		l.tail = s.prev
	}
	s.prev, s.next = nilSlot, nilSlot
}
