package state

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/syndtr/goleveldb/leveldb/storage"
)

// TestFullDiskFailsTheTaskAndLosesNothing injects ENOSPC through a
// goleveldb storage wrapper. The commit fails with an error naming the
// store, and the task and the instance turn unhealthy. After the disk has
// room again, a reopened task restores everything from the changelog.
func TestFullDiskFailsTheTaskAndLosesNothing(t *testing.T) {
	e := newEnv(t, 1, "s")
	dir := t.TempDir()
	var full atomic.Bool
	wrap := func(o *Options) {
		o.WrapStorage = func(_ string, s storage.Storage) storage.Storage { return fullDisk{s, &full} }
	}
	m := e.open(dir, wrap)
	p := e.producer()
	task := e.activeTask(m, 0, p)
	s := task.Store("s")
	for i := range 100 {
		must(t, s.Put([]byte("k"+strconv.Itoa(i)), []byte("v1")))
	}
	e.commit(task, p)

	full.Store(true)
	for i := range 100 {
		must(t, s.Put([]byte("k"+strconv.Itoa(i)), []byte("v2")))
	}
	must(t, s.Delete([]byte("k0")))
	must(t, p.Flush(e.ctx()))
	err := task.Commit()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Commit on a full disk = %v, want an error wrapping ENOSPC", err)
	}
	if !strings.Contains(err.Error(), "store s of task 0") {
		t.Fatalf("error %q does not name the store and task", err)
	}
	if task.Err() == nil || task.Ready() || m.Err() == nil {
		t.Fatalf("after ENOSPC: task.Err=%v Ready=%v m.Err=%v; want unhealthy, not ready", task.Err(), task.Ready(), m.Err())
	}
	if ck := s.Checkpoint(); ck != 100 {
		t.Fatalf("checkpoint moved to %d on a failed commit, want 100", ck)
	}
	// The handler still reads its own writes: the buffer was kept.
	if v, ok, _ := s.Get([]byte("k5")); !ok || string(v) != "v2" {
		t.Fatalf("Get(k5) after failed commit = %q, %v; want v2 from the kept buffer", v, ok)
	}

	// The disk has room again: close, reopen, restore. Nothing is lost.
	full.Store(false)
	task.Close()
	m.Close()
	m2 := e.open(dir)
	task2, err := m2.OpenTask(0, e.stores)
	must(t, err)
	must(t, task2.Restore(e.ctx()))
	want := e.changelogContent(s.Changelog(), 0)
	if len(want) != 99 || want["k5"] != "v2" {
		t.Fatalf("changelog content has %d keys, k5=%q; want 99 keys, v2", len(want), want["k5"])
	}
	if got := viewContent(t, task2.Store("s").View()); !maps.Equal(got, want) {
		t.Fatalf("restored content (%d keys) differs from the changelog (%d keys)", len(got), len(want))
	}
	if ck := task2.Store("s").Checkpoint(); ck != 201 {
		t.Fatalf("checkpoint after restore = %d, want 201", ck)
	}
}

// TestCorruptedStoreIsMovedAsideAndRebuilt corrupts a store's LevelDB
// directory: the next open moves it aside and restore rebuilds it from the
// changelog.
func TestCorruptedStoreIsMovedAsideAndRebuilt(t *testing.T) {
	e := newEnv(t, 1, "s")
	dir := t.TempDir()
	m := e.open(dir)
	p := e.producer()
	task := e.activeTask(m, 0, p)
	s := task.Store("s")
	for i := range 1000 {
		must(t, s.Put([]byte("k"+strconv.Itoa(i)), []byte(strings.Repeat("v", 50))))
	}
	e.commit(task, p)
	path := s.Path()
	must(t, m.Close())

	corruptLevelDB(t, path)

	reg := prometheus.NewRegistry()
	m2 := e.open(dir, func(o *Options) { o.Registerer = reg })
	task2, err := m2.OpenTask(0, e.stores)
	if err != nil {
		t.Fatalf("open of a corrupted store = %v, want it moved aside", err)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("moved-aside copies = %v, want one", aside)
	}
	if n := rebuilds(t, m2, reasonManifest); n != 1 {
		t.Fatalf("corrupted stores counter = %v, want 1", n)
	}
	if ck := task2.Store("s").Checkpoint(); ck != 0 {
		t.Fatalf("checkpoint of the fresh store = %d, want 0", ck)
	}
	must(t, task2.Restore(e.ctx()))
	want := e.changelogContent(s.Changelog(), 0)
	if got := viewContent(t, task2.Store("s").View()); len(got) != 1000 || !maps.Equal(got, want) {
		t.Fatalf("rebuilt store has %d keys, changelog %d; want equal, 1000", len(got), len(want))
	}
	if n := managerSeries(t, m2, "rackstream_state_restored_records_total")["0/s"]; n != 1000 {
		t.Fatalf("restored records counter = %v, want 1000", n)
	}
}

// corruptLevelDB overwrites the manifest that CURRENT names with garbage.
func corruptLevelDB(t *testing.T, path string) {
	t.Helper()
	cur, err := os.ReadFile(filepath.Join(path, "CURRENT"))
	must(t, err)
	manifest := filepath.Join(path, strings.TrimSpace(string(cur)))
	fi, err := os.Stat(manifest)
	must(t, err)
	garbage := make([]byte, fi.Size())
	for i := range garbage {
		garbage[i] = byte(i*7 + 3)
	}
	must(t, os.WriteFile(manifest, garbage, 0o644))
}

// TestFullDiskDuringRestoreFailsTheTask: the apply path hits ENOSPC: the
// restore returns it, the task is unhealthy and refuses to go on, and once
// the disk has room a reopened task restores everything.
func TestFullDiskDuringRestoreFailsTheTask(t *testing.T) {
	e := newEnv(t, 1, "s")
	m := e.open(t.TempDir())
	p := e.producer()
	task := e.activeTask(m, 0, p)
	for i := range 3000 {
		must(t, task.Store("s").Put([]byte("k"+strconv.Itoa(i)), []byte(strings.Repeat("v", 100))))
	}
	e.commit(task, p)

	dir := t.TempDir()
	var full atomic.Bool
	m2 := e.open(dir, func(o *Options) {
		o.WrapStorage = func(_ string, s storage.Storage) storage.Storage { return fullDisk{s, &full} }
		o.RestoreBatchBytes = 32 << 10
	})
	t2, err := m2.OpenTask(0, e.stores)
	must(t, err)
	full.Store(true)
	err = t2.Restore(e.ctx())
	if !errors.Is(err, syscall.ENOSPC) || t2.Err() == nil || m2.Err() == nil {
		t.Fatalf("restore on a full disk = %v (task err %v, manager err %v), want ENOSPC on all", err, t2.Err(), m2.Err())
	}
	if err := t2.StartStandby(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("StartStandby of the unhealthy task = %v, want its ENOSPC error", err)
	}
	full.Store(false)
	must(t, m2.Close())
	m3 := e.open(dir)
	t3, err := m3.OpenTask(0, e.stores)
	must(t, err)
	must(t, t3.Restore(e.ctx()))
	if got, want := viewContent(t, t3.Store("s").View()), viewContent(t, task.Store("s").View()); !maps.Equal(got, want) {
		t.Fatalf("restored %d keys after the disk was freed, want %d", len(got), len(want))
	}
}

// TestInterruptedRestoreResumesFromItsLastBatch: every apply batch carries
// its checkpoint, so a restore cut short (the disk fills after a few
// batches) resumes where its last written batch ended and applies only the
// rest.
func TestInterruptedRestoreResumesFromItsLastBatch(t *testing.T) {
	e := newEnv(t, 1, "s")
	m := e.open(t.TempDir())
	p := e.producer()
	task := e.activeTask(m, 0, p)
	for i := range 5000 {
		must(t, task.Store("s").Put([]byte("k"+strconv.Itoa(i)), []byte(strings.Repeat("v", 100))))
	}
	e.commit(task, p)

	dir := t.TempDir()
	var full atomic.Bool
	var writes atomic.Int64
	m2 := e.open(dir, func(o *Options) {
		o.RestoreBatchBytes = 64 << 10 // ~500 records a batch
		o.WrapStorage = func(_ string, s storage.Storage) storage.Storage {
			return countingDisk{fullDisk{s, &full}, &writes, &full, 4}
		}
	})
	t2, err := m2.OpenTask(0, e.stores)
	must(t, err)
	writes.Store(0)
	if err := t2.Restore(e.ctx()); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("restore = %v, want ENOSPC after a few batches", err)
	}
	cut := t2.Store("s").Checkpoint()
	if cut <= 0 || cut >= 5000 {
		t.Fatalf("checkpoint after the cut = %d, want strictly between 0 and 5000", cut)
	}
	must(t, m2.Close())

	reg := prometheus.NewRegistry()
	full.Store(false)
	m3 := e.open(dir, func(o *Options) { o.Registerer = reg })
	t3, err := m3.OpenTask(0, e.stores)
	must(t, err)
	if ck := t3.Store("s").Checkpoint(); ck != cut {
		t.Fatalf("reopened checkpoint = %d, want %d", ck, cut)
	}
	must(t, t3.Restore(e.ctx()))
	if n := managerSeries(t, m3, "rackstream_state_restored_records_total")["0/s"]; n != float64(5000-cut) {
		t.Fatalf("resumed restore applied %v records, want the %d after the cut", n, 5000-cut)
	}
	if got, want := viewContent(t, t3.Store("s").View()), viewContent(t, task.Store("s").View()); !maps.Equal(got, want) {
		t.Fatalf("resumed restore: %d keys, want %d", len(got), len(want))
	}
	t.Logf("cut at %d, resumed with %d records", cut, 5000-cut)
}

// countingDisk fills the disk after its writers have written limit times.
type countingDisk struct {
	fullDisk
	writes *atomic.Int64
	full   *atomic.Bool
	limit  int64
}

func (d countingDisk) Create(fd storage.FileDesc) (storage.Writer, error) {
	w, err := d.fullDisk.Create(fd)
	if err != nil {
		return nil, err
	}
	return countingWriter{w, d}, nil
}

type countingWriter struct {
	storage.Writer
	d countingDisk
}

func (w countingWriter) Write(p []byte) (int, error) {
	if w.d.writes.Add(1) > w.d.limit {
		w.d.full.Store(true)
	}
	return w.Writer.Write(p)
}
