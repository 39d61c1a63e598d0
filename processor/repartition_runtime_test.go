package processor_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/internal/cutdial"
	"github.com/rackstream/rackstream/processor"
)

// repartApp counts orders per country: the orders, keyed by order id with
// the country as their value, go through the repartition topic
// <app>-by-country-repartition to the task owning their country, which
// counts them and emits each new count.
type repartApp struct {
	c                    *kafkatest.Cluster
	appID, input, output string
	parts                int32
	countries            []string
	produced             int // orders so far
}

func newRepartApp(t *testing.T, c *kafkatest.Cluster) *repartApp {
	a := &repartApp{c: c, appID: c.Name("repart"), input: c.Name("orders"), output: c.Name("per-country"), parts: 4,
		countries: []string{"FR", "DE", "NL", "IT", "ES", "BE", "PL"}}
	c.CreateTopic(a.input, a.parts, nil)
	c.CreateTopic(a.output, a.parts, nil)
	return a
}

func (a *repartApp) repartition() string { return processor.RepartitionTopic(a.appID, "by-country") }

func (a *repartApp) topology() *processor.Topology {
	topo := processor.New(a.appID)
	counts := processor.NewStore(topo, "counts", codec.String(), codec.Int64())
	out := processor.NewOutput(topo, a.output, codec.String(), codec.Int64(), processor.AsStream())
	byCountry := processor.NewRepartition(topo, "by-country", codec.String(), codec.String(), func(ctx *processor.Context, country, _ string) error {
		n, _, err := counts.Get(ctx, country)
		if err != nil {
			return err
		}
		if err := counts.Put(ctx, country, n+1); err != nil {
			return err
		}
		return out.Emit(ctx, country, n+1)
	})
	processor.NewInput(topo, a.input, codec.String(), codec.String(), processor.GroupBy(byCountry, func(_, country string) string { return country }))
	return topo
}

func (a *repartApp) start(t *testing.T, name string, g processor.Guarantee, tweak func(*processor.Options)) *instance {
	t.Helper()
	o := testOptions(t, a.c.Brokers, name)
	o.Guarantee = g
	o.CommitInterval = 100 * time.Millisecond
	o.CacheMaxBytes = 1 << 20 // on: the re-keyed records must get past it whole
	o.SessionTimeout = 3 * time.Second
	processor.SetHeartbeatInterval(&o, 200*time.Millisecond)
	if tweak != nil {
		tweak(&o)
	}
	return startInstance(t, name, a.topology(), o)
}

// produce writes n more orders, spread over the countries in turn.
func (a *repartApp) produce(t *testing.T, n int) {
	t.Helper()
	var recs []*kgo.Record
	for range n {
		i := a.produced
		a.produced++
		recs = append(recs, &kgo.Record{Topic: a.input, Key: []byte("order-" + strconv.Itoa(i)), Value: []byte(a.countries[i%len(a.countries)])})
	}
	a.c.Produce(recs...)
}

// want is each country's count of the orders produced.
func (a *repartApp) want() map[string]int64 {
	w := map[string]int64{}
	for i := range a.produced {
		w[a.countries[i%len(a.countries)]]++
	}
	return w
}

// counts reads the output, read_committed, and returns each country's
// counts in output order.
func (a *repartApp) counts(t *testing.T) map[string][]int64 {
	t.Helper()
	got := map[string][]int64{}
	for _, r := range a.c.ConsumeAll(a.output, kgo.FetchIsolationLevel(kgo.ReadCommitted())) {
		n, err := codec.Int64().Decode(r.Value)
		if err != nil {
			t.Fatalf("output %s@%d: %v", r.Key, r.Offset, err)
		}
		got[string(r.Key)] = append(got[string(r.Key)], n)
	}
	return got
}

// reached reports whether every country's last count is its want.
func (a *repartApp) reached(t *testing.T) bool {
	got := a.counts(t)
	for c, n := range a.want() {
		if l := len(got[c]); l == 0 || got[c][l-1] != n {
			return false
		}
	}
	return true
}

// The repartition topic is created with the inputs' partition count and
// Kafka Streams' settings, and a count through it is exact: each country's
// counts run 1, 2, ... up to its orders, each once, in order.
func TestRepartitionedCountIsExact(t *testing.T) {
	for _, g := range []processor.Guarantee{processor.ExactlyOnceV2, processor.AtLeastOnce} {
		t.Run(string(g), func(t *testing.T) {
			c := kafkatest.New(t)
			a := newRepartApp(t, c)
			in := a.start(t, "r0", g, nil)
			kafkatest.Eventually(t, time.Minute, "r0 ready", func() bool { return allReady(in) })
			for range 4 {
				a.produce(t, 250)
			}
			kafkatest.Eventually(t, 2*time.Minute, "every order counted", func() bool { return a.reached(t) })
			checkSequences(t, a.counts(t), a.want())
			if n := len(c.EndOffsets(a.repartition())); n != int(a.parts) {
				t.Errorf("repartition topic has %d partitions, want the inputs' %d", n, a.parts)
			}
			for k, want := range map[string]string{"cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": "52428800"} {
				if got := c.TopicConfig(a.repartition(), k); got != want {
					t.Errorf("repartition topic's %s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

// checkSequences asserts that each country's counts are 1, 2, ... want:
// no re-keyed record lost, none handled twice.
func checkSequences(t *testing.T, got map[string][]int64, want map[string]int64) {
	t.Helper()
	for c, n := range want {
		seq := got[c]
		ok := int64(len(seq)) == n
		for i := 0; ok && i < len(seq); i++ {
			ok = seq[i] == int64(i+1)
		}
		if !ok {
			t.Errorf("%s: counts %v, want 1..%d once each", c, brief(seq), n)
		}
	}
}

// brief shortens a long sequence for a message.
func brief(seq []int64) string {
	if len(seq) <= 12 {
		return fmt.Sprint(seq)
	}
	return fmt.Sprintf("%v ... %v (%d)", seq[:6], seq[len(seq)-6:], len(seq))
}

// Under exactly_once_v2 a repartitioned count moves to another instance
// in the middle of its stream without a final commit: the first instance
// loses its connections (a crash), with re-keyed records in its open
// transaction. The second one counts every order exactly once.
func TestRepartitionedCountSurvivesACrashExactlyOnce(t *testing.T) {
	c := kafkatest.New(t)
	a := newRepartApp(t, c)
	victim := new(cutdial.Dialer)
	first := a.start(t, "r0", processor.ExactlyOnceV2, func(o *processor.Options) {
		o.ClientOpts = append(o.ClientOpts, kgo.Dialer(victim.Dial))
		o.ShutdownTimeout = 2 * time.Second
	})
	kafkatest.Eventually(t, time.Minute, "r0 ready", func() bool { return allReady(first) })
	a.produce(t, 700)
	kafkatest.Eventually(t, time.Minute, "the first orders counted", func() bool { return a.reached(t) })
	a.produce(t, 700) // in flight when r0 dies
	victim.Cut()
	first.cancel()

	second := a.start(t, "r1", processor.ExactlyOnceV2, nil)
	kafkatest.Eventually(t, 2*time.Minute, "r1 ready", func() bool { return allReady(second) })
	a.produce(t, 700)
	kafkatest.Eventually(t, 2*time.Minute, "every order counted", func() bool { return a.reached(t) })
	checkSequences(t, a.counts(t), a.want())
}

// The owner of a task deletes the records of its repartition partition
// below the committed offset: the log start offset of every partition
// follows the group's committed offset.
func TestRepartitionTopicIsPurgedBelowTheCommittedOffset(t *testing.T) {
	c := kafkatest.New(t)
	a := newRepartApp(t, c)
	in := a.start(t, "r0", processor.AtLeastOnce, func(o *processor.Options) { o.RepartitionPurgeInterval = 200 * time.Millisecond })
	kafkatest.Eventually(t, time.Minute, "r0 ready", func() bool { return allReady(in) })
	a.produce(t, 1000)
	kafkatest.Eventually(t, 2*time.Minute, "every order counted", func() bool { return a.reached(t) })
	ends := c.EndOffsets(a.repartition())
	adm := c.Admin()
	kafkatest.Eventually(t, time.Minute, "the log start offsets at the committed offsets", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		starts, err := adm.ListStartOffsets(ctx, a.repartition())
		if err != nil {
			return false
		}
		committed, err := adm.FetchOffsets(ctx, a.appID)
		if err != nil {
			return false
		}
		ok := true
		starts.Each(func(o kadm.ListedOffset) {
			if ends[o.Partition] == 0 {
				return // no country of this partition
			}
			cm, found := committed.Lookup(a.repartition(), o.Partition)
			if !found || cm.At != ends[o.Partition] || o.Offset != cm.At {
				ok = false
			}
		})
		return ok
	})
}

// A repartition topic that exists with another partition count than the
// inputs' stops the start, naming the topics and their counts.
func TestARepartitionTopicWithAnotherPartitionCountStopsTheStart(t *testing.T) {
	c := kafkatest.New(t)
	a := newRepartApp(t, c)
	c.CreateTopic(a.repartition(), a.parts+1, nil)
	o := testOptions(t, c.Brokers, "r0")
	rt, err := processor.NewRuntime(a.topology(), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = rt.Run(ctx)
	var pce *processor.PartitionCountError
	if !errors.As(err, &pce) {
		t.Fatalf("Run = %v, want a *processor.PartitionCountError", err)
	}
	for _, s := range []string{a.input + "=4", a.repartition() + "=5"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
}
