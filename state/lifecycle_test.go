package state

import (
	"bytes"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestUserKeysCannotOverwriteTheCheckpoint writes user keys that look like
// the metadata key space: the checkpoint is unaffected and the keys read
// back as written.
func TestUserKeysCannotOverwriteTheCheckpoint(t *testing.T) {
	e := newEnv(t, 1, "s")
	m := e.open(t.TempDir())
	p := e.producer()
	task := e.activeTask(m, 0, p)
	s := task.Store("s")
	for _, k := range [][]byte{checkpointKey, {metaPrefix}, {}, {dataPrefix}, append([]byte{dataPrefix}, checkpointKey...)} {
		must(t, s.Put(k, []byte("user value")))
	}
	e.commit(task, p)
	if ck := s.Checkpoint(); ck != 5 {
		t.Fatalf("checkpoint = %d, want 5", ck)
	}
	must(t, task.Close())
	task, err := m.OpenTask(0, e.stores)
	must(t, err)
	if ck := task.Store("s").Checkpoint(); ck != 5 {
		t.Fatalf("checkpoint read back = %d, want 5", ck)
	}
	if v, ok, _ := task.Store("s").View().Get(checkpointKey); !ok || string(v) != "user value" {
		t.Fatalf("user key equal to the checkpoint key = %q, %v", v, ok)
	}
	if n := task.Store("s").View().ApproximateCount(); n != 5 {
		t.Fatalf("ApproximateCount = %d, want 5", n)
	}
}

// TestCommitRefusesUnacknowledgedChangelogRecords: Commit before the
// producer is flushed fails and changes nothing; after the flush it works.
func TestCommitRefusesUnacknowledgedChangelogRecords(t *testing.T) {
	e := newEnv(t, 1, "s")
	m := e.open(t.TempDir())
	// A long linger keeps the record unacknowledged until Flush.
	p := e.producer(kgo.ProducerLinger(time.Minute))
	task := e.activeTask(m, 0, p)
	must(t, task.Store("s").Put([]byte("k"), []byte("v")))
	err := task.Commit()
	if err == nil || !strings.Contains(err.Error(), "not yet acknowledged") {
		t.Fatalf("Commit before Flush = %v, want an unacknowledged-records error", err)
	}
	if task.Store("s").Checkpoint() != 0 || task.Err() != nil {
		t.Fatalf("a refused commit moved the checkpoint or failed the task")
	}
	e.commit(task, p)
	if ck := task.Store("s").Checkpoint(); ck != 1 {
		t.Fatalf("checkpoint = %d, want 1", ck)
	}
}

// TestRestoreMetricsEndAtZeroRemaining: after a restore, remaining is 0,
// the counter counts the records and the checkpoint gauge is the end.
func TestRestoreMetricsEndAtZeroRemaining(t *testing.T) {
	e := newEnv(t, 1, "s")
	m := e.open(t.TempDir())
	p := e.producer()
	task := e.activeTask(m, 0, p)
	for i := range 5000 {
		must(t, task.Store("s").Put([]byte("k"+strconv.Itoa(i)), []byte("v")))
	}
	e.commit(task, p)
	reg := prometheus.NewRegistry()
	m2 := e.open(t.TempDir(), func(o *Options) {
		o.Registerer = reg
		o.RestoreBatchBytes = 16 << 10 // many batches
	})
	t2, err := m2.OpenTask(0, e.stores)
	must(t, err)
	must(t, t2.Restore(e.ctx()))
	for name, want := range map[string]float64{
		"rackstream_state_restore_remaining_records": 0,
		"rackstream_state_restored_records_total":    5000,
		"rackstream_state_checkpoint_offset":         5000,
		"rackstream_state_lag_records":               0,
	} {
		got, err := testutil.GatherAndCount(reg, name)
		must(t, err)
		if got != 1 {
			t.Fatalf("%s has %d series, want 1", name, got)
		}
		if v := gaugeValue(t, reg, name); v != want {
			t.Fatalf("%s = %v, want %v", name, v, want)
		}
	}
	if r := gaugeValue(t, reg, "rackstream_state_restore_records_per_second"); r <= 0 {
		t.Fatalf("restore rate = %v, want > 0", r)
	}
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		m := mf.GetMetric()[0]
		if g := m.GetGauge(); g != nil {
			return g.GetValue()
		}
		return m.GetCounter().GetValue()
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// TestScanCheckpointsAndCleanupUnassigned: closed tasks' checkpoints are
// listed without opening them (from the sidecar, or from the database when
// the sidecar is gone); tasks not open are deleted only after the cleanup
// delay, open ones never.
func TestScanCheckpointsAndCleanupUnassigned(t *testing.T) {
	e := newEnv(t, 3, "s", "t")
	dir := t.TempDir()
	m := e.open(dir, func(o *Options) { o.CleanupDelay, o.CleanupInterval = time.Hour, 0 })
	p := e.producer()
	var tasks []*Task
	for id := range int32(3) {
		task := e.activeTask(m, id, p)
		for i := range int(id+1) * 10 {
			must(t, task.Store("s").Put([]byte(strconv.Itoa(i)), []byte("v")))
		}
		must(t, task.Store("t").Put([]byte("x"), []byte("y")))
		e.commit(task, p)
		tasks = append(tasks, task)
	}
	must(t, tasks[1].Close())
	must(t, tasks[2].Close())
	must(t, os.Remove(filepath.Join(dir, e.app, "2", "s", sidecarName)))

	got, err := ScanCheckpoints(dir, e.app)
	must(t, err)
	want := map[int32]map[string]int64{
		0: {"s": 0, "t": 0}, // open: its sidecar is from Activate, before any commit
		1: {"s": 20, "t": 1},
		2: {"s": 30, "t": 1}, // s read from the database
	}
	if !maps.EqualFunc(got, want, maps.Equal) {
		t.Fatalf("ScanCheckpoints = %v, want %v", got, want)
	}
	live, err := m.Checkpoints()
	must(t, err)
	want[0] = map[string]int64{"s": 10, "t": 1}
	if !maps.EqualFunc(live, want, maps.Equal) {
		t.Fatalf("Manager.Checkpoints = %v, want %v", live, want)
	}

	now := time.Now()
	removed, err := m.CleanupUnassigned(now)
	must(t, err)
	if len(removed) != 0 {
		t.Fatalf("CleanupUnassigned before the delay removed %v", removed)
	}
	removed, err = m.CleanupUnassigned(now.Add(time.Hour + time.Minute))
	must(t, err)
	if !slices.Equal(removed, []int32{1, 2}) {
		t.Fatalf("CleanupUnassigned after the delay removed %v, want [1 2]", removed)
	}
	for id, exists := range map[string]bool{"0": true, "1": false, "2": false} {
		if _, err := os.Stat(filepath.Join(dir, e.app, id)); (err == nil) != exists {
			t.Fatalf("task dir %s exists=%v, want %v", id, err == nil, exists)
		}
	}
	if v, ok, _ := tasks[0].Store("s").View().Get([]byte("3")); !ok || string(v) != "v" {
		t.Fatal("the open task lost data in cleanup")
	}
}

// TestRestoreWipesAStoreAheadOfItsChangelog: a checkpoint past the end of
// the changelog (the topic was recreated) wipes the store and restores the
// new topic's content.
func TestRestoreWipesAStoreAheadOfItsChangelog(t *testing.T) {
	e := newEnv(t, 1, "s")
	dir := t.TempDir()
	m := e.open(dir)
	p := e.producer()
	task := e.activeTask(m, 0, p)
	for i := range 50 {
		must(t, task.Store("s").Put([]byte("old"+strconv.Itoa(i)), []byte("v")))
	}
	e.commit(task, p)
	must(t, m.Close())

	// The store now belongs to an application whose changelog is new and
	// shorter: adopt another topic with 3 records.
	other := e.c.Name("recreated-changelog")
	e.c.CreateTopic(other, 1, map[string]*string{"cleanup.policy": ptr("compact")})
	for i := range 3 {
		must(t, p.ProduceSync(e.ctx(), &kgo.Record{Topic: other, Key: []byte("new" + strconv.Itoa(i)), Value: []byte("w")}).FirstErr())
	}
	e.stores = []StoreSpec{{Name: "s", Changelog: other}}
	m2 := e.open(dir)
	t2, err := m2.OpenTask(0, e.stores)
	must(t, err)
	must(t, t2.Restore(e.ctx()))
	want := map[string]string{"new0": "w", "new1": "w", "new2": "w"}
	if got := viewContent(t, t2.Store("s").View()); !maps.Equal(got, want) {
		t.Fatalf("store after restore from a shorter changelog = %v, want %v", got, want)
	}
}

// TestBackgroundCleanupDeletesClosedTasksAfterTheDelay: with a short
// cleanup delay, a closed task's directory goes by itself; an open task's
// stays.
func TestBackgroundCleanupDeletesClosedTasksAfterTheDelay(t *testing.T) {
	e := newEnv(t, 2, "s")
	dir := t.TempDir()
	m := e.open(dir, func(o *Options) { o.CleanupDelay, o.CleanupInterval = 50*time.Millisecond, 20*time.Millisecond })
	p := e.producer()
	keep := e.activeTask(m, 0, p)
	gone := e.activeTask(m, 1, p)
	must(t, gone.Close())
	kafkatest.Eventually(t, 30*time.Second, "closed task's directory deleted", func() bool {
		_, err := os.Stat(filepath.Join(dir, e.app, "1"))
		return os.IsNotExist(err)
	})
	if _, err := os.Stat(keep.Store("s").Path()); err != nil {
		t.Fatalf("open task's store was deleted: %v", err)
	}
}

// TestActivateRefusesAProducerWithoutAcksAll: a changelog write
// acknowledged by the leader alone could be lost with it.
func TestActivateRefusesAProducerWithoutAcksAll(t *testing.T) {
	e := newEnv(t, 1, "s")
	m := e.open(t.TempDir())
	task, err := m.OpenTask(0, e.stores)
	must(t, err)
	must(t, task.Restore(e.ctx()))
	err = task.Activate(e.producer(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()))
	if err == nil || !strings.Contains(err.Error(), "acks=all") {
		t.Fatalf("Activate with acks=1 = %v, want an acks=all error", err)
	}
	if task.Role() != RoleIdle {
		t.Fatalf("role after a refused Activate = %s, want idle", task.Role())
	}
}

// TestRestoreProgressLogsCountDown: every progress line has records left,
// a rate and an ETA, and records left never goes up (the remaining gauge
// only goes down during a restore).
func TestRestoreProgressLogsCountDown(t *testing.T) {
	e := newEnv(t, 1, "s")
	m := e.open(t.TempDir())
	p := e.producer()
	task := e.activeTask(m, 0, p)
	for round := range 10 {
		for i := range 500 {
			must(t, task.Store("s").Put([]byte(strconv.Itoa(round*500+i)), []byte(strings.Repeat("v", 100))))
		}
		e.commit(task, p)
	}
	var logs lockedBuffer
	m2 := e.open(t.TempDir(), func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		o.RestoreBatchBytes = 8 << 10 // a batch, and a progress line, every ~60 records
	})
	m2.progressEvery = 0
	t2, err := m2.OpenTask(0, e.stores)
	must(t, err)
	must(t, t2.Restore(e.ctx()))

	left := int64(5000)
	var lines int
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, "restore progress") {
			continue
		}
		lines++
		f := logFields(line)
		n, err := strconv.ParseInt(f["records_left"], 10, 64)
		if err != nil || f["records_per_sec"] == "" || f["eta"] == "" {
			t.Fatalf("progress line without records_left, records_per_sec and eta: %s", line)
		}
		if n > left {
			t.Fatalf("records left went up from %d to %d: %s", left, n, line)
		}
		left = n
	}
	if lines < 10 || left != 0 {
		t.Fatalf("%d progress lines, last records_left %d; want many, ending at 0", lines, left)
	}
}

// logFields parses the key=value pairs of a slog text line.
func logFields(line string) map[string]string {
	out := make(map[string]string)
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			out[k] = v
		}
	}
	return out
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestCloseDuringRestoreEndsIt: Close from another goroutine while a
// restore waits ends the restore with ErrTaskClosed, and the task stays
// closed.
func TestCloseDuringRestoreEndsIt(t *testing.T) {
	e := newEnv(t, 1, "s")
	m := e.open(t.TempDir())
	p := e.producer()
	task := e.activeTask(m, 0, p)
	for i := range 20000 {
		must(t, task.Store("s").Put([]byte(strconv.Itoa(i)), []byte(strings.Repeat("v", 100))))
	}
	e.commit(task, p)

	// The restore's first write after it starts blocks on a gate, so Close
	// lands while the restore is certainly under way, whatever the speed of
	// the broker.
	gate := &gatedDisk{gate: make(chan struct{}), blocked: make(chan struct{})}
	m2 := e.open(t.TempDir(), func(o *Options) {
		o.RestoreBatchBytes = 4 << 10
		o.WrapStorage = func(_ string, s storage.Storage) storage.Storage { return gatedStorage{s, gate} }
	})
	t2, err := m2.OpenTask(0, e.stores)
	must(t, err)
	gate.armed.Store(true)
	done := make(chan error, 1)
	go func() { done <- t2.Restore(e.ctx()) }()
	select {
	case <-gate.blocked:
	case err := <-done:
		t.Fatalf("restore ended (%v) before writing anything", err)
	case <-time.After(time.Minute):
		t.Fatal("restore wrote nothing within a minute")
	}
	if r := t2.Role(); r != RoleRestoring {
		t.Fatalf("role while the restore writes = %s, want %s", r, RoleRestoring)
	}
	closed := make(chan error, 1)
	go func() { closed <- t2.Close() }()
	kafkatest.Eventually(t, time.Minute, "Close marks the task closed", func() bool { return t2.Role() == RoleClosed })
	close(gate.gate)
	must(t, <-closed)
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, ErrTaskClosed) {
			t.Fatalf("restore ended with %v, want ErrTaskClosed or (if it had finished) nil", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("restore still running a minute after Close")
	}
	if r := t2.Role(); r != RoleClosed {
		t.Fatalf("role after Close = %s", r)
	}
	if err := t2.Activate(p); !errors.Is(err, ErrTaskClosed) {
		t.Fatalf("Activate after Close = %v, want ErrTaskClosed", err)
	}
}
