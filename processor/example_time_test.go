package processor_test

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
)

// The timers snippet of docs/time-and-windows.md: a host silent for 30
// seconds of stream time is reported once, by its durable timer; a
// wall-clock punctuator reports the stream time every minute.
func Example_timers() {
	topo := processor.New("heartbeat-monitor")
	alerts := processor.NewOutput(topo, "alerts", codec.String(), codec.String())
	watchHeartbeats(topo, alerts)
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, beat := range []struct {
		host string
		sec  int64
	}{{"a", 0}, {"b", 10}, {"a", 20}, {"c", 45}, {"c", 60}} {
		r := &kgo.Record{Topic: "heartbeats", Key: []byte(beat.host), Value: []byte("up"), Timestamp: time.Unix(beat.sec, 0)}
		if err := d.PipeRecord(r); err != nil {
			fmt.Println(err)
		}
	}
	if err := d.AdvanceWallClockTime(time.Minute); err != nil {
		fmt.Println(err)
	}
	out, _ := processor.ReadOutput(d, alerts)
	for _, kv := range out {
		fmt.Println(kv.Key, kv.Value)
	}
	// Output:
	// b silent since 00:00:10
	// a silent since 00:00:20
	// report stream time 00:01:00
}

func watchHeartbeats(topo *processor.Topology, alerts *processor.Output[string, string]) {
	var deadlines *processor.Timers[string]
	processor.NewInput(topo, "heartbeats", codec.String(), codec.String(),
		func(ctx *processor.Context, host, _ string) error {
			// Each beat moves the host's deadline to 30 s after it.
			return deadlines.Set(ctx, host, processor.StreamTime, ctx.Timestamp().Add(30*time.Second))
		})
	deadlines = processor.OnTimer(topo, "deadline", codec.String(),
		func(ctx *processor.Context, host string, due time.Time) error {
			return alerts.Emit(ctx, host, "silent since "+due.Add(-30*time.Second).Format(time.TimeOnly))
		})
	processor.Schedule(topo, "report", time.Minute, processor.WallClock,
		func(ctx *processor.Context, now time.Time) error {
			return alerts.Emit(ctx, "report", "stream time "+ctx.StreamTime().Format(time.TimeOnly))
		})
}
