package state

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/iterator"
)

// CommittedView reads a store's committed data: what Task.Commit and the
// apply path wrote to LevelDB, never an open write buffer. It is safe for
// concurrent use, and is what HTTP queries read.
type CommittedView struct {
	s *DB
}

// Get returns the committed value of key.
func (v *CommittedView) Get(key []byte) (value []byte, found bool, err error) {
	v.s.dbMu.RLock()
	defer v.s.dbMu.RUnlock()
	if v.s.db == nil {
		return nil, false, ErrTaskClosed
	}
	k := appendDataKey(make([]byte, 0, len(key)+1), key)
	val, err := v.s.db.Get(k, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, v.s.task.storageErr(v.s, "get", err)
	}
	return val, true, nil
}

// Scan calls fn for each committed key in [start, end) in key order, until
// fn returns false; nil bounds are open. It reads a consistent snapshot.
// The slices are valid only during the call.
func (v *CommittedView) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	v.s.dbMu.RLock()
	defer v.s.dbMu.RUnlock()
	if v.s.db == nil {
		return ErrTaskClosed
	}
	it := v.s.db.NewIterator(dataRangeFor(start, end), nil)
	defer it.Release()
	return v.scanIter(it, fn)
}

func (v *CommittedView) scanIter(it iterator.Iterator, fn func(k, v []byte) bool) error {
	for it.Next() {
		if !fn(it.Key()[1:], it.Value()) {
			break
		}
	}
	if err := it.Error(); err != nil {
		return v.s.task.storageErr(v.s, "scan", err)
	}
	return nil
}

// ApproximateCount estimates the number of committed keys. LevelDB keeps
// no count, so the store counts its keys once, with a keys-only scan. Then
// it adds puts and subtracts deletes as they are applied. Overwrites make
// the estimate drift upward; it is recounted when the drift may exceed an
// eighth of the count.
func (v *CommittedView) ApproximateCount() int64 {
	v.s.dbMu.RLock()
	defer v.s.dbMu.RUnlock()
	if v.s.db == nil {
		return 0
	}
	return v.s.count.get(v.s)
}

// approxCount is the state behind ApproximateCount.
type approxCount struct {
	mu      sync.Mutex
	counted bool
	base    int64
	delta   atomic.Int64 // puts - deletes since the count
	changes atomic.Int64 // puts + deletes since the count
}

func (c *approxCount) add(puts, deletes int64) {
	c.delta.Add(puts - deletes)
	c.changes.Add(puts + deletes)
}

func (c *approxCount) get(s *DB) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.counted || c.changes.Load() > c.base/8+1024 {
		it := s.db.NewIterator(&dataRange, nil)
		var n int64
		// Deltas racing with the scan may be counted twice or not at all:
		// that is within "approximate".
		c.delta.Store(0)
		c.changes.Store(0)
		for it.Next() {
			n++
		}
		it.Release()
		c.base, c.counted = n, true
	}
	return max(0, c.base+c.delta.Load())
}
