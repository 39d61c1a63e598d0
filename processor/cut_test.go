package processor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb/storage"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/state"
)

// A task's part in an at-least-once commit (cut.go) when the task has
// none to give, or its stores fail under it. No broker: see
// harness_test.go.

// TestACommitTakesNothingOfAFailedTask: a task that failed before the
// commit has no cut. Its records since the last commit are not committed,
// while another task's are.
func TestACommitTakesNothingOfAFailedTask(t *testing.T) {
	h := newHarness(t, nil)
	h.start(0, 1)
	t0 := h.feed(0, 0, "k", "a", "b")
	t1 := h.feed(1, 0, "k", "a")
	h.waitProcessed(t0, 2)
	h.waitProcessed(t1, 1)
	t0.setErr(errors.New("handler gave up"))
	if err := h.c.commit(h.ctx, []*task{t0, t1}); err != nil {
		t.Fatalf("commit = %v; a failed task fails itself, not the commit", err)
	}
	if got := h.offsets.committed(0); got != -1 {
		t.Errorf("failed task 0's offset %d committed", got)
	}
	if got := h.offsets.committed(1); got != 1 {
		t.Errorf("task 1's committed offset %d, want 1", got)
	}
	if n := h.count(0, "k"); n != 0 {
		t.Errorf("failed task 0's count %d committed, want 0", n)
	}
}

// TestAWriteAheadOfAFailedTaskEndsAtOnce: a commit asks a task with a
// large record cache to write it through ahead of the cut. The task
// failed meanwhile, so it writes nothing and answers at once: the commit
// does not wait out its write-ahead deadline for it, and commits nothing
// of it.
func TestAWriteAheadOfAFailedTaskEndsAtOnce(t *testing.T) {
	const keys = cutChunk + 44
	h := newHarness(t, func(o *Options) {
		o.CacheMaxBytes = 64 << 20
		o.CommitInterval = time.Minute // a write-ahead deadline of 5 s
	})
	h.start(0)
	tk := h.m.task(0)
	for i := range keys {
		h.feed(0, int64(i), fmt.Sprintf("k%04d", i), "x")
	}
	h.waitProcessed(tk, keys)
	tk.setErr(errors.New("handler gave up"))
	h.kafka.mu.Lock()
	before := len(h.kafka.records)
	h.kafka.mu.Unlock()
	// Shorter than the write-ahead deadline: a commit still waiting for
	// the task when it ends fails with it.
	ctx, cancel := context.WithTimeout(h.ctx, 2*time.Second)
	defer cancel()
	if err := h.c.commitTasks(ctx, []*task{tk}, true); err != nil {
		t.Fatalf("commit = %v; the failed task must answer its write-ahead at once", err)
	}
	h.kafka.mu.Lock()
	after := len(h.kafka.records)
	h.kafka.mu.Unlock()
	if after != before {
		t.Errorf("%d records produced from a failed task's cache", after-before)
	}
	if n := len(h.offsets.commits()); n != 0 {
		t.Errorf("offsets committed for a failed task: %v", h.offsets.commits())
	}
}

// TestAStatelessTasksCommitWaitsForItsOutputsOnly: a task with no stores
// has no changelog to wait for. Its commit waits until its outputs are
// acknowledged, then commits the offset after its last processed record.
func TestAStatelessTasksCommitWaitsForItsOutputsOnly(t *testing.T) {
	h := newHarness(t, nil)
	topo := New(harnessApp)
	out := NewOutput(topo, harnessOutput, codec.String(), codec.String())
	NewInput(topo, harnessInput, codec.String(), codec.String(), func(ctx *Context, k, v string) error {
		return out.Emit(ctx, k, v)
	})
	h.env.topo = topo
	h.kafka.hang = make(chan struct{})
	h.start(0)
	tk := h.feed(0, 0, "k", "a", "b")
	h.waitProcessed(tk, 2)
	if tk.st != nil {
		t.Fatal("a stateless task has stores")
	}
	ctx, cancel := context.WithTimeout(h.ctx, 50*time.Millisecond)
	defer cancel()
	if err := h.c.commit(ctx, []*task{tk}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("commit = %v; want it to wait for the unacknowledged outputs", err)
	}
	if n := len(h.offsets.commits()); n != 0 {
		t.Fatalf("offsets committed before the outputs were acknowledged: %v", h.offsets.commits())
	}
	close(h.kafka.hang)
	if err := h.c.commit(h.ctx, []*task{tk}); err != nil {
		t.Fatal(err)
	}
	if got := h.offsets.committed(0); got != 2 {
		t.Errorf("committed offset %d, want 2", got)
	}
}

// failingTables is a store's storage whose table files fail every read
// once fail is set: a disk going bad under LevelDB.
type failingTables struct {
	storage.Storage
	fail *atomic.Bool
}

func (s failingTables) Open(fd storage.FileDesc) (storage.Reader, error) {
	if fd.Type == storage.TypeTable && s.fail.Load() {
		return nil, errDiskRead
	}
	r, err := s.Storage.Open(fd)
	if err != nil || fd.Type != storage.TypeTable {
		return r, err
	}
	return failingReader{r, s.fail}, nil
}

type failingReader struct {
	storage.Reader
	fail *atomic.Bool
}

func (r failingReader) ReadAt(p []byte, off int64) (int, error) {
	if r.fail.Load() {
		return 0, errDiskRead
	}
	return r.Reader.ReadAt(p, off)
}

var errDiskRead = errors.New("disk read error")

// storeFailedUnderTask starts task 0 over stores with small memtables,
// commits keys keys (key-000000 on, count 1 each: in table files), then
// makes the disk fail and has a query read a key from a table. The read
// fails the task's stores; the task itself, idle, is still healthy.
func storeFailedUnderTask(t *testing.T, keys int, tweak func(*Options)) (*harness, *task) {
	t.Helper()
	var fail atomic.Bool
	h := newHarnessStates(t, tweak, func(o *state.Options) {
		o.MemoryBytes = 0
		o.LevelDB.WriteBufferBytes, o.LevelDB.BlockCacheBytes = 16<<10, 0
		o.WrapStorage = func(_ string, s storage.Storage) storage.Storage { return failingTables{s, &fail} }
	})
	h.start(0)
	tk := h.m.task(0)
	for i := range keys {
		h.feed(0, int64(i), fmt.Sprintf("key-%06d", i), "x")
	}
	h.waitProcessed(tk, int64(keys))
	if err := h.c.commit(h.ctx, []*task{tk}); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	var err error
	for i := 0; i < keys && err == nil; i++ {
		_, _, err = tk.st.Store(harnessStore).View().Get(fmt.Appendf(nil, "key-%06d", i))
	}
	if !errors.Is(err, errDiskRead) || tk.st.Err() == nil {
		t.Fatalf("a query's read = %v, stores' error %v; want the disk's error failing the stores", err, tk.st.Err())
	}
	if err := tk.getErr(); err != nil {
		t.Fatalf("task 0 failed before the commit: %v", err)
	}
	return h, tk
}

// TestAStoreFailedUnderAHealthyTaskStopsItAtTheCut: a query's read met a
// disk error and failed the stores of a task that has not written since.
// The cut cannot freeze the stores' writes: it stops the task, naming the
// error, and the commit takes nothing of it.
func TestAStoreFailedUnderAHealthyTaskStopsItAtTheCut(t *testing.T) {
	const keys = 3000
	h, tk := storeFailedUnderTask(t, keys, nil)
	if err := h.c.commit(h.ctx, []*task{tk}); err != nil {
		t.Fatalf("commit = %v; the task fails, not the commit", err)
	}
	if err := tk.getErr(); !errors.Is(err, errDiskRead) || !strings.Contains(err.Error(), "cut the stores' writes") {
		t.Fatalf("task error %v; want the cut's, wrapping the disk's error", err)
	}
	if n := len(h.offsets.commits()); n != 1 {
		t.Errorf("%d offset commits, want only the one before the disk failed", n)
	}
}

// TestACacheThatCannotBeWrittenThroughAtTheCutStopsTheTask: the cut
// writes the record cache through into stores a disk error failed; the
// task stops, naming the error, and the commit takes nothing of it.
func TestACacheThatCannotBeWrittenThroughAtTheCutStopsTheTask(t *testing.T) {
	const keys = 3000
	h, tk := storeFailedUnderTask(t, keys, func(o *Options) { o.CacheMaxBytes = 64 << 20 })
	// Keys the cache holds: no read reaches the disk.
	h.waitProcessed(h.feed(0, keys, "key-000000", "y", "z"), keys+2)
	if err := h.c.commit(h.ctx, []*task{tk}); err != nil {
		t.Fatalf("commit = %v; the task fails, not the commit", err)
	}
	if err := tk.getErr(); !errors.Is(err, errDiskRead) || !strings.Contains(err.Error(), "flush the record cache") {
		t.Fatalf("task error %v; want the cache flush's, wrapping the disk's error", err)
	}
	if got := h.offsets.committed(0); got != keys {
		t.Errorf("committed offset %d, want %d: nothing after the disk failed", got, keys)
	}
}

// TestACacheThatCannotBeWrittenThroughAheadStopsTheTask: a periodic
// commit has a large record cache written through in chunks ahead of the
// cut, into stores a disk error failed. The first chunk stops the task,
// naming the error, and drops its cache; the commit takes nothing of it.
func TestACacheThatCannotBeWrittenThroughAheadStopsTheTask(t *testing.T) {
	const keys = 3000
	h, tk := storeFailedUnderTask(t, keys, func(o *Options) { o.CacheMaxBytes = 64 << 20 })
	// Keys the cache holds: no read reaches the disk.
	for i := range cutChunk + 44 {
		h.feed(0, int64(keys+i), fmt.Sprintf("key-%06d", i), "y")
	}
	h.waitProcessed(tk, keys+cutChunk+44)
	if err := h.c.background([]*task{tk}, false); err != nil {
		t.Fatalf("commit = %v; the task fails, not the commit", err)
	}
	if err := tk.getErr(); !errors.Is(err, errDiskRead) || !strings.Contains(err.Error(), "flush the record cache") {
		t.Fatalf("task error %v; want the cache flush's, wrapping the disk's error", err)
	}
	if n := tk.cache.entries(); n != 0 {
		t.Errorf("%d cached entries left after a failed write-through; the failed task's cache is dropped", n)
	}
	if got := h.offsets.committed(0); got != keys {
		t.Errorf("committed offset %d, want %d: nothing after the disk failed", got, keys)
	}
}
