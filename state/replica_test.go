package state

import (
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStandbyEqualsActiveAfterActiveStopsWriting: a standby on another
// instance tails the changelog while the active writes over several
// commits; once the active stops, the standby's store equals the active's
// and its lag is 0. Then the standby is promoted without reopening its
// store and continues from where the active stopped.
func TestStandbyEqualsActiveAfterActiveStopsWriting(t *testing.T) {
	e := newEnv(t, 2, "s", "t")
	reg := prometheus.NewRegistry()
	active := e.open(t.TempDir())
	standby := e.open(t.TempDir(), func(o *Options) { o.Registerer = reg })
	p := e.producer()
	at := e.activeTask(active, 1, p)

	st, err := standby.OpenTask(1, e.stores)
	must(t, err)
	must(t, st.StartStandby())
	if st.Role() != RoleStandby || st.Ready() {
		t.Fatalf("standby role %s ready %v", st.Role(), st.Ready())
	}

	for round := range 5 {
		for i := range 300 {
			k := []byte("k" + strconv.Itoa((round*97+i)%500))
			must(t, at.Store("s").Put(k, []byte("r"+strconv.Itoa(round))))
			if i%7 == 0 {
				must(t, at.Store("t").Delete(k))
			} else {
				must(t, at.Store("t").Put(k, []byte(strings.Repeat("x", i))))
			}
		}
		e.commit(at, p)
	}
	for _, name := range []string{"s", "t"} {
		as, ss := at.Store(name), st.Store(name)
		kafkatest.Eventually(t, time.Minute, "standby store "+name+" caught up", func() bool {
			return ss.Checkpoint() >= as.Checkpoint() && ss.Lag() == 0
		})
		if got, want := viewContent(t, ss.View()), viewContent(t, as.View()); !maps.Equal(got, want) {
			t.Fatalf("standby store %s (%d keys) differs from the active's (%d keys)", name, len(got), len(want))
		}
	}
	if n := storeSeries(t, reg, "rackstream_state_restored_records_total")["1/s"]; n != 1500 {
		t.Fatalf("standby applied %v records of store s, want 1500", n)
	}

	// The active writes a little more and goes away; the standby is
	// promoted: it applies just those records, keeps its store open, and
	// continues writing.
	for i := range 10 {
		must(t, at.Store("s").Put([]byte("late"+strconv.Itoa(i)), []byte("v")))
	}
	e.commit(at, p)
	want := viewContent(t, at.Store("s").View())
	must(t, active.Close())
	sBefore := st.Store("s")
	p2 := e.producer()
	must(t, st.Promote(e.ctx(), p2))
	if st.Store("s") != sBefore || !st.Ready() || st.Role() != RoleActive {
		t.Fatalf("after promotion: same store %v, ready %v, role %s", st.Store("s") == sBefore, st.Ready(), st.Role())
	}
	if got := viewContent(t, st.Store("s").View()); !maps.Equal(got, want) {
		t.Fatalf("promoted store (%d keys) differs from the old active's (%d keys)", len(got), len(want))
	}
	if n := storeSeries(t, reg, "rackstream_state_restored_records_total")["1/s"]; n != 1510 {
		t.Fatalf("records applied to store s through promotion = %v, want 1510: promotion replays only the lag", n)
	}
	must(t, st.Store("s").Put([]byte("after"), []byte("promotion")))
	e.commit(st, p2)
	if got := e.changelogContent(st.Store("s").Changelog(), 1); !maps.Equal(got, viewContent(t, st.Store("s").View())) {
		t.Fatal("changelog differs from the promoted store after its first commit")
	}

	// Demotion keeps the store and tails again.
	must(t, st.Demote())
	if st.Role() != RoleStandby || st.Store("s") != sBefore {
		t.Fatalf("after demotion: role %s, same store %v", st.Role(), st.Store("s") == sBefore)
	}
	if err := st.Store("s").Put([]byte("x"), []byte("y")); err == nil {
		t.Fatal("Put on a demoted task succeeded")
	}
	p3 := e.producer()
	other := e.open(t.TempDir())
	ot := e.activeTask(other, 1, p3)
	must(t, ot.Store("s").Put([]byte("from"), []byte("new active")))
	e.commit(ot, p3)
	kafkatest.Eventually(t, time.Minute, "demoted task tails the new active's writes", func() bool {
		v, ok, _ := st.Store("s").View().Get([]byte("from"))
		return ok && string(v) == "new active"
	})
}

// TestRestoreAcrossCompactedGaps compacts the changelog so that it has
// holes. kfake compacts with Cluster.Compact; the real broker with its log
// cleaner, on a changelog configured to roll segments quickly. Then it
// restores a fresh store from it, and an old store from a checkpoint taken
// before compaction.
func TestRestoreAcrossCompactedGaps(t *testing.T) {
	e := newEnv(t, 1, "s")
	topic := ChangelogTopic(e.app, "s")
	if e.c.Real() {
		e.c.CreateTopic(topic, 1, map[string]*string{
			"cleanup.policy":            ptr("compact"),
			"segment.ms":                ptr("100"),
			"min.cleanable.dirty.ratio": ptr("0.01"),
			"min.compaction.lag.ms":     ptr("0"),
		})
	}
	m := e.open(t.TempDir())
	p := e.producer()
	task := e.activeTask(m, 0, p)
	s := task.Store("s")
	oldDir := t.TempDir()
	// Many keys are overwritten later, so compaction leaves gaps.
	for round := range 20 {
		for i := range 50 {
			must(t, s.Put([]byte("k"+strconv.Itoa((round*13+i)%200)), []byte("r"+strconv.Itoa(round))))
		}
		if round%4 == 0 {
			must(t, s.Delete([]byte("k"+strconv.Itoa(round))))
		}
		e.commit(task, p)
		if round == 5 { // an old replica, restored up to here
			old := e.open(oldDir)
			ot, err := old.OpenTask(0, e.stores)
			must(t, err)
			must(t, ot.Restore(e.ctx()))
			must(t, old.Close())
		}
	}

	var kept int
	var end int64
	if e.c.Fake != nil {
		e.c.Fake.Compact()
		_, kept, end = e.readChangelog(topic, 0)
	} else {
		// The cleaner compacts rolled segments only: each tick record
		// may roll one (segment.ms=100), until a hole shows.
		tick := 0
		kafkatest.Eventually(t, 2*time.Minute, "the broker's cleaner compacted the changelog", func() bool {
			tick++
			must(t, s.Put([]byte("tick"), []byte(strconv.Itoa(tick))))
			e.commit(task, p)
			_, kept, end = e.readChangelog(topic, 0)
			return int64(kept) < end/2
		})
	}
	t.Logf("after compaction the changelog keeps %d records below offset %d", kept, end)
	if int64(kept) >= end {
		t.Fatalf("compaction kept all %d records: no gaps to restore across", kept)
	}
	want := viewContent(t, s.View())
	if got := e.changelogContent(topic, 0); !maps.Equal(got, want) {
		t.Fatalf("compacted changelog (%d keys) differs from the active store (%d keys)", len(got), len(want))
	}

	for name, dir := range map[string]string{"fresh": t.TempDir(), "old": oldDir} {
		mm := e.open(dir)
		rt, err := mm.OpenTask(0, e.stores)
		must(t, err)
		from := rt.Store("s").Checkpoint()
		must(t, rt.Restore(e.ctx()))
		if got := viewContent(t, rt.Store("s").View()); !maps.Equal(got, want) {
			t.Fatalf("%s restore from %d after compaction: %d keys, want %d", name, from, len(got), len(want))
		}
		if ck, lag := rt.Store("s").Checkpoint(), rt.Store("s").Lag(); ck != end || lag != 0 {
			t.Fatalf("%s restore: checkpoint %d lag %d, want %d and 0", name, ck, lag, end)
		}
		must(t, mm.Close())
	}
}

// TestRestoreReadCommittedSkipsAbortedRecordsAndMarkers writes the
// changelog with transactions, committed and aborted: a read_committed
// restore applies only committed records, moves past the markers and ends
// caught up (checkpoint = last stable offset, lag 0).
func TestRestoreReadCommittedSkipsAbortedRecordsAndMarkers(t *testing.T) {
	e := newEnv(t, 1, "s")
	m := e.open(t.TempDir(), func(o *Options) { o.ReadCommitted = true })
	p := e.producer(kgo.TransactionalID(e.c.Name("txn")), kgo.TransactionTimeout(10*time.Second))
	task := e.activeTask(m, 0, p)
	s := task.Store("s")
	for round := range 6 {
		must(t, p.BeginTransaction())
		for i := range 20 {
			must(t, s.Put([]byte("k"+strconv.Itoa(i)), []byte("r"+strconv.Itoa(round))))
		}
		must(t, p.Flush(e.ctx()))
		commit := round%2 == 0
		must(t, p.EndTransaction(e.ctx(), kgo.TransactionEndTry(commit)))
		if commit {
			must(t, task.Commit())
		} else {
			task.Abort()
		}
	}
	want := map[string]string{}
	for i := range 20 {
		want["k"+strconv.Itoa(i)] = "r4"
	}
	if got := viewContent(t, s.View()); !maps.Equal(got, want) {
		t.Fatalf("active store after commits and aborts = %v", got)
	}
	fresh := e.open(t.TempDir(), func(o *Options) { o.ReadCommitted = true })
	ft, err := fresh.OpenTask(0, e.stores)
	must(t, err)
	must(t, ft.Restore(e.ctx()))
	if got := viewContent(t, ft.Store("s").View()); !maps.Equal(got, want) {
		t.Fatalf("read_committed restore = %v, want only committed r4 values", got)
	}
	ends, err := e.c.Admin().ListEndOffsets(e.ctx(), s.Changelog())
	must(t, err)
	end, _ := ends.Lookup(s.Changelog(), 0)
	// 6 transactions of 20 records, each followed by its marker.
	if ck := ft.Store("s").Checkpoint(); ck != end.Offset || ck != 126 {
		t.Fatalf("checkpoint after restore = %d, end offset %d; want both 126 (past the last marker)", ck, end.Offset)
	}
	if lag := ft.Store("s").Lag(); lag != 0 {
		t.Fatalf("lag = %d, want 0", lag)
	}
}

// TestChangelogValidation: a missing changelog is created compacted with
// the task count; an existing one with another partition count, or not
// compacted, stops startup with an error naming the topic and both counts.
func TestChangelogValidation(t *testing.T) {
	c := kafkatest.New(t)
	ctx := newEnv(t, 1).ctx()
	adm := kadm.NewClient(c.Client(kgo.MetadataMinAge(100 * time.Millisecond)))
	good, wrong, deleting := c.Name("good-changelog"), c.Name("wrong-changelog"), c.Name("delete-changelog")
	c.CreateTopic(wrong, 3, map[string]*string{"cleanup.policy": ptr("compact")})
	c.CreateTopic(deleting, 4, map[string]*string{"cleanup.policy": ptr("delete")})

	must(t, ensureChangelogs(ctx, adm, 4, -1, good))
	var policy string
	kafkatest.Eventually(t, 30*time.Second, "created changelog's configs are described", func() bool {
		cfgs, err := adm.DescribeTopicConfigs(ctx, good)
		if err != nil {
			return false
		}
		rc, err := cfgs.On(good, nil)
		if err != nil || rc.Err != nil {
			return false
		}
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && c.Value != nil {
				policy = *c.Value
			}
		}
		return true
	})
	if policy != "compact" {
		t.Fatalf("created changelog has cleanup.policy=%q, want compact", policy)
	}
	must(t, ensureChangelogs(ctx, adm, 4, -1, good)) // idempotent

	err := ensureChangelogs(ctx, adm, 4, -1, wrong)
	var ce *ChangelogError
	if !errors.As(err, &ce) || ce.Partitions != 3 || ce.Want != 4 {
		t.Fatalf("wrong partition count: err = %v, want *ChangelogError 3 vs 4", err)
	}
	for _, want := range []string{wrong, "3 partitions", "4 tasks"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not contain %q", err, want)
		}
	}
	err = ensureChangelogs(ctx, adm, 4, -1, deleting)
	if !errors.As(err, &ce) || ce.CleanupPolicy != "delete" || !strings.Contains(err.Error(), deleting) || !strings.Contains(err.Error(), "compact") {
		t.Fatalf("not compacted: err = %v", err)
	}

	// A task on a changelog without its partition fails to restore with a
	// message naming the changelog and partition.
	e := newEnv(t, 3, "s")
	e.c = c
	e.stores = []StoreSpec{{Name: "s", Changelog: wrong}}
	o := dirOptions(t.TempDir(), e.app)
	o.ClientOpts, o.Logger = []kgo.Opt{kgo.SeedBrokers(c.Brokers...)}, testLogger(t)
	m, err := Open(o)
	must(t, err)
	defer m.Close()
	task, err := m.OpenTask(3, e.stores)
	must(t, err)
	if err := task.Restore(ctx); err == nil || !strings.Contains(err.Error(), wrong) || !strings.Contains(err.Error(), "partition 3") {
		t.Fatalf("restore of task 3 on a 3-partition changelog = %v", err)
	}
}

func ptr(s string) *string { return &s }

// TestManyTasksRestoreAndTailThroughOneConsumer: the Manager's one
// consumer feeds several tasks at once, some restoring concurrently, some
// tailing as standbys; every store ends equal to its changelog.
func TestManyTasksRestoreAndTailThroughOneConsumer(t *testing.T) {
	e := newEnv(t, 6, "s", "t")
	src := e.open(t.TempDir())
	p := e.producer()
	var active []*Task
	for id := range int32(6) {
		task := e.activeTask(src, id, p)
		for i := range 400 + int(id)*100 {
			k := []byte(strconv.Itoa(int(id)) + "-" + strconv.Itoa(i))
			must(t, task.Store("s").Put(k, []byte("v"+strconv.Itoa(i))))
			must(t, task.Store("t").Put(k, []byte(strings.Repeat("t", i%50))))
		}
		e.commit(task, p)
		active = append(active, task)
	}

	dst := e.open(t.TempDir(), func(o *Options) { o.RestoreBatchBytes = 16 << 10 })
	var standbys []*Task
	for id := range int32(2) {
		st, err := dst.OpenTask(id, e.stores)
		must(t, err)
		must(t, st.StartStandby())
		standbys = append(standbys, st)
	}
	errs := make(chan error, 4)
	restored := make([]*Task, 6)
	for id := int32(2); id < 6; id++ {
		go func() {
			task, err := dst.OpenTask(id, e.stores)
			if err == nil {
				err = task.Restore(e.ctx())
			}
			restored[id] = task
			errs <- err
		}()
	}
	// The actives keep writing while the others restore.
	for _, task := range active[:2] {
		must(t, task.Store("s").Put([]byte("during"), []byte("restore")))
		e.commit(task, p)
	}
	for range 4 {
		must(t, <-errs)
	}
	for id := int32(0); id < 6; id++ {
		for _, name := range []string{"s", "t"} {
			want := viewContent(t, active[id].Store(name).View())
			var got *DB
			if id < 2 {
				got = standbys[id].Store(name)
				kafkatest.Eventually(t, time.Minute, "standby caught up", func() bool {
					return got.Checkpoint() >= active[id].Store(name).Checkpoint()
				})
			} else {
				got = restored[id].Store(name)
			}
			if g := viewContent(t, got.View()); !maps.Equal(g, want) {
				t.Fatalf("task %d store %s: %d keys, want %d", id, name, len(g), len(want))
			}
		}
	}
}

// deletableChangelogOfTenRecords opens task 0 of e active, over a changelog
// of store s that DeleteRecords may cut, and commits ten records to it.
// Kafka allows DeleteRecords only where "delete" is in the policy;
// "compact,delete" is still a valid changelog (windowed stores use it).
func deletableChangelogOfTenRecords(t *testing.T, e *env) (*Task, *kgo.Client) {
	t.Helper()
	e.c.CreateTopic(ChangelogTopic(e.app, "s"), 1, map[string]*string{"cleanup.policy": ptr("compact,delete")})
	p := e.producer()
	at := e.activeTask(e.open(t.TempDir()), 0, p)
	for i := range 10 {
		must(t, at.Store("s").Put([]byte("a"+strconv.Itoa(i)), []byte("v")))
	}
	e.commit(at, p)
	return at, p
}

// TestStandbyFailsWhenItsChangelogIsDeletedUnderIt: records after a
// standby's position are deleted (DeleteRecords): the standby fails loudly
// instead of skipping them, and a reopened task wipes and restores.
func TestStandbyFailsWhenItsChangelogIsDeletedUnderIt(t *testing.T) {
	e := newEnv(t, 1, "s")
	at, p := deletableChangelogOfTenRecords(t, e)

	dir := t.TempDir()
	sm := e.open(dir)
	st, err := sm.OpenTask(0, e.stores)
	must(t, err)
	must(t, st.Restore(e.ctx()))
	must(t, st.Close()) // checkpoint 10, not tailing

	for i := range 10 {
		must(t, at.Store("s").Put([]byte("b"+strconv.Itoa(i)), []byte("v")))
	}
	e.commit(at, p)
	topic := at.Store("s").Changelog()
	resp, err := e.c.Admin().DeleteRecords(e.ctx(), kadm.Offsets{topic: {0: {At: 15}}})
	must(t, err)
	must(t, resp.Error())

	st, err = sm.OpenTask(0, e.stores)
	must(t, err)
	must(t, st.StartStandby())
	kafkatest.Eventually(t, time.Minute, "standby fails on deleted records", func() bool { return st.Err() != nil })
	if msg := st.Err().Error(); !strings.Contains(msg, "now starts at offset 15") || !strings.Contains(msg, "position 10") {
		t.Fatalf("standby error %q does not say where the changelog starts and where the store is", msg)
	}
	must(t, st.Close())

	st, err = sm.OpenTask(0, e.stores)
	must(t, err)
	must(t, st.Restore(e.ctx())) // wipes: its checkpoint is below the log start
	want := map[string]string{}
	for i := 5; i < 10; i++ {
		want["b"+strconv.Itoa(i)] = "v"
	}
	if got := viewContent(t, st.Store("s").View()); !maps.Equal(got, want) {
		t.Fatalf("after wipe and restore: %v, want %v", got, want)
	}
}

// TestRestoreOfAChangelogWhoseRecordsWereAllDeletedEnds: every record of
// a changelog was deleted (retention or DeleteRecords), so its log starts
// at its end: a fresh store's restore finds nothing to read and ends at
// once, empty, instead of waiting for a record that never comes.
func TestRestoreOfAChangelogWhoseRecordsWereAllDeletedEnds(t *testing.T) {
	e := newEnv(t, 1, "s")
	at, _ := deletableChangelogOfTenRecords(t, e)
	resp, err := e.c.Admin().DeleteRecords(e.ctx(), kadm.Offsets{at.Store("s").Changelog(): {0: {At: -1}}})
	must(t, err)
	must(t, resp.Error())

	st, err := e.open(t.TempDir()).OpenTask(0, e.stores)
	must(t, err)
	must(t, st.Restore(e.ctx()))
	if got := viewContent(t, st.Store("s").View()); len(got) != 0 {
		t.Fatalf("restored %v from an emptied changelog, want nothing", got)
	}
	must(t, st.Close())
}

// TestChangelogMinInsyncReplicasIsReplicationFactorMinusOne: a changelog
// created with replication factor n gets min.insync.replicas n-1, where
// that is at least 1. Losing one zone's broker then loses no acknowledged
// write. With -1 the broker's default factor decides. kfake runs three
// brokers here; the real test broker has one.
func TestChangelogMinInsyncReplicasIsReplicationFactorMinusOne(t *testing.T) {
	c := kafkatest.New(t, kfake.NumBrokers(3))
	adm := kadm.NewClient(c.Client(kgo.MetadataMinAge(100 * time.Millisecond)))
	ctx := newEnv(t, 1).ctx()
	rfs := []int16{-1, 1}
	if !c.Real() {
		rfs = append(rfs, 2, 3)
	}
	for _, rf := range rfs {
		topic := c.Name("rf-changelog")
		must(t, ensureChangelogs(ctx, adm, 2, rf, topic))
		var replicas int
		var minISR string
		kafkatest.Eventually(t, 30*time.Second, "changelog described", func() bool {
			td, err := adm.ListTopics(ctx, topic)
			if err != nil || td[topic].Err != nil || len(td[topic].Partitions) != 2 {
				return false
			}
			replicas = len(td[topic].Partitions[0].Replicas)
			cfgs, err := adm.DescribeTopicConfigs(ctx, topic)
			if err != nil {
				return false
			}
			rc, err := cfgs.On(topic, nil)
			if err != nil || rc.Err != nil {
				return false
			}
			for _, c := range rc.Configs {
				if c.Key == "min.insync.replicas" && c.Value != nil {
					minISR = *c.Value
				}
			}
			return true
		})
		if rf > 0 && replicas != int(rf) {
			t.Fatalf("rf %d: topic has %d replicas", rf, replicas)
		}
		// With one replica, n-1 = 0 is no valid setting: the broker's
		// default stays.
		if want := strconv.Itoa(replicas - 1); replicas >= 2 && minISR != want {
			t.Fatalf("rf %d (%d replicas): min.insync.replicas = %q, want %q", rf, replicas, minISR, want)
		}
		t.Logf("rf %d: %d replicas, min.insync.replicas %s", rf, replicas, minISR)
	}
}

// TestStandbyOpenedAtItsQuietChangelogsEndKnowsItsLag: a standby reopened
// on a store already at its changelog's end, with no record written since,
// learns the end from a listing and reports lag 0, not "unknown" (-1), which
// would keep it from answering reads that allow a lag.
func TestStandbyOpenedAtItsQuietChangelogsEndKnowsItsLag(t *testing.T) {
	e := newEnv(t, 1, "s")
	p := e.producer()
	at := e.activeTask(e.open(t.TempDir()), 0, p)
	must(t, at.Store("s").Put([]byte("k"), []byte("v")))
	e.commit(at, p)
	end := at.Store("s").Checkpoint()

	dir := t.TempDir()
	first := e.open(dir)
	st, err := first.OpenTask(0, e.stores)
	must(t, err)
	must(t, st.StartStandby())
	kafkatest.Eventually(t, time.Minute, "the first standby at the changelog's end", func() bool {
		return st.Store("s").Checkpoint() == end
	})
	must(t, first.Close())

	again, err := e.open(dir).OpenTask(0, e.stores)
	must(t, err)
	if ck := again.Store("s").Checkpoint(); ck != end {
		t.Fatalf("reopened store's checkpoint %d, want %d", ck, end)
	}
	must(t, again.StartStandby())
	kafkatest.Eventually(t, time.Minute, "the reopened standby's lag known", func() bool {
		return again.Store("s").Lag() >= 0
	})
	if lag := again.Store("s").Lag(); lag != 0 {
		t.Fatalf("reopened standby at the changelog's end: lag %d, want 0", lag)
	}
}
