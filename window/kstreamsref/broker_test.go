package kstreamsref

import (
	"context"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

// One scenario through a real processor.Runtime on a Kafka cluster (Apache
// Kafka 4.4 when RACKSTREAM_TEST_BROKERS is set, as in make test's second
// pass; kfake otherwise) gives Kafka Streams' answer to it: each output
// topic read back record for record, partition by partition, the windows
// the committed stores hold, and the late windows per task. The scenario
// is brokerScenario's, run once with both emit strategies by two
// aggregations of one topology, under exactly_once_v2 with the record
// cache on. Nothing waits on a clock: the input is written first, and the
// test polls with a deadline until the group has committed all of it.
func TestRuntimeOnKafkaEqualsKafkaStreams(t *testing.T) {
	runs := kafkaResults(t)
	// The broker deletes a topic's segments by their records' timestamps:
	// times near the epoch would leave at its next retention check. An
	// hour back keeps them clear of message.timestamp.after.max.ms too.
	base := time.Now().Add(-time.Hour).UnixMilli() / 60_000 * 60_000
	scenarios, kafka := brokerScenario(t, runs.ref, runs.list, base)
	s := scenarios[Update]
	t.Logf("%s: %s windows, %d records over %d partitions", s.Name, s.Window.Type, len(s.Records), s.Partitions)

	c := kafkatest.New(t)
	appID, input := c.Name("kstreamsref"), c.Name("kstreamsref-in")
	c.CreateTopic(input, s.Partitions, nil)
	topo := processor.New(appID)
	aggs := map[Emit]*aggregate{}
	topics := map[Emit]string{}
	var handlers []processor.Handler[string, int64]
	for _, e := range []Emit{Update, Final} {
		topics[e] = c.Name("kstreamsref-" + string(e))
		c.CreateTopic(topics[e], s.Partitions, nil)
		a, out := declareAggregation(topo, scenarios[e], "windows-"+string(e), topics[e])
		aggs[e] = a
		handlers = append(handlers, a.Handler(out))
	}
	processor.NewInput(topo, input, codec.String(), codec.Int64(), func(ctx *processor.Context, key string, value int64) error {
		for _, h := range handlers {
			if err := h(ctx, key, value); err != nil {
				return err
			}
		}
		return nil
	})

	recs := make([]*kgo.Record, len(s.Records))
	for i, r := range s.Records {
		recs[i] = &kgo.Record{
			Topic: input, Partition: r.Partition, Key: []byte(r.Key),
			Value: strconv.AppendInt(nil, r.Value, 10), Timestamp: time.UnixMilli(r.Timestamp),
		}
	}
	producer := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce the input: %v", err)
	}

	rt, reg := runRuntime(t, topo, c)
	adm := c.Admin()
	kafkatest.Eventually(t, 2*time.Minute, "the input processed and committed", func() bool {
		return kafkatest.CommittedThrough(adm, appID, input)
	})

	for _, e := range []Emit{Update, Final} {
		got := &Result{Name: s.Name, Partitions: make([]PartitionResult, s.Partitions)}
		for p := range s.Partitions {
			got.Partitions[p].Partition = p
		}
		for _, r := range c.ConsumeAll(topics[e], kgo.FetchIsolationLevel(kgo.ReadCommitted())) {
			o, err := outputOf(r)
			if err != nil {
				t.Fatalf("%s@%d/%d: %v", r.Topic, r.Partition, r.Offset, err)
			}
			got.Partitions[r.Partition].Output = append(got.Partitions[r.Partition].Output, o)
		}
		late := lateWindows(t, reg, aggs[e].Name())
		for p := range s.Partitions {
			got.Partitions[p].DroppedRecords = late[strconv.Itoa(int(p))]
		}
		// A task's committed view may catch up with its commit a moment
		// after the offsets do: poll it until it holds Kafka's windows or
		// a minute has passed, then compare.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			stores := committedWindows(t, rt, aggs[e].Name(), s.Partitions)
			for p := range s.Partitions {
				got.Partitions[p].Store = stores[p]
			}
			if sameStores(got, kafka[e]) || time.Now().After(deadline) {
				break
			}
		}
		for _, d := range resultDiffs("runtime", e, got, kafka[e], false) {
			t.Errorf("emit %s on %s: %s", e, c.Kind(), d)
		}
		// The timestamps Kafka's answer does not share are the TestDriver's,
		// which RunProcessor checks are the input records'.
		driver, err := RunProcessor(scenarios[e])
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range resultDiffs("runtime", e, got, driver, true) {
			t.Errorf("emit %s on %s, against the TestDriver: %s", e, c.Kind(), d)
		}
		var outputs, stored, drops int
		for _, pr := range got.Partitions {
			outputs, stored, drops = outputs+len(pr.Output), stored+len(pr.Store), drops+int(pr.DroppedRecords)
		}
		t.Logf("emit %s on %s: %d output records, %d stored windows, %d late windows compared", e, c.Kind(), outputs, stored, drops)
	}
}

// brokerScenario returns the scenario of the broker test in both emit
// strategies, its times moved by base, with Kafka Streams' answers: the
// first session scenario of list with several partitions and at most 60
// records whose answer under emit-on-update has a merge (a tombstone) and
// a late record, so that one small case reaches what sessions make a
// runtime do: deletes from the store and its changelog, retractions on the
// output, drops.
func brokerScenario(t *testing.T, ref *Reference, list []Scenario, base int64) (map[Emit]Scenario, map[Emit]*Result) {
	t.Helper()
	for _, s := range list {
		if s.Window.Type != Session || s.Partitions < 2 || len(s.Records) > 60 {
			continue
		}
		s.Records = slices.Clone(s.Records)
		for i := range s.Records {
			s.Records[i].Timestamp += base
		}
		scenarios, results := map[Emit]Scenario{}, map[Emit]*Result{}
		for _, e := range []Emit{Update, Final} {
			se := s
			se.Name, se.Emit = s.Name+"-on-broker-"+string(e), e
			res, err := ref.Run(se)
			if err != nil {
				t.Fatal(err)
			}
			scenarios[e], results[e] = se, res
		}
		var tombstones, dropped int
		for _, pr := range results[Update].Partitions {
			dropped += int(pr.DroppedRecords)
			for _, o := range pr.Output {
				if o.Value == nil {
					tombstones++
				}
			}
		}
		if tombstones > 0 && dropped > 0 {
			return scenarios, results
		}
	}
	t.Fatal("no small session scenario of several partitions with a merge and a late record in the list")
	return nil, nil
}

func sameStores(a, b *Result) bool {
	return slices.EqualFunc(a.Partitions, b.Partitions, func(x, y PartitionResult) bool { return slices.Equal(x.Store, y.Store) })
}

// runRuntime runs topo on c under exactly_once_v2 with the record cache
// on, until the test ends, and returns the runtime and its registry.
func runRuntime(t *testing.T, topo *processor.Topology, c *kafkatest.Cluster) (*processor.Runtime, *prometheus.Registry) {
	t.Helper()
	o := processor.DefaultOptions()
	o.Brokers, o.StateDir = c.Brokers, t.TempDir()
	o.Guarantee = processor.ExactlyOnceV2
	o.CommitInterval = 100 * time.Millisecond
	o.CacheMaxBytes = 1 << 20
	level := slog.LevelError
	if os.Getenv("RACKSTREAM_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	rt, err := processor.NewRuntime(topo, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runtime: %v", err)
		}
	})
	return rt, reg
}

// lateWindows returns rackstream_window_late_records_total of store by
// task.
func lateWindows(t *testing.T, reg *prometheus.Registry, store string) map[string]int64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, mf := range mfs {
		if mf.GetName() != "rackstream_window_late_records_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var task, s string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "task":
					task = l.GetValue()
				case "store":
					s = l.GetValue()
				}
			}
			if s == store {
				out[task] += int64(m.GetCounter().GetValue())
			}
		}
	}
	return out
}

// committedWindows returns, per task, the windows of store that its
// committed view holds, sorted as the reference sorts its store.
func committedWindows(t *testing.T, rt *processor.Runtime, store string, tasks int32) [][]StoredWindow {
	t.Helper()
	out := make([][]StoredWindow, tasks)
	for task := range tasks {
		rep, ok := rt.Replica(task)
		if !ok {
			continue
		}
		view := rep.Store(store)
		if view == nil {
			continue
		}
		ws, err := view.AllWindows(0, math.MaxInt64)
		if err != nil {
			t.Fatalf("task %d: %v", task, err)
		}
		for _, w := range ws {
			v, err := codec.Int64().Decode(w.Value)
			if err != nil {
				t.Fatalf("task %d: window [%d,%d] of %q: %v", task, w.Start, w.End, w.Key, err)
			}
			out[task] = append(out[task], StoredWindow{Key: string(w.Key), Start: w.Start, End: w.End, Value: v})
		}
		sortStore(out[task])
	}
	return out
}
