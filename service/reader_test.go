package service

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/query"
	"github.com/rackstream/rackstream/state"
)

// fullDisk fails every write once full is set, as a full disk does.
type fullDisk struct {
	storage.Storage
	full *atomic.Bool
}

func (d fullDisk) Create(fd storage.FileDesc) (storage.Writer, error) {
	if d.full.Load() {
		return nil, syscall.ENOSPC
	}
	w, err := d.Storage.Create(fd)
	return fullDiskWriter{w, d.full}, err
}

type fullDiskWriter struct {
	storage.Writer
	full *atomic.Bool
}

func (w fullDiskWriter) Write(p []byte) (int, error) {
	if w.full.Load() {
		return 0, syscall.ENOSPC
	}
	return w.Writer.Write(p)
}

// committed reads a store at its committed state, as processor.StoreView
// does for the runtime's replicas.
type committed struct{ *state.DB }

func (c committed) Get(key []byte) ([]byte, bool, error) { return c.View().Get(key) }
func (c committed) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	return c.View().Scan(start, end, fn)
}

// roleOf is the processor.Role of task's stores: the two spell roles alike.
func roleOf(task *state.Task) processor.Role { return processor.Role(task.Role().String()) }

// standbyStore opens task 1 of a store "counts" whose changelog holds
// b=2, a=1, c=3 and a tombstone of c, restored and tailing as a standby.
func standbyStore(t *testing.T, full *atomic.Bool) (*state.Task, func(...*kgo.Record)) {
	t.Helper()
	c := kafkatest.New(t)
	app := c.Name("service-reader")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	o := state.DefaultOptions()
	o.Dir, o.ApplicationID, o.ClientOpts, o.Logger = t.TempDir(), app, []kgo.Opt{kgo.SeedBrokers(c.Brokers...)}, quiet
	o.WrapStorage = func(_ string, s storage.Storage) storage.Storage { return fullDisk{s, full} }
	m, err := state.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	specs := []state.StoreSpec{{Name: "counts"}}
	if err := m.EnsureChangelogs(ctx, 2, 1, specs); err != nil {
		t.Fatal(err)
	}
	changelog := state.ChangelogTopic(app, "counts")
	pr := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	t.Cleanup(pr.Close)
	produce := func(rs ...*kgo.Record) {
		for _, r := range rs {
			r.Topic, r.Partition = changelog, 1
		}
		if err := pr.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(&kgo.Record{Key: []byte("b"), Value: []byte("2")}, &kgo.Record{Key: []byte("a"), Value: []byte("1")},
		&kgo.Record{Key: []byte("c"), Value: []byte("3")}, &kgo.Record{Key: []byte("c")})
	task, err := m.OpenTask(1, specs)
	if err != nil {
		t.Fatal(err)
	}
	if st := (storeReplica{role: roleOf(task), s: committed{task.Store("counts")}}).Status(); st.Role != query.RoleIdle || st.Reason != "task is idle" {
		t.Errorf("idle task: %+v", st)
	}
	if err := task.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	if err := task.StartStandby(); err != nil {
		t.Fatal(err)
	}
	return task, produce
}

// TestStoreReplicaReadsCommittedStoreData runs the adapter over a real
// standby store tailing its changelog: both isolations read what it has
// applied (a standby's latest state), at its checkpoint.
func TestStoreReplicaReadsCommittedStoreData(t *testing.T) {
	task, _ := standbyStore(t, new(atomic.Bool))
	s := task.Store("counts")
	rep := storeReplica{role: roleOf(task), s: committed{s}, fresh: s.Latest()}
	if st := rep.Status(); st.Role != query.RoleStandby || st.Task != 1 || st.Store != "counts" || st.Position != 4 {
		t.Errorf("standby status: %+v", st)
	}
	for _, iso := range []query.Isolation{query.IsolationLatest, query.IsolationCommitted} {
		v, found, pos, err := rep.Get([]byte("a"), iso)
		if err != nil || !found || string(v) != "1" || pos != 4 {
			t.Errorf("%s: Get(a) = %q %v %d %v", iso, v, found, pos, err)
		}
		if _, found, _, _ := rep.Get([]byte("c"), iso); found {
			t.Errorf("%s: a deleted key is found", iso)
		}
		var keys []string
		if _, err := rep.Scan(nil, nil, iso, func(k, _ []byte) bool { keys = append(keys, string(k)); return true }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(keys, []string{"a", "b"}) {
			t.Errorf("%s: scan: %q", iso, keys)
		}
	}
	if st := (storeReplica{role: processor.RoleRestoring, s: committed{task.Store("counts")}}).Status(); st.Role != query.RoleRestoring || st.Reason == "" {
		t.Errorf("restoring snapshot: %+v", st)
	}
}

// TestAFailedStoreAnswersAnError: once a store's task has failed (here the
// standby's apply path hit a full disk), its data is still on disk and
// LevelDB would still return it, but the adapter answers an error and
// reports the replica idle, and the query server answers 503 rather than
// the stale value.
func TestAFailedStoreAnswersAnError(t *testing.T) {
	var full atomic.Bool
	task, produce := standbyStore(t, &full)
	s := task.Store("counts")
	if v, found, err := s.View().Get([]byte("a")); err != nil || !found || string(v) != "1" {
		t.Fatalf("before the failure: %q %v %v", v, found, err)
	}
	full.Store(true)
	produce(&kgo.Record{Key: []byte("a"), Value: []byte("9")})
	kafkatest.Eventually(t, time.Minute, "the standby fails to apply on a full disk", func() bool { return task.Err() != nil })
	if _, _, err := s.View().Get([]byte("a")); err != nil {
		t.Fatalf("LevelDB itself no longer answers (%v): the test shows nothing", err)
	}

	rep := storeReplica{role: roleOf(task), s: committed{s}}
	if st := rep.Status(); st.Role != query.RoleIdle || st.Reason != "the task has failed" {
		t.Errorf("status of a failed store: %+v", st)
	}
	if v, found, _, err := rep.Get([]byte("a"), query.IsolationCommitted); err == nil || found || v != nil || !strings.Contains(err.Error(), "store counts of task 1 has failed") {
		t.Errorf("Get on a failed store = %q %v %v; want an error naming the store", v, found, err)
	}
	if _, err := rep.Scan(nil, nil, query.IsolationLatest, func(_, _ []byte) bool { return true }); err == nil {
		t.Error("Scan on a failed store answers")
	}

	// Through the query server: 503, and no value.
	qo := query.DefaultOptions()
	qo.Reader, qo.Stores, qo.Logger, qo.Partitioner = oneReplica{rep}, []query.ServedStore{{Name: "counts"}}, quiet, constPartitioner(1)
	qs, err := query.New(qo)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	qs.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/stores/counts/keys/a?max_lag=100", nil))
	body, _ := io.ReadAll(rec.Body)
	var eb struct{ Error, Code string }
	if rec.Code != http.StatusServiceUnavailable || json.Unmarshal(body, &eb) != nil || !strings.Contains(eb.Error, "has failed") {
		t.Errorf("query of a failed store: %d %s; want 503 saying the task has failed", rec.Code, body)
	}
}

// oneReplica is a Reader of one instance "p1" holding rep as the standby
// of task 1 of two.
type oneReplica struct{ rep query.ReplicaView }

func (oneReplica) Self() string { return "p1" }
func (oneReplica) Placement() *balancer.Placement {
	return &balancer.Placement{Generation: 1, Members: []balancer.Member{{ProcessID: "p1", Endpoint: "127.0.0.1:1"}},
		Tasks: []balancer.Replicas{{Active: balancer.NoMember}, {Active: balancer.NoMember, Standbys: []int{0}}}}
}
func (r oneReplica) Replica(_ string, task int32) query.ReplicaView {
	if task == 1 {
		return r.rep
	}
	return nil
}
func (oneReplica) Global(string) query.ReplicaView   { return nil }
func (r oneReplica) Replicas() []query.ReplicaStatus { return []query.ReplicaStatus{r.rep.Status()} }
func (oneReplica) Ready() error                      { return nil }

// constPartitioner maps every key to one task.
type constPartitioner int32

func (p constPartitioner) Partition([]byte, int32) int32 { return int32(p) }
func (constPartitioner) Name() string                    { return "const" }

// TestExactlyOnceRefusesLatestReads: the service tells the query server the
// guarantee: under exactly_once_v2 a read at isolation=latest is refused,
// under at_least_once it is the default.
func TestExactlyOnceRefusesLatestReads(t *testing.T) {
	for _, tc := range []struct {
		guarantee string
		code      int
	}{{"exactly_once_v2", http.StatusBadRequest}, {"at_least_once", http.StatusServiceUnavailable}} { // 503: no placement yet
		in, err := New(Options{Config: load(t, "processor.type=count", "processor.input.topic=in", "processing.guarantee="+tc.guarantee), Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		in.srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/stores/count/keys/k?isolation=latest", nil))
		in.ln.Close()
		if rec.Code != tc.code || tc.code == http.StatusBadRequest && !strings.Contains(rec.Body.String(), "exactly_once_v2") {
			t.Errorf("%s: %d %s; want %d", tc.guarantee, rec.Code, rec.Body, tc.code)
		}
	}
}
