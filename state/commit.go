package state

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
)

// The active path's commit goes in three steps. An at-least-once commit
// holds its task between records only for the first:
//
//  1. Freeze, with the task paused between records, cuts each store's
//     write buffer. Its writes become the frozen buffer, DB.committed,
//     marked unwritten; later writes go to a new buffer. The cut remembers
//     how many changelog records were produced for the writes it holds.
//  2. WaitFrozen, on any goroutine with the task running again, waits
//     until the producer has acknowledged those records. franz-go
//     acknowledges a partition's records in the order they were produced,
//     so the last of them gives the checkpoint: its offset + 1.
//  3. WriteFrozen, on any goroutine with the task running, writes the
//     frozen buffer and that checkpoint in one LevelDB batch.
//
// Reads see every write throughout. The task's Get looks in its buffer,
// then the frozen one, then LevelDB. Its Scan and latest readers merge the
// frozen buffer while it is unwritten; once it is written, LevelDB has the
// same values. A cut whose write never came, as its commit was abandoned,
// stays frozen, and the next Freeze adds the new writes to it. So the
// checkpoint never runs ahead of what LevelDB holds. Commit does the three
// steps at once, for a caller that has flushed the producer: exactly-once,
// and tests.
//
// Task.writeMu keeps WriteFrozen apart from what replaces or drops the
// buffers: Freeze, Abort, Demote and Close. Other goroutines may call those
// while a write is in progress.

// ackCut is what a cut waits for: the acknowledgement of the changelog
// records produced up to it. target counts those records.
type ackCut struct {
	target int64
	fired  atomic.Bool
	end    int64 // the checkpoint: set before done closes
	done   chan struct{}
}

// fire completes the cut with checkpoint end, once.
func (c *ackCut) fire(end int64) {
	if c.fired.CompareAndSwap(false, true) {
		c.end = end
		close(c.done)
	}
}

// reached reports whether the cut's records are all acknowledged.
func (c *ackCut) reached() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// freeze cuts the write buffer (step 1). The task goroutine is paused.
func (s *DB) freeze() {
	switch {
	case s.unwritten.Load():
		// The last cut was not written: this one adds to it.
		if s.buf.Len() > 0 {
			s.buf.each(func(k string, v []byte) {
				// Same size as the buffer's entries: cannot overflow the
				// larger one's bound unless both together do, reported
				// as the write's error.
				if err := s.committed.put([]byte(k), v[0], v[1:]); err != nil {
					s.task.fail(s, fmt.Errorf("state: freeze store %s of task %d: %w", s.name, s.partition, err))
				}
			})
			s.clearBuffer()
		}
	case s.buf.Len() > 0:
		s.rotateBuffer() // marks the frozen buffer unwritten
	}
	c := &ackCut{target: s.produced.Load(), done: make(chan struct{})}
	s.cut.Store(c)
	// The promise of the cut's last record may have run before the cut
	// was stored: then the count is reached already.
	if s.acked.Load() >= c.target {
		c.fire(s.maxAcked.Load() + 1)
	}
}

// writeFrozen writes the frozen buffer and the cut's checkpoint in one
// LevelDB batch: step 3. The caller holds Task.writeMu. It fails, changing
// nothing, while the cut's records are not all acknowledged, or when a
// produce failed. A failed write keeps the frozen buffer, so nothing is
// lost, and marks the task unhealthy.
func (s *DB) writeFrozen() error {
	c := s.cut.Load()
	if c == nil {
		return nil // nothing was cut since the task became active
	}
	if !c.reached() {
		return fmt.Errorf("state: commit store %s of task %d: %d changelog records not yet acknowledged (flush the producer first)", s.name, s.partition, c.target-min(c.target, s.acked.Load()))
	}
	if err := s.produceErr(); err != nil {
		return err
	}
	end := max(c.end, s.checkpoint.Load())
	if !s.unwritten.Load() && end == s.checkpoint.Load() {
		return nil
	}
	if s.commitBatch == nil {
		s.commitBatch = new(leveldb.Batch)
	}
	b := s.commitBatch
	var puts, dels int64
	if s.unwritten.Load() {
		// In key order: goleveldb's memtable takes sorted inserts faster
		// (batchSorter).
		s.writeOrder = s.committed.appendSorted(s.writeOrder[:0])
		for _, e := range s.writeOrder {
			v := s.committed.tagged(e.sp)
			s.writeScratch = append(append(s.writeScratch[:0], dataPrefix), e.key...)
			if v[0] == bufTombstone {
				b.Delete(s.writeScratch)
				dels++
			} else {
				b.Put(s.writeScratch, v[1:])
				puts++
			}
		}
		clear(s.writeOrder) // its strings point into the buffer's arena
	}
	if err := s.writeBatch(b, end); err != nil {
		return s.task.storageErr(s, "commit", err)
	}
	s.unwritten.Store(false)
	s.count.add(puts, dels)
	return nil
}

// abort drops the write buffer and an unwritten frozen one: LevelDB keeps
// the last written state and checkpoint. The caller holds Task.writeMu.
func (s *DB) abort() {
	s.clearBuffer()
	if s.unwritten.Load() {
		s.dropCommitted()
	}
	s.cut.Store(nil)
	s.maxAcked.Store(s.Checkpoint() - 1)
	s.prodMu.Lock()
	s.prodErr = nil
	s.prodMu.Unlock()
}

// Freeze cuts every store's write buffer: the first step of a commit
// (see the top of this file). Call it with the task paused between
// records, as for Commit; the producer need not be flushed. The task must
// be active.
func (t *Task) Freeze() error {
	if r := t.Role(); r != RoleActive {
		return fmt.Errorf("state: freeze task %d: task is %s, not active", t.id, r)
	}
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	for _, s := range t.stores {
		s.freeze()
	}
	return t.Err()
}

// WaitFrozen waits until the changelog records of the last Freeze are all
// acknowledged or one failed, ctx is done, or the task is closed. It may
// run on any goroutine, beside the task's writes.
func (t *Task) WaitFrozen(ctx context.Context) error {
	for _, s := range t.stores {
		c := s.cut.Load()
		if c == nil {
			continue
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			return fmt.Errorf("state: task %d: waiting for store %s's changelog records: %w", t.id, s.name, ctx.Err())
		case <-t.ctx.Done():
			return ErrTaskClosed
		}
		if err := s.produceErr(); err != nil {
			return err
		}
	}
	return nil
}

// WriteFrozen writes, per store, one LevelDB batch with the writes of the
// last Freeze and the new checkpoint: the last step of a commit. Once
// WaitFrozen has returned, it may run on any goroutine while the task
// processes records. It fails, changing nothing, while changelog records
// of the cut are unacknowledged, or when a produce failed. A LevelDB error
// marks the task unhealthy and keeps the frozen writes: nothing is lost.
func (t *Task) WriteFrozen() error {
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	// Under writeMu: a Close or Demote sets the role before it takes
	// writeMu to drop the buffers, so a write either finishes before it or
	// sees the role.
	if r := t.Role(); r != RoleActive {
		return fmt.Errorf("state: commit task %d: task is %s, not active", t.id, r)
	}
	var errs []error
	for _, s := range t.stores {
		if err := s.writeFrozen(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		t.m.maybeWriteSidecars(t)
	}
	return errors.Join(errs...)
}

// Commit writes, per store, one LevelDB batch with the buffered writes and
// the new checkpoint, the last acknowledged changelog offset + 1: Freeze
// and WriteFrozen at once. Call it with the task paused, after the
// producer is flushed under at-least-once, or after the transaction
// committed under exactly-once. It fails, changing nothing, while
// changelog records are unacknowledged, or when a produce failed. A
// LevelDB error marks the task unhealthy and keeps the buffered writes:
// nothing is lost.
func (t *Task) Commit() error {
	if r := t.Role(); r != RoleActive {
		return fmt.Errorf("state: commit task %d: task is %s, not active", t.id, r)
	}
	if err := t.Unacknowledged(); err != nil {
		return fmt.Errorf("state: commit task %d: %w (flush the producer first)", t.id, err)
	}
	if err := t.Freeze(); err != nil {
		return err
	}
	return t.WriteFrozen()
}

// Abort drops the write buffer of every store, after an aborted
// transaction or a failed produce. It forgets the changelog offsets
// produced since the last Commit: LevelDB keeps the last committed state
// and checkpoint. Under exactly-once the aborted records are never read
// back. Under at-least-once, records of the dropped buffer that did reach
// the changelog are applied by the next Restore or standby tailing. So
// Close or Demote the task after an Abort, unless the caller reprocesses
// the same input.
func (t *Task) Abort() {
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	for _, s := range t.stores {
		s.abort()
	}
}
