package query

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/internal/kafkatest"
	"github.com/rackstream/rackstream/state"
)

// TestStateReplicaReadsCommittedStoreData runs the adapters over a real
// store restored from its changelog: what Runtime implementations built on
// package state hand the server.
func TestStateReplicaReadsCommittedStoreData(t *testing.T) {
	c := kafkatest.New(t)
	app := c.Name("query-state")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := state.DefaultOptions()
	o.Dir, o.ApplicationID, o.ClientOpts, o.Logger = t.TempDir(), app, []kgo.Opt{kgo.SeedBrokers(c.Brokers...)}, discardLogger()
	m, err := state.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	specs := []state.StoreSpec{{Name: "counts"}}
	if err := m.EnsureChangelogs(ctx, 2, 1, specs); err != nil {
		t.Fatal(err)
	}
	changelog := state.ChangelogTopic(app, "counts")
	pr := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer pr.Close()
	if err := pr.ProduceSync(ctx,
		&kgo.Record{Topic: changelog, Partition: 1, Key: []byte("b"), Value: []byte("2")},
		&kgo.Record{Topic: changelog, Partition: 1, Key: []byte("a"), Value: []byte("1")},
		&kgo.Record{Topic: changelog, Partition: 1, Key: []byte("c"), Value: []byte("3")},
		&kgo.Record{Topic: changelog, Partition: 1, Key: []byte("c")}, // tombstone
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	task, err := m.OpenTask(1, specs)
	if err != nil {
		t.Fatal(err)
	}
	if StateReplica(task, "nope") != nil || StateReplica(nil, "counts") != nil || StoreReplica(state.RoleActive, nil) != nil {
		t.Error("an adapter of nothing is not nil")
	}
	if st := StateReplica(task, "counts").Status(); st.Role != RoleIdle || st.Reason != "task is idle" {
		t.Errorf("idle task: %+v", st)
	}
	if err := task.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	if err := task.StartStandby(); err != nil {
		t.Fatal(err)
	}
	rep := StateReplica(task, "counts")
	st := rep.Status()
	if st.Role != RoleStandby || st.Task != 1 || st.Store != "counts" || st.Position != 4 {
		t.Errorf("standby status: %+v", st)
	}
	v, found, pos, err := rep.Get([]byte("a"))
	if err != nil || !found || string(v) != "1" || pos != 4 {
		t.Errorf("Get(a) = %q %v %d %v", v, found, pos, err)
	}
	if _, found, _, _ := rep.Get([]byte("c")); found {
		t.Error("a deleted key is found")
	}
	var keys []string
	if _, err := rep.Scan(nil, nil, func(k, _ []byte) bool { keys = append(keys, string(k)); return true }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"a", "b"}) {
		t.Errorf("scan: %q", keys)
	}
	statuses := StateReplicas(m, 2)
	if len(statuses) != 1 || statuses[0].Task != 1 || statuses[0].Role != RoleStandby {
		t.Errorf("StateReplicas: %+v", statuses)
	}
	if st := StoreReplica(state.RoleRestoring, task.Store("counts")).Status(); st.Role != RoleRestoring || st.Reason == "" {
		t.Errorf("restoring snapshot: %+v", st)
	}
}
