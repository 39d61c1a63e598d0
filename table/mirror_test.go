package table_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gokacodec "github.com/lovoo/goka/codec"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/state"
	"github.com/rackstream/rackstream/table"
)

var compact = map[string]*string{"cleanup.policy": new("compact")}

// produce writes key=value records (value "" is a tombstone) to topic,
// partitioned by p.
func produce(t *testing.T, c *kafkatest.Cluster, topic string, p partition.Partitioner, kv ...string) {
	t.Helper()
	cl := c.Client(kgo.RecordPartitioner(partition.Kgo(p)))
	var recs []*kgo.Record
	for i := 0; i < len(kv); i += 2 {
		r := &kgo.Record{Topic: topic, Key: []byte(kv[i])}
		if kv[i+1] != "" {
			r.Value = []byte(kv[i+1])
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

func keyValues(prefix string, n int, value string) []string {
	var kv []string
	for i := range n {
		kv = append(kv, fmt.Sprintf("%s%02d", prefix, i), value)
	}
	return kv
}

// TestReaderInAnotherProcessFollowsAProducer opens a Mirror in a separate
// process on a compacted topic being written: it restores what is there,
// follows updates and tombstones written afterwards, and scans the keys in
// order across partitions.
func TestReaderInAnotherProcessFollowsAProducer(t *testing.T) {
	c := kafkatest.New(t)
	topic := c.Name("table-follow")
	c.CreateTopic(topic, 4, compact)
	m2 := partition.Murmur2()
	produce(t, c, topic, m2, keyValues("k", 20, "v1")...)

	ch := startChild(t, c, topic)
	if a := ch.ask("sync"); a.Lag != 0 {
		t.Errorf("lag after catching up = %d, want 0", a.Lag)
	}
	for i := range 20 {
		if a := ch.ask(fmt.Sprintf("get k%02d", i)); !a.Found || a.Value != "v1" {
			t.Errorf("k%02d after restore: %+v, want v1", i, a)
		}
	}

	// The writer goes on: k00-k09 updated, k10-k14 deleted, n00-n04 new.
	var kv []string
	for i := range 10 {
		kv = append(kv, fmt.Sprintf("k%02d", i), "v2")
	}
	for i := 10; i < 15; i++ {
		kv = append(kv, fmt.Sprintf("k%02d", i), "")
	}
	kv = append(kv, keyValues("n", 5, "new")...)
	produce(t, c, topic, m2, kv...)
	ch.ask("sync")
	want := map[string]string{}
	for i := range 20 {
		switch {
		case i < 10:
			want[fmt.Sprintf("k%02d", i)] = "v2"
		case i >= 15:
			want[fmt.Sprintf("k%02d", i)] = "v1"
		}
	}
	for i := range 5 {
		want[fmt.Sprintf("n%02d", i)] = "new"
	}
	for i := 10; i < 15; i++ {
		if a := ch.ask(fmt.Sprintf("get k%02d", i)); a.Found {
			t.Errorf("k%02d was deleted, the reader has %q", i, a.Value)
		}
	}
	for k, v := range want {
		if a := ch.ask("get " + k); !a.Found || a.Value != v {
			t.Errorf("%s: %+v, want %s", k, a, v)
		}
	}
	a := ch.ask("scan")
	wantKeys := make([]string, 0, len(want))
	for k := range want {
		wantKeys = append(wantKeys, k)
	}
	slices.Sort(wantKeys)
	if !slices.Equal(a.Keys, wantKeys) {
		t.Errorf("scan keys %v, want %v in order", a.Keys, wantKeys)
	}
	for i, k := range a.Keys {
		if i < len(a.Values) && a.Values[i] != want[k] {
			t.Errorf("scan %s = %s, want %s", k, a.Values[i], want[k])
		}
	}
	ch.quit()
}

// TestReaderInAnotherProcessReadsARunningRackstreamGroup follows the
// changelog of a running Rackstream group's store from another process:
// after WaitCaughtUp, every count the group has committed is there.
func TestReaderInAnotherProcessReadsARunningRackstreamGroup(t *testing.T) {
	const keys, partitions = 12, 3
	c := kafkatest.New(t)
	app, input := c.Name("table-group"), c.Name("table-group-in")
	c.CreateTopic(input, partitions, nil)

	topo := processor.New(app)
	counts := processor.NewStore(topo, "counts", codec.String(), codec.Int64())
	processor.NewInput(topo, input, codec.String(), codec.Bytes(), func(ctx *processor.Context, key string, _ []byte) error {
		n, _, err := counts.Get(ctx, key)
		if err != nil {
			return err
		}
		return counts.Put(ctx, key, n+1)
	})
	o := processor.DefaultOptions()
	o.Brokers, o.StateDir = c.Brokers, t.TempDir()
	o.CommitInterval, o.SessionTimeout, o.ReplicationFactor = 100*time.Millisecond, 3*time.Second, 1
	o.Logger = slog.New(slog.DiscardHandler)
	rt, err := processor.NewRuntime(topo, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runtime: %v", err)
		}
	}()
	kafkatest.Eventually(t, time.Minute, "the group running", func() bool { ok, _ := rt.Ready(); return ok })

	want := map[string]int{}
	round := func(n int) {
		var kv []string
		for range n {
			for k := range keys {
				key := "user-" + strconv.Itoa(k)
				kv = append(kv, key, "click")
				want[key]++
			}
		}
		produce(t, c, input, partition.Murmur2(), kv...)
	}
	adm := c.Admin()
	check := func(ch *child, phase string) {
		kafkatest.Eventually(t, time.Minute, phase+": the group committed its input", func() bool { return kafkatest.CommittedThrough(adm, app, input) })
		ch.ask("sync")
		for k, n := range want {
			if a := ch.ask("get " + k); !a.Found || a.Value != strconv.Itoa(n) {
				t.Errorf("%s: %s = %+v, want %d", phase, k, a, n)
			}
		}
	}

	round(5)
	ch := startChild(t, c, state.ChangelogTopic(app, "counts"))
	check(ch, "first")
	round(7) // the group goes on; the reader follows
	check(ch, "second")
	ch.quit()
}

// TestReaderReopenedOnItsStateDirRestoresOnlyWhatItMissed: with StateDir,
// a Mirror opened again applies only the records written since it closed,
// and reads a goka table (FNV-1a, goka's codecs) through Typed.
func TestReaderReopenedOnItsStateDirRestoresOnlyWhatItMissed(t *testing.T) {
	c := kafkatest.New(t)
	topic := c.Name("table-reopen")
	c.CreateTopic(topic, 3, compact)
	fnv := partition.FNV1a()
	produce(t, c, topic, fnv, keyValues("k", 30, "1")...)
	dir := t.TempDir()
	open := func() (*table.Mirror, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		r, err := table.Open(t.Context(), topic, table.Options{KafkaOpts: c.ClientOpts(), StateDir: dir,
			Partitioner: fnv, Registerer: reg, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return r, reg
	}
	restored := func(reg *prometheus.Registry) float64 {
		n, err := testutil.GatherAndCount(reg, "rackstream_state_restored_records_total")
		if err != nil || n == 0 {
			return 0
		}
		mfs, _ := reg.Gather()
		var sum float64
		for _, mf := range mfs {
			if mf.GetName() == "rackstream_state_restored_records_total" {
				for _, m := range mf.GetMetric() {
					sum += m.GetCounter().GetValue()
				}
			}
		}
		return sum
	}
	r, reg := open()
	if got := restored(reg); got != 30 {
		t.Errorf("first open applied %v records, want 30", got)
	}
	if err := r.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	produce(t, c, topic, fnv, "k03", "2", "k04", "")
	r, reg = open()
	defer r.Close(context.Background())
	if got := restored(reg); got != 2 {
		t.Errorf("reopened reader applied %v records, want the 2 written since it closed", got)
	}
	typed := table.NewTyped(r, codec.FromGoka[string](new(gokacodec.String)), codec.FromGoka[int64](new(gokacodec.Int64)))
	if n, found, err := typed.Get("k03"); err != nil || !found || n != 2 {
		t.Errorf("k03 = %d, %v, %v; want 2", n, found, err)
	}
	if _, found, err := typed.Get("k04"); err != nil || found {
		t.Errorf("k04 deleted, found %v (%v)", found, err)
	}
	var sum int64
	var last string
	if err := typed.Scan(func(k string, n int64) bool {
		if k <= last {
			t.Errorf("scan out of order: %s after %s", k, last)
		}
		last, sum = k, sum+n
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if sum != 28+2 { // 28 keys at 1, k03 at 2, k04 gone
		t.Errorf("scan sum %d, want 30", sum)
	}
	if lag := r.Lag(); lag != 0 {
		t.Errorf("lag %d after Open, want 0", lag)
	}
}

// TestReaderScanBoundsAndStop: Scan honours [start, end) across
// partitions and stops when fn returns false.
func TestReaderScanBoundsAndStop(t *testing.T) {
	c := kafkatest.New(t)
	topic := c.Name("table-scan")
	c.CreateTopic(topic, 5, compact)
	produce(t, c, topic, partition.Murmur2(), keyValues("k", 40, "x")...)
	r, err := table.Open(t.Context(), topic, table.Options{KafkaOpts: c.ClientOpts(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	var got []string
	if err := r.Scan([]byte("k10"), []byte("k20"), func(k, _ []byte) bool {
		got = append(got, string(k))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 10; i < 20; i++ {
		want = append(want, fmt.Sprintf("k%02d", i))
	}
	if !slices.Equal(got, want) {
		t.Errorf("scan [k10, k20) = %v, want %v", got, want)
	}
	got = got[:0]
	r.Scan(nil, nil, func(k, _ []byte) bool { got = append(got, string(k)); return len(got) < 3 })
	if !slices.Equal(got, []string{"k00", "k01", "k02"}) {
		t.Errorf("scan stopped after 3: %v", got)
	}
	if err := r.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Get([]byte("k01")); err == nil {
		t.Error("Get after Close succeeded")
	}
}

// TestOpenOnAMissingTopicFailsNamingIt: no topic, no Mirror, and nothing
// left behind.
func TestOpenOnAMissingTopicFailsNamingIt(t *testing.T) {
	c := kafkatest.New(t)
	topic := c.Name("table-missing")
	dir := t.TempDir()
	_, err := table.Open(t.Context(), topic, table.Options{KafkaOpts: c.ClientOpts(), StateDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), topic) {
		t.Fatalf("Open on a missing topic: %v; want an error naming %s", err, topic)
	}
	// The state directory is not left locked.
	produceTopic := c.Name("table-present")
	c.CreateTopic(produceTopic, 1, compact)
	r, err := table.Open(t.Context(), produceTopic, table.Options{KafkaOpts: c.ClientOpts(), StateDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r.Close(t.Context())
}
