package state

import (
	"bytes"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb/iterator"
)

// Latest reads: what other goroutines see of an active task's write
// buffer.
//
// The task's goroutine owns DB.buf, a writeBuffer (buffer.go), and is its
// only writer. It takes the buffer's mutex for the few instructions of a
// Put and reads without it. Readers on other goroutines reach the same
// buffer through DB.shared, an atomic pointer, and read it under the
// buffer's read lock. A Get holds it for one map lookup and a copy. A scan
// holds it while it collects its range's entries: slices of the arena,
// still valid after the lock is released, as the arena is append-only. A
// reader never holds up the writer for longer than that, and the
// per-record path pays one uncontended lock per write.
//
// The one hazard is reuse. A scan's entries are slices of the arena, and
// reset, after a commit or an abort, lets the next writes overwrite that
// arena. So a buffer is never reset under a reader. A reader counts itself
// in DB.readers before it loads DB.shared, and counts itself out when it no
// longer needs the slices. To empty the buffer, the task goroutine first
// unpublishes it (shared = nil). Then it resets the buffer only if no
// reader is counted; otherwise it leaves the buffer to the garbage
// collector and starts a new one. Both sides use sequentially consistent
// atomics. So a reader that counted itself after the writer looked finds
// shared nil, or the new buffer, and never touches the old one.
//
// A commit's cut (commit.go) publishes the cut buffer as the frozen one,
// DB.sharedCommitted, and marks it unwritten. Only then does it publish a
// new write buffer. The reuse rule covers both pointers, with one count of
// readers.
//
// Freshness and order: a reader loads the write buffer, then the frozen
// one, then reads LevelDB. A write moves the other way: buffer, cut to
// frozen, written to LevelDB. A reader that got the old write buffer finds
// its values there. One that got the new one finds them in the frozen
// buffer, published before it. One that finds the frozen buffer written
// finds them in LevelDB, written before. Either way a reader never sees a
// value older than one it saw before.

// Entry is one key's latest write in a layer above a store (a task's
// record cache): a value, or a delete when Deleted.
type Entry struct {
	Key, Value []byte
	Deleted    bool
}

// LatestView reads a store's latest state: the active task's write buffer,
// its writes since the last commit, over the committed LevelDB data. On a
// task that is not active it reads what LevelDB holds: for a standby, what
// it has applied of the changelog. It is safe for concurrent use and never
// blocks the task.
type LatestView struct {
	s *DB
}

// Latest returns the store's latest view: for HTTP queries at
// isolation=latest under at-least-once. Under exactly-once the buffer
// belongs to an open transaction and such reads must not use it.
func (s *DB) Latest() *LatestView { return &LatestView{s: s} }

// Get returns the latest value of key: the write buffer's, else the
// committed one.
func (v *LatestView) Get(key []byte) (value []byte, found bool, err error) {
	s := v.s
	s.readers.Add(1)
	for _, p := range [2]*atomic.Pointer[writeBuffer]{&s.shared, &s.sharedCommitted} {
		if b := p.Load(); b != nil {
			if val, deleted, ok := b.getCopy(key); ok {
				s.readers.Add(-1)
				return val, !deleted, nil
			}
		}
	}
	s.readers.Add(-1)
	return s.view.Get(key)
}

// Scan calls fn for each key in [start, end) in key order, as the store's
// latest state has it, until fn returns false; nil bounds are open. Each
// value is one the key had while the scan ran: the buffer is read as it
// changes, not as one snapshot across keys. The slices are valid only
// during the call.
func (v *LatestView) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	return v.ScanOver(start, end, nil, fn)
}

// ScanOver is Scan with a layer above the write buffer. The entries of
// over win over the buffer and LevelDB, and its deletes hide their keys
// there. over must be sorted by key, with no key twice and every key in
// [start, end). The processor passes its record cache's entries of the
// store.
func (v *LatestView) ScanOver(start, end []byte, over []Entry, fn func(key, value []byte) bool) error {
	s := v.s
	s.readers.Add(1)
	defer s.readers.Add(-1)
	// Both before LevelDB: see the top of this file. A written frozen
	// buffer has nothing LevelDB lacks: scanning it would only cost.
	buf := s.shared.Load()
	var frozen *writeBuffer
	if s.unwritten.Load() {
		frozen = s.sharedCommitted.Load()
	}
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.db == nil {
		return ErrTaskClosed
	}
	cs := make([]cursor, 0, 4)
	if len(over) > 0 {
		cs = append(cs, &entryCursor{es: over, i: -1})
	}
	for _, b := range [2]*writeBuffer{buf, frozen} {
		// The entries point into the buffer's arena, which is not reset
		// while this reader is counted.
		if b == nil {
			continue
		}
		if es := b.appendRange(nil, start, end, false); len(es) > 0 {
			cs = append(cs, &entryCursor{es: es, i: -1})
		}
	}
	dbIt := s.db.NewIterator(dataRangeFor(start, end), nil)
	defer dbIt.Release()
	cs = append(cs, dbCursor{dbIt})
	merge(cs, fn)
	if err := dbIt.Error(); err != nil {
		return s.task.storageErr(s, "scan", err)
	}
	return nil
}

// setBuffer gives the task's goroutine b as its write buffer, nil for
// none, and publishes it to latest readers. It drops the frozen buffer:
// setBuffer starts or ends the active path, and while the task is not
// active, restore or tailing may change LevelDB apart from it.
func (s *DB) setBuffer(b *writeBuffer) {
	s.dropCommitted()
	s.buf = b
	s.shared.Store(b)
}

// dropCommitted leaves the frozen buffer to the garbage collector: a
// reader may still hold it.
func (s *DB) dropCommitted() {
	s.sharedCommitted.Store(nil)
	s.unwritten.Store(false)
	s.committed = nil
}

// rotateBuffer cuts the write buffer: it becomes the frozen one,
// DB.committed, marked unwritten. The buffer that was frozen becomes the
// next write buffer, emptied if no latest reader may still hold its slices
// (see the top of this file).
//
// The frozen buffer is published and marked unwritten before the new write
// buffer is. A scan that loads the new, empty buffer then finds the mark
// and reads the frozen one; were the mark set after, such a scan could
// read the previous commit's values from LevelDB.
// TestLatestScanAtTheCutSeesTheCutBuffer scans at that moment.
func (s *DB) rotateBuffer() {
	if s.buf == nil || s.buf.Len() == 0 {
		return
	}
	next := s.committed
	s.committed = s.buf
	s.sharedCommitted.Store(s.buf) // before the new buffer: see the top
	s.unwritten.Store(true)        // likewise
	if next != nil && s.readers.Load() == 0 {
		next.reset()
	} else {
		next = newWriteBuffer()
	}
	s.buf = next
	s.shared.Store(next)
	if s.afterRotate != nil {
		s.afterRotate()
	}
}

// clearBuffer empties the write buffer after an abort dropped it, or after
// a cut added it to the frozen one. It never reuses an arena a latest
// reader may still be reading (see the top of this file).
func (s *DB) clearBuffer() {
	if s.buf == nil || s.buf.Len() == 0 {
		return
	}
	s.shared.Store(nil)
	if s.readers.Load() == 0 {
		s.buf.reset()
	} else {
		s.buf = newWriteBuffer()
	}
	s.shared.Store(s.buf)
}

// cursor is one sorted source of a merged scan.
type cursor interface {
	next() bool
	key() []byte
	value() (v []byte, deleted bool)
}

// dbCursor walks LevelDB's data keys (their prefix byte stripped).
type dbCursor struct{ it iterator.Iterator }

func (c dbCursor) next() bool            { return c.it.Next() }
func (c dbCursor) key() []byte           { return c.it.Key()[1:] }
func (c dbCursor) value() ([]byte, bool) { return c.it.Value(), false }

// entryCursor walks a sorted slice of entries.
type entryCursor struct {
	es []Entry
	i  int
}

func (c *entryCursor) next() bool            { c.i++; return c.i < len(c.es) }
func (c *entryCursor) key() []byte           { return c.es[c.i].Key }
func (c *entryCursor) value() ([]byte, bool) { return c.es[c.i].Value, c.es[c.i].Deleted }

// merge walks cs together in key order, until fn returns false or every
// cursor is done. It calls fn with each key's value from the first cursor
// in cs that has the key: cs is ordered highest precedence first. Keys
// whose winning entry is a delete are skipped. The callers check their
// iterators' errors.
func merge(cs []cursor, fn func(k, v []byte) bool) {
	ok := make([]bool, len(cs))
	for i, c := range cs {
		ok[i] = c.next()
	}
	for {
		top := -1
		for i, c := range cs {
			// Strictly less: among equal keys the earliest cursor wins.
			if ok[i] && (top < 0 || bytes.Compare(c.key(), cs[top].key()) < 0) {
				top = i
			}
		}
		if top < 0 {
			return
		}
		k := cs[top].key()
		if v, del := cs[top].value(); !del && !fn(k, v) {
			return
		}
		// The shadowed entries of k move on first: k is cs[top]'s.
		for i, c := range cs {
			if i != top && ok[i] && bytes.Equal(c.key(), k) {
				ok[i] = c.next()
			}
		}
		ok[top] = cs[top].next()
	}
}
