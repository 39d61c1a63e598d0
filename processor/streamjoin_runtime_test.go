package processor_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/internal/cutdial"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/window"
)

// joinApp left-joins "clicks" with "views" on two partitions, within 100
// ms and a grace of 500 ms. In round n every key has a click at base + n s, and in even rounds a
// view 50 ms later: the even clicks meet their view, the odd ones are
// emitted alone once their window closes.
type joinApp struct {
	c                     *kafkatest.Cluster
	appID                 string
	clicks, views, output string
	parts                 int32
	base                  int64
	keys                  []string
	closers               []string
}

func newJoinApp(t *testing.T, c *kafkatest.Cluster) *joinApp {
	a := &joinApp{c: c, appID: c.Name("sjoin"), clicks: c.Name("sjoin-clicks"), views: c.Name("sjoin-views"),
		output: c.Name("sjoin-out"), parts: 2, base: time.Now().UnixMilli() / 1000 * 1000}
	for _, topic := range []string{a.clicks, a.views, a.output} {
		c.CreateTopic(topic, a.parts, nil)
	}
	for i := range 6 {
		a.keys = append(a.keys, "user-"+strconv.Itoa(i))
	}
	a.closers = make([]string, a.parts)
	for i, found := 0, 0; found < int(a.parts); i++ {
		k := "closer-" + strconv.Itoa(i)
		if p := partition.Murmur2().Partition([]byte(k), a.parts); a.closers[p] == "" {
			a.closers[p] = k
			found++
		}
	}
	return a
}

func (a *joinApp) topology() *processor.Topology {
	topo := processor.New(a.appID)
	j := processor.NewStreamJoin(topo, "clicks-views", window.LeftJoin, window.JoinTimeDifference(100).WithGrace(500), codec.String(), codec.String(), codec.String())
	out := processor.NewJoinedOutput[string, string, string](topo, a.output, codec.String())
	processor.NewInput(topo, a.clicks, codec.String(), codec.String(), j.Left(out))
	processor.NewInput(topo, a.views, codec.String(), codec.String(), j.Right(out))
	return topo
}

// produceRounds writes rounds [from, to): the views first, so that a
// click's view is never behind it.
func (a *joinApp) produceRounds(t *testing.T, from, to int) {
	t.Helper()
	var views, clicks []*kgo.Record
	for n := from; n < to; n++ {
		ts := a.base + int64(n)*1000
		for _, k := range a.keys {
			if n%2 == 0 {
				views = append(views, &kgo.Record{Topic: a.views, Key: []byte(k), Value: []byte("v" + strconv.Itoa(n)), Timestamp: time.UnixMilli(ts + 50)})
			}
			clicks = append(clicks, &kgo.Record{Topic: a.clicks, Key: []byte(k), Value: []byte("c" + strconv.Itoa(n)), Timestamp: time.UnixMilli(ts)})
		}
	}
	a.produce(t, append(views, clicks...))
}

// close writes a click at the start of round n to every partition.
func (a *joinApp) close(t *testing.T, n int) {
	t.Helper()
	var recs []*kgo.Record
	for _, k := range a.closers {
		recs = append(recs, &kgo.Record{Topic: a.clicks, Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(a.base + int64(n)*1000)})
	}
	a.produce(t, recs)
}

func (a *joinApp) produce(t *testing.T, recs []*kgo.Record) {
	t.Helper()
	cl := a.c.Client(kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records: %v", len(recs), err)
	}
}

func (a *joinApp) start(t *testing.T, name string, g processor.Guarantee, tweak func(*processor.Options)) *instance {
	t.Helper()
	return startStreaming(t, a.c, name, a.topology(), g, func(o *processor.Options) {
		o.MaxTaskIdle = time.Second
		if tweak != nil {
			tweak(o)
		}
	})
}

// startStreaming runs topo on an instance named name that commits every
// 100 ms with the record cache on (results that must get past it whole),
// detecting a lost member within seconds; tweak adjusts the options.
func startStreaming(t *testing.T, c *kafkatest.Cluster, name string, topo *processor.Topology, g processor.Guarantee, tweak func(*processor.Options)) *instance {
	t.Helper()
	o := testOptions(t, c.Brokers, name)
	o.Guarantee = g
	o.CommitInterval = 100 * time.Millisecond
	o.CacheMaxBytes = 1 << 20
	o.SessionTimeout = 3 * time.Second
	processor.SetHeartbeatInterval(&o, 200*time.Millisecond)
	if tweak != nil {
		tweak(&o)
	}
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	rt, err := processor.NewRuntime(topo, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{rt: rt, reg: reg, cancel: cancel, done: make(chan error, 1), name: name}
	go func() { in.done <- rt.Run(ctx) }()
	t.Cleanup(func() { in.stop(t) })
	return in
}

// results counts each result of the output (read_committed),
// "key:left|right@ms", by how often it appears.
func (a *joinApp) results(t *testing.T) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, r := range a.c.ConsumeAll(a.output, kgo.FetchIsolationLevel(kgo.ReadCommitted())) {
		v, err := codec.JSON[processor.Joined[string, string]]().Decode(r.Value)
		if err != nil {
			t.Fatalf("output %s@%d: %v", r.Key, r.Offset, err)
		}
		right := "-"
		if v.Right != nil {
			right = *v.Right
		}
		if v.Left == nil {
			t.Fatalf("output %s@%d: a left join result without its left record", r.Key, r.Offset)
		}
		got[fmt.Sprintf("%s:%s|%s@%d", r.Key, *v.Left, right, r.Timestamp.UnixMilli())]++
	}
	return got
}

// want is every result of rounds [0, to).
func (a *joinApp) want(to int) []string {
	var out []string
	for n := range to {
		ts := a.base + int64(n)*1000
		for _, k := range a.keys {
			if n%2 == 0 {
				out = append(out, fmt.Sprintf("%s:c%d|v%d@%d", k, n, n, ts+50))
			} else {
				out = append(out, fmt.Sprintf("%s:c%d|-@%d", k, n, ts))
			}
		}
	}
	return out
}

// A left join moves to another instance in the middle of its streams: the
// first instance loses its connections without a final commit, and a
// second one with an empty state directory takes its tasks over, restoring
// both streams' records, the unmatched ones waiting and the join's
// progress from the changelog. Under exactly_once_v2 every pair and every
// unmatched click appears exactly once, stamped as Kafka Streams stamps it;
// under at_least_once every one appears (a replay may repeat some).
func TestStreamJoinSurvivesAMoveWithoutItsFinalCommit(t *testing.T) {
	for _, g := range []processor.Guarantee{processor.ExactlyOnceV2, processor.AtLeastOnce} {
		t.Run(string(g), func(t *testing.T) { testStreamJoinMove(t, g) })
	}
}

func testStreamJoinMove(t *testing.T, g processor.Guarantee) {
	c := kafkatest.New(t)
	a := newJoinApp(t, c)
	victim := new(cutdial.Dialer)
	first := a.start(t, "j0", g, func(o *processor.Options) {
		o.ClientOpts = append(o.ClientOpts, kgo.Dialer(victim.Dial))
		o.ShutdownTimeout = 2 * time.Second
	})
	kafkatest.Eventually(t, time.Minute, "j0 ready", func() bool { return allReady(first) })
	a.produceRounds(t, 0, 4)
	kafkatest.Eventually(t, time.Minute, "the first results", func() bool { return len(a.results(t)) >= len(a.keys) })
	a.produceRounds(t, 4, 7) // in flight when j0 dies
	victim.Cut()
	first.cancel()

	second := a.start(t, "j1", g, nil)
	kafkatest.Eventually(t, 2*time.Minute, "j1 ready", func() bool { return allReady(second) })
	a.produceRounds(t, 7, 10)
	a.close(t, 11)
	want := a.want(10)
	kafkatest.Eventually(t, 2*time.Minute, "every result", func() bool {
		got := a.results(t)
		for _, w := range want {
			if got[w] == 0 {
				return false
			}
		}
		return true
	})
	if g != processor.ExactlyOnceV2 {
		return
	}
	got := a.results(t)
	for _, w := range want {
		if got[w] != 1 {
			t.Errorf("%s: %d times, want once", w, got[w])
		}
		delete(got, w)
	}
	for r, n := range got {
		t.Errorf("unexpected result %s (%d times)", r, n)
	}
}
