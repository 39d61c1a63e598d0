package processor_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/internal/cutdial"
	"github.com/rackstream/rackstream/processor"
)

// A task's durable timers and stream time survive a crash: one instance
// sets a stream-time and a wall-clock timer and commits, then is cut off
// from the brokers with no further commit; once the wall-clock timer is
// due, another instance, which held no standby, takes the task over,
// continues from its stream time and fires each timer once, under either
// guarantee.
func TestRuntimeDurableTimersAndStreamTimeMoveToANewOwnerAfterACrash(t *testing.T) {
	c := kafkatest.New(t)
	for _, g := range []processor.Guarantee{processor.AtLeastOnce, processor.ExactlyOnceV2} {
		t.Run(string(g), func(t *testing.T) { timersMoveAfterACrash(t, c, g) })
	}
}

func timersMoveAfterACrash(t *testing.T, c *kafkatest.Cluster, g processor.Guarantee) {
	a := &countApp{c: c, appID: c.Name("timers"), input: c.Name("timers-in"), output: c.Name("timers-out")}
	c.CreateTopic(a.input, 1, nil)
	c.CreateTopic(a.output, 1, nil)
	wallDue := time.Now().Add(4 * time.Second) // past the crash, before the takeover
	topology := func() *processor.Topology {
		topo := processor.New(a.appID)
		out := processor.NewOutput(topo, a.output, codec.String(), codec.String())
		var timers *processor.Timers[string]
		processor.NewInput(topo, a.input, codec.String(), codec.String(), func(ctx *processor.Context, key, cmd string) error {
			switch cmd {
			case "stream":
				return timers.Set(ctx, key, processor.StreamTime, ctx.Timestamp().Add(time.Second))
			case "wall":
				return timers.Set(ctx, key, processor.WallClock, wallDue)
			}
			return out.Emit(ctx, key, "stream time "+strconv.FormatInt(ctx.StreamTime().UnixMilli(), 10))
		})
		timers = processor.OnTimer(topo, "t", codec.String(), func(ctx *processor.Context, key string, due time.Time) error {
			return out.Emit(ctx, key, "fired at "+strconv.FormatInt(due.UnixMilli(), 10))
		})
		return topo
	}
	start := func(name string, tweak func(*processor.Options)) *instance {
		o := a.options(t, name, "zone-a")
		o.Guarantee = g
		tweak(&o)
		return startInstance(t, name, topology(), o)
	}
	produce := func(key, cmd string, ms int64) {
		t.Helper()
		cl := c.Client(kgo.DefaultProduceTopic(a.input))
		ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
		defer cancel()
		r := &kgo.Record{Key: []byte(key), Value: []byte(cmd), Timestamp: time.UnixMilli(ms)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	victim := new(cutdial.Dialer)
	first := start("first", func(o *processor.Options) {
		o.ClientOpts = append(o.ClientOpts, kgo.Dialer(victim.Dial))
		o.ShutdownTimeout = 2 * time.Second
	})
	kafkatest.Eventually(t, time.Minute, "the first instance ready", func() bool { ok, _ := first.rt.Ready(); return ok })
	produce("s", "stream", 10_000) // s fires at stream time 11000
	produce("w", "wall", 10_500)   // stream time 10500
	a.waitCommitted(t, time.Minute)
	victim.Cut()
	kafkatest.Eventually(t, 10*time.Second, "the wall-clock timer due while the task has no owner", func() bool {
		return time.Now().After(wallDue)
	})

	second := start("second", func(*processor.Options) {})
	produce("q", "query", 5_000)  // older: stream time stays 10500
	produce("x", "query", 11_000) // passes s's timer
	kafkatest.Eventually(t, time.Minute, "the second instance answers and fires both timers", func() bool {
		got := lastValues(t, c, a.output)
		return got["q"] == "stream time 10500" && got["x"] == "stream time 11000" &&
			got["s"] == "fired at 11000" && got["w"] == "fired at "+strconv.FormatInt(wallDue.UnixMilli(), 10)
	})
	fired := map[string]int{}
	for _, r := range lastValuesWithHeaders(t, c, a.output) {
		fired[string(r.Key)]++
	}
	if fired["s"] != 1 || fired["w"] != 1 {
		t.Errorf("timers fired %d (stream) and %d (wall) times, want once each", fired["s"], fired["w"])
	}
	// The stream time is the task's status and a metric.
	if rep, ok := second.rt.Replica(0); !ok || rep.StreamTime.UnixMilli() != 11_000 {
		t.Errorf("the second instance's replica of task 0 (held: %v) has stream time %v, want 11000 ms", ok, rep.StreamTime)
	}
	if got := gaugeValue(t, second.reg, "rackstream_stream_time_seconds"); got != 11 {
		t.Errorf("rackstream_stream_time_seconds = %v, want 11", got)
	}
	if n := victim.WritesAfterCut(); n > 0 {
		t.Logf("the cut instance attempted %d writes after the cut; all failed", n)
	}
}

// gaugeValue returns the value of the gauge name (the first series).
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.Metric) > 0 {
			return mf.Metric[0].GetGauge().GetValue()
		}
	}
	return -1
}
