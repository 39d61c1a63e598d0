package processor

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// How long a commit pauses tasks (commit.go): a paused task is stale for
// its readers. No broker: see harness_test.go.

const harnessChangelog = "harness-counts-changelog"

// tryLock reports whether t's lock was free (taking and releasing it).
func tryLock(t *task) bool {
	select {
	case t.mu <- struct{}{}:
		<-t.mu
		return true
	default:
		return false
	}
}

// TestACommitWritesATasksCacheThroughWhileTheOtherTasksProcess: the record
// cache of one task is written through (its store writes and their
// changelog records) while the other tasks are free to process, not with
// every task paused.
func TestACommitWritesATasksCacheThroughWhileTheOtherTasksProcess(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.CacheMaxBytes = 1 << 20 })
	h.start(0, 1)
	t0, t1 := h.feed(0, 0, "a", "x", "x", "x"), h.feed(1, 0, "b", "x")
	h.waitProcessed(t0, 3)
	h.waitProcessed(t1, 1)
	var fired, free1 bool
	h.kafka.onProduce = func(r *kgo.Record) {
		if r.Topic == harnessChangelog && r.Partition == 0 && !fired {
			fired, free1 = true, tryLock(t1)
		}
	}
	if err := h.c.commit(h.ctx, []*task{t0, t1}); err != nil {
		t.Fatal(err)
	}
	if !fired {
		t.Fatal("the commit produced no changelog record of task 0")
	}
	if !free1 {
		t.Error("task 1 was paused while task 0's record cache was written through")
	}
	if got := h.offsets.committed(0); got != 3 {
		t.Errorf("task 0 committed at %d, want 3", got)
	}
	if n := h.count(0, "a"); n != 3 {
		t.Errorf("task 0's committed count %d, want 3", n)
	}
}

// TestACommitResumesEachTaskOnceItsStoresAreCommitted: while the commit
// writes the second task's stores, the first, whose stores and offsets it
// has taken already, is free to process again.
func TestACommitResumesEachTaskOnceItsStoresAreCommitted(t *testing.T) {
	h := newHarness(t, nil)
	h.start(0, 1)
	t0, t1 := h.feed(0, 0, "a", "x", "x"), h.feed(1, 0, "b", "x")
	h.waitProcessed(t0, 2)
	h.waitProcessed(t1, 1)
	var fired, free0 bool
	h.c.phase = func(what string) {
		if strings.Contains(what, "write the stores of task 1") {
			fired, free0 = true, tryLock(t0)
		}
	}
	if err := h.c.commit(h.ctx, []*task{t0, t1}); err != nil {
		t.Fatal(err)
	}
	if !fired {
		t.Fatal("the commit never said it wrote task 1's stores")
	}
	if !free0 {
		t.Error("task 0 was still paused while task 1's stores were written, after its own were")
	}
	if got0, got1 := h.offsets.committed(0), h.offsets.committed(1); got0 != 2 || got1 != 1 {
		t.Errorf("committed %d and %d, want 2 and 1", got0, got1)
	}
}

// TestARecordProcessedWhileACommitWritesCachesThroughIsCommittedWithItsState:
// a task processes a record after its cache was written through but before
// the commit pauses every task; the commit covers it whole (the offset
// after it, and its count in the store's checkpointed data), never the
// offset without the state.
func TestARecordProcessedWhileACommitWritesCachesThroughIsCommittedWithItsState(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.CacheMaxBytes = 1 << 20 })
	h.start(0, 1)
	t0, t1 := h.feed(0, 0, "a", "x", "x", "x"), h.feed(1, 0, "b", "x", "x")
	h.waitProcessed(t0, 3)
	h.waitProcessed(t1, 2)
	fed, during := false, false
	h.kafka.onProduce = func(r *kgo.Record) {
		// Task 1's cache is being written through: task 0's is done, and
		// task 0 is free to process one more record. (A poll with a
		// deadline, not eventually: a task paused by the commit would
		// hold the commit here until the deadline.)
		if r.Topic == harnessChangelog && r.Partition == 1 && !fed {
			fed = true
			h.feed(0, 3, "a", "x")
			for deadline := time.Now().Add(10 * time.Second); !during && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				select { // not processed(t0): its lock may be the commit's
				case t0.mu <- struct{}{}:
					during = t0.next[harnessInput].Offset >= 4
					<-t0.mu
				default:
				}
			}
		}
	}
	if err := h.c.commit(h.ctx, []*task{t0, t1}); err != nil {
		t.Fatal(err)
	}
	if !fed {
		t.Fatal("the commit produced no changelog record of task 1")
	}
	if !during {
		t.Fatal("task 0 could not process a record while task 1's record cache was written through")
	}
	if got, n := h.offsets.committed(0), h.count(0, "a"); got != 4 || n != 4 {
		t.Errorf("task 0 committed at offset %d with a count of %d; want 4 and 4 (the record processed during the commit, whole)", got, n)
	}
	if got, n := h.offsets.committed(1), h.count(1, "b"); got != 2 || n != 2 {
		t.Errorf("task 1 committed at offset %d with a count of %d; want 2 and 2", got, n)
	}
}

// TestACommitSendsWhatTheCachesWroteBeforePausingTheTasks: the records the
// caches wrote through are flushed while the tasks are free; the flush in
// the pause finds nothing left to wait for. Without a bound (preflush 0,
// a zero commit interval) there is no such early flush.
func TestACommitSendsWhatTheCachesWroteBeforePausingTheTasks(t *testing.T) {
	for _, preflush := range []time.Duration{time.Minute, 0} {
		h := newHarness(t, func(o *Options) { o.CacheMaxBytes = 1 << 20 })
		h.c.preflush = preflush
		h.start(0, 1)
		t0, t1 := h.feed(0, 0, "a", "x", "x"), h.feed(1, 0, "b", "x")
		h.waitProcessed(t0, 2)
		h.waitProcessed(t1, 1)
		type flush struct {
			pending   int
			tasksFree bool
		}
		var flushes []flush
		h.kafka.onFlush = func(pending int) {
			flushes = append(flushes, flush{pending, tryLock(t0) && tryLock(t1)})
		}
		if err := h.c.commit(h.ctx, []*task{t0, t1}); err != nil {
			t.Fatal(err)
		}
		// Two keys, each a changelog record and an output record.
		want := []flush{{4, true}, {0, false}}
		if preflush == 0 {
			want = []flush{{4, false}}
		}
		if !slices.Equal(flushes, want) {
			t.Errorf("preflush %v: flushes (records pending, tasks free) %v, want %v", preflush, flushes, want)
		}
		if got := h.offsets.committed(0); got != 2 {
			t.Errorf("preflush %v: task 0 committed at %d, want 2", preflush, got)
		}
	}
}
