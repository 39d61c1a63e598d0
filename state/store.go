package state

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/internal/recarena"
)

// Buffered values carry a one-byte tag: a delete is buffered as a tombstone
// so that it hides the key in LevelDB until Commit.
const (
	bufTombstone byte = 0
	bufValue     byte = 1
)

// DB is one key-value store of one task: a LevelDB database, its
// changelog partition, and the task's write buffer for it while the task
// is active.
//
// Get, Put, Delete and Scan belong to the task's goroutine: they see the
// write buffer and are not safe for concurrent use. Other goroutines read
// through View, committed data only, or Latest, the write buffer over the
// committed data. Both are safe for concurrent use. Keys and values passed
// in are copied; values returned by Get are the caller's.
type DB struct {
	task      *Task
	name      string
	changelog string
	partition int32
	path      string
	ldb       LevelDBOptions

	// dbMu guards db against View readers on other goroutines while the
	// task's goroutine closes or wipes the store; the task's own methods
	// and the apply path never race with those.
	dbMu sync.RWMutex
	db   *leveldb.DB
	stor storage.Storage
	view CommittedView

	// checkpoint is the next changelog offset to read, as written to
	// LevelDB with the data it covers.
	checkpoint atomic.Int64
	// end is the last known end offset of the changelog partition, -1 when
	// unknown: the high watermark, or the last stable offset under
	// read_committed.
	end atomic.Int64

	// Active write path, owned by the task goroutine.
	buf     *writeBuffer
	scratch []byte
	recs    recarena.Arena // the changelog records, released in onProduced
	// shared is buf as latest readers on other goroutines see it, and
	// readers counts those reading it: a buffer is reset only when none
	// is (latest.go says why and how).
	shared  atomic.Pointer[writeBuffer]
	readers atomic.Int64
	// committed is the buffer the last commit cut (commit.go). Until
	// writeFrozen has written it to LevelDB, it holds writes LevelDB does
	// not have yet, and unwritten is set. Then, until the next cut, it is
	// a read cache of its keys. A key read and written every commit
	// interval, as a count is, is then read from memory rather than from
	// LevelDB, for the memory of one more interval's writes. Nothing
	// changes it between two cuts: the task's goroutine and the commit
	// read it without its lock. sharedCommitted is it as latest readers
	// see it.
	committed       *writeBuffer
	sharedCommitted atomic.Pointer[writeBuffer]
	unwritten       atomic.Bool
	// afterRotate, set by tests only, runs when rotateBuffer has published
	// the new write buffer: a latest scan at the cut's moment.
	afterRotate func()
	// produced counts the changelog records produced. The task goroutine
	// adds to it; a cut reads it with the task paused.
	produced atomic.Int64

	// Producer side, touched by kgo's promise goroutine: acked counts the
	// changelog records acknowledged or failed; cut is what the last cut
	// waits for (commit.go). The padding keeps the promise's counters off
	// the cache line of the task's produced: a line both goroutines write
	// per record would move between their cores with every record.
	_        [64]byte
	acked    atomic.Int64
	maxAcked atomic.Int64 // highest acknowledged changelog offset, -1 none
	cut      atomic.Pointer[ackCut]
	prodMu   sync.Mutex
	prodErr  error
	_        [64]byte
	promise  func(*kgo.Record, error)
	// commitBatch, writeScratch and writeOrder belong to writeFrozen, which
	// may run beside the task goroutine's writes; scratch is the task
	// goroutine's.
	commitBatch  *leveldb.Batch
	writeScratch []byte
	writeOrder   []keySpan

	// Apply path state, owned by the replicator goroutine while the store
	// is subscribed there (replicator.go).
	rep replicaState
	// stats are the values of the store's series (metrics.go).
	stats storeStats

	count approxCount
	// damaged is set once damage was found while the store is open
	// (markDamaged).
	damaged atomic.Bool
}

// Name returns the store's name.
func (s *DB) Name() string { return s.name }

// Task returns the id (partition slot) of the store's task.
func (s *DB) Task() int32 { return s.partition }

// Changelog returns the store's changelog topic; the store's partition of
// it is Task().
func (s *DB) Changelog() string { return s.changelog }

// LevelDB returns the LevelDB options the store was opened with: the
// Manager's, the StoreSpec's, or those a memory budget gave it (memory.go).
func (s *DB) LevelDB() LevelDBOptions { return s.ldb }

// Path returns the store's LevelDB directory.
func (s *DB) Path() string { return s.path }

// Checkpoint returns the next changelog offset this store will read: the
// last offset applied to LevelDB + 1 (0 for an empty store).
func (s *DB) Checkpoint() int64 { return s.checkpoint.Load() }

// Lag returns how many offsets the store is behind the last end offset seen
// for its changelog partition; it is never negative. It returns -1 when no
// end offset has been seen yet: the store has not restored or tailed since
// it was opened.
func (s *DB) Lag() int64 {
	end := s.end.Load()
	if end < 0 {
		return -1
	}
	return max(0, end-s.checkpoint.Load())
}

// Err returns the error that made the store's task unhealthy, nil while it
// is healthy: a failed LevelDB read or write, or a changelog produce error
// (Task.Err). A reader on another goroutine checks it before trusting what
// View returns: a failed store's data may be stale.
func (s *DB) Err() error { return s.task.Err() }

// View returns a read-only view of the store's committed data, safe for
// concurrent use by HTTP queries and metrics.
func (s *DB) View() *CommittedView { return &s.view }

// Get returns the value of key, seeing the task's uncommitted writes.
func (s *DB) Get(key []byte) (value []byte, found bool, err error) {
	for _, b := range [2]*writeBuffer{s.buf, s.committed} {
		if b == nil || b.Len() == 0 {
			continue
		}
		if v, ok := b.get(key); ok {
			if v[0] == bufTombstone {
				return nil, false, nil
			}
			return append([]byte(nil), v[1:]...), true, nil
		}
	}
	if s.db == nil {
		return nil, false, ErrTaskClosed
	}
	s.scratch = appendDataKey(s.scratch[:0], key)
	v, err := s.db.Get(s.scratch, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.task.storageErr(s, "get", err)
	}
	return v, true, nil
}

// Put sets key to value: in the write buffer, and as a record produced to
// the changelog, stamped with the time it is produced. The task must be
// active.
func (s *DB) Put(key, value []byte) error { return s.PutAt(key, value, time.Time{}) }

// PutAt is Put with the changelog record stamped ts; the zero time stamps
// it when it is produced. The processor stamps a write with the timestamp
// of the input record that made it, as Kafka Streams stamps its
// changelogs.
func (s *DB) PutAt(key, value []byte, ts time.Time) error {
	if value == nil {
		value = []byte{} // nil is the changelog's tombstone
	}
	return s.write(key, value, ts)
}

// Delete removes key: a tombstone in the write buffer and in the changelog.
// The task must be active.
func (s *DB) Delete(key []byte) error { return s.write(key, nil, time.Time{}) }

// DeleteAt is Delete with the changelog tombstone stamped ts (see PutAt).
func (s *DB) DeleteAt(key []byte, ts time.Time) error { return s.write(key, nil, ts) }

func (s *DB) write(key, value []byte, ts time.Time) error {
	t := s.task
	if t.producer == nil {
		return fmt.Errorf("state: write to store %s of task %d: task is %s, not active", s.name, s.partition, t.Role())
	}
	if err := t.Err(); err != nil {
		return err
	}
	tag := bufTombstone
	if value != nil {
		tag = bufValue
	}
	if err := s.buf.put(key, tag, value); err != nil {
		return fmt.Errorf("state: buffer write to store %s of task %d: %w", s.name, s.partition, err)
	}
	// The record outlives this call until the producer acknowledges it:
	// it and its key and value come from the store's arena.
	r := s.recs.New(key, value)
	r.Topic, r.Partition, r.Timestamp = s.changelog, s.partition, ts
	s.produced.Add(1)
	t.producer.Produce(t.ctx, r, s.promise)
	return nil
}

// onProduced is the changelog records' promise. franz-go calls promises
// serially, and for one partition in the order the records were produced.
// So when acked reaches the count a cut waits for, this record is the
// cut's last, and maxAcked is its offset.
func (s *DB) onProduced(r *kgo.Record, err error) {
	if err != nil {
		s.prodMu.Lock()
		if s.prodErr == nil {
			s.prodErr = fmt.Errorf("state: produce to changelog %s/%d: %w", s.changelog, s.partition, err)
		}
		s.prodMu.Unlock()
	} else {
		for {
			cur := s.maxAcked.Load()
			if r.Offset <= cur || s.maxAcked.CompareAndSwap(cur, r.Offset) {
				break
			}
		}
	}
	n := s.acked.Add(1)
	if c := s.cut.Load(); c != nil && n == c.target {
		c.fire(s.maxAcked.Load() + 1)
	}
	recarena.Release(r)
}

// unacknowledged returns the changelog records produced and not yet
// acknowledged.
func (s *DB) unacknowledged() int64 { return s.produced.Load() - s.acked.Load() }

func (s *DB) produceErr() error {
	s.prodMu.Lock()
	defer s.prodMu.Unlock()
	return s.prodErr
}

// writeBatch adds the checkpoint to b, writes it, resets b, and publishes
// the checkpoint. It is the one place data reaches LevelDB.
func (s *DB) writeBatch(b *leveldb.Batch, checkpoint int64) error {
	var ck [8]byte
	b.Put(checkpointKey, encodeOffset(ck[:0], checkpoint))
	err := s.db.Write(b, nil)
	// On failure the batch is dropped too. The checkpoint did not move, so
	// its records are still ahead of it: in the write buffer, or in the
	// changelog for the apply path.
	b.Reset()
	if err != nil {
		return err
	}
	s.checkpoint.Store(checkpoint)
	return nil
}

// Scan calls fn for each key in [start, end) in key order, seeing the
// task's uncommitted writes, until fn returns false; nil bounds are open.
// The slices passed to fn are valid only during the call.
func (s *DB) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	return s.ScanOver(start, end, nil, fn)
}

// ScanOver is Scan with a layer above the write buffers, as
// LatestView.ScanOver has, for the task's own goroutine: over's entries
// win over the buffers and LevelDB, and its deletes hide their keys. over
// must be sorted by key, with no key twice and every key in [start, end).
// The buffers are read in key order (sortKeys), so a range costs its
// entries, not every key written since the last commit.
func (s *DB) ScanOver(start, end []byte, over []Entry, fn func(key, value []byte) bool) error {
	if s.db == nil {
		return ErrTaskClosed
	}
	// The buffers' entries in range are taken before fn runs. fn may write
	// the store, as a handler that scans and updates does; the scan then
	// does not see those writes, as LevelDB's iterator does not. The frozen
	// buffer's entries are taken before the iterator, while a commit may be
	// writing them to LevelDB (latest.go says why that order).
	cs := make([]cursor, 0, 4)
	if len(over) > 0 {
		cs = append(cs, &entryCursor{es: over, i: -1})
	}
	for _, b := range [2]*writeBuffer{s.buf, s.committed} {
		if b == nil || b.Len() == 0 || b == s.committed && !s.unwritten.Load() {
			continue
		}
		b.sortKeys()
		cs = append(cs, &entryCursor{es: b.appendRange(nil, start, end, true), i: -1})
	}
	dbIt := s.db.NewIterator(dataRangeFor(start, end), nil)
	defer dbIt.Release()
	if len(cs) == 0 {
		return s.view.scanIter(dbIt, fn)
	}
	merge(append(cs, dbCursor{dbIt}), fn)
	if err := dbIt.Error(); err != nil {
		return s.task.storageErr(s, "scan", err)
	}
	return nil
}

// ScanPrefix calls fn for each key starting with prefix, in key order,
// seeing the task's uncommitted writes, until fn returns false.
func (s *DB) ScanPrefix(prefix []byte, fn func(key, value []byte) bool) error {
	return s.Scan(prefix, prefixEnd(prefix), fn)
}

// ApproximateCount returns an estimate of the number of keys, including
// uncommitted writes. See View.ApproximateCount.
func (s *DB) ApproximateCount() int64 {
	n := s.view.ApproximateCount()
	if s.buf != nil {
		n += int64(s.buf.Len())
	}
	return n
}
