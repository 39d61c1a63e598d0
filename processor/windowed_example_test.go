package processor_test

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/window"
)

// The declarations of docs/time-and-windows.md: each function's body is a
// snippet of that page, and the examples below run it.

func clicksPerMinute(topo *processor.Topology) *processor.Output[string, processor.WindowValue[int64]] {
	perMinute := processor.NewWindowedAggregation(topo, "clicks-per-minute",
		window.Tumbling(60_000).WithGrace(10_000), // one-minute windows, 10 s for stragglers
		codec.String(), codec.Int64(), processor.Count[string, string](),
		processor.EmitFinal()) // one result per user and minute, once it is over
	out := processor.NewWindowedOutput[string, int64](topo, "clicks-per-minute", codec.String())
	processor.NewInput(topo, "clicks", codec.String(), codec.String(), perMinute.Handler(out))
	return out
}

func clicksLastFiveMinutes(topo *processor.Topology) *processor.Output[string, processor.WindowValue[int64]] {
	recent := processor.NewWindowedAggregation(topo, "clicks-5m",
		window.Hopping(5*60_000, 60_000), // five minutes long, one starting every minute
		codec.String(), codec.Int64(), processor.Count[string, string]())
	out := processor.NewWindowedOutput[string, int64](topo, "clicks-5m", codec.String())
	processor.NewInput(topo, "clicks", codec.String(), codec.String(), recent.Handler(out))
	return out
}

func spendWithinTenSeconds(topo *processor.Topology) *processor.Output[string, processor.WindowValue[int64]] {
	spend := processor.NewWindowedAggregation(topo, "spend-10s",
		window.Sliding(10_000), // any two payments at most 10 s apart share a window
		codec.String(), codec.Int64(), processor.Aggregator[string, int64, int64]{
			Init: func() int64 { return 0 },
			Add:  func(user string, cents, total int64) int64 { return total + cents },
		})
	out := processor.NewWindowedOutput[string, int64](topo, "spend-10s", codec.String())
	processor.NewInput(topo, "payments", codec.String(), codec.Int64(), spend.Handler(out))
	return out
}

func visits(topo *processor.Topology) *processor.Output[string, processor.WindowValue[int64]] {
	sessions := processor.NewWindowedAggregation(topo, "visits",
		window.Session(30*60_000).WithGrace(30*60_000), // a visit ends after 30 minutes without a page view
		codec.String(), codec.Int64(), processor.Count[string, string]())
	out := processor.NewWindowedOutput[string, int64](topo, "visits", codec.String())
	processor.NewInput(topo, "page-views", codec.String(), codec.String(), sessions.Handler(out))
	return out
}

// clickAt pipes a record of key to topic at minute:second past midnight UTC,
// January 1st 2026.
func clickAt(d *processor.TestDriver, topic, key, value string, minute, second int) {
	ts := time.Date(2026, 1, 1, 0, minute, second, 0, time.UTC)
	if err := d.PipeRecord(&kgo.Record{Topic: topic, Partition: -1, Key: []byte(key), Value: []byte(value), Timestamp: ts}); err != nil {
		fmt.Println(err)
	}
}

func printWindows(d *processor.TestDriver, out *processor.Output[string, processor.WindowValue[int64]]) {
	rs, err := processor.ReadOutput(d, out)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rs {
		if r.Tombstone {
			fmt.Println(r.Key, "retracted")
			continue
		}
		start, end := time.UnixMilli(r.Value.Start).UTC(), time.UnixMilli(r.Value.End).UTC()
		fmt.Printf("%s %s-%s %d\n", r.Key, start.Format("15:04:05.000"), end.Format("15:04:05.000"), r.Value.Value)
	}
}

func newDriver(topo *processor.Topology) *processor.TestDriver {
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{})
	if err != nil {
		panic(err)
	}
	return d
}

// Tumbling windows with a grace period, emitting each window's final
// result once stream time passes its end plus grace.
func ExampleNewWindowedAggregation_tumbling() {
	topo := processor.New("clicks")
	out := clicksPerMinute(topo)
	d := newDriver(topo)
	clickAt(d, "clicks", "ann", "/a", 0, 5)
	clickAt(d, "clicks", "ann", "/b", 1, 2)
	clickAt(d, "clicks", "ann", "/c", 0, 59) // late, within grace: counted in 00:00
	clickAt(d, "clicks", "bob", "/a", 1, 9)  // stream time 01:09 < 01:10: 00:00 is still open
	clickAt(d, "clicks", "bob", "/b", 1, 10) // 00:00 closes
	printWindows(d, out)
	// Output:
	// ann 00:00:00.000-00:01:00.000 2
}

// Hopping windows, emitting every update of every window a record falls
// in.
func ExampleNewWindowedAggregation_hopping() {
	topo := processor.New("clicks")
	out := clicksLastFiveMinutes(topo)
	d := newDriver(topo)
	clickAt(d, "clicks", "ann", "/a", 1, 30)
	printWindows(d, out)
	// Output:
	// ann 23:57:00.000-00:02:00.000 1
	// ann 23:58:00.000-00:03:00.000 1
	// ann 23:59:00.000-00:04:00.000 1
	// ann 00:00:00.000-00:05:00.000 1
	// ann 00:01:00.000-00:06:00.000 1
}

// Sliding windows: a window per pair of records at most the time
// difference apart, ends inclusive.
func ExampleNewWindowedAggregation_sliding() {
	topo := processor.New("payments")
	out := spendWithinTenSeconds(topo)
	d := newDriver(topo)
	clickAt(d, "payments", "ann", "300", 0, 20)
	clickAt(d, "payments", "ann", "200", 0, 25)
	printWindows(d, out)
	// Output:
	// ann 00:00:10.000-00:00:20.000 300
	// ann 00:00:20.001-00:00:30.001 200
	// ann 00:00:15.000-00:00:25.000 500
}

// Session windows: a record within the gap of two sessions merges them,
// and the merged sessions are retracted downstream. Two sessions more than
// the gap apart can only merge through a late record: the grace keeps the
// first open for it.
func ExampleNewWindowedAggregation_session() {
	topo := processor.New("visits")
	out := visits(topo)
	d := newDriver(topo)
	clickAt(d, "page-views", "ann", "/a", 0, 0)
	clickAt(d, "page-views", "ann", "/b", 50, 0)
	clickAt(d, "page-views", "ann", "/c", 25, 0) // late, within grace and 30 minutes of both
	printWindows(d, out)
	// Output:
	// ann 00:00:00.000-00:00:00.000 1
	// ann 00:50:00.000-00:50:00.000 1
	// ann retracted
	// ann retracted
	// ann 00:00:00.000-00:50:00.000 3
}
