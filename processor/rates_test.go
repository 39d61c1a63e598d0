package processor

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// TestTaskBytesBecomeRatesOverAWindow: fetched input and table bytes and
// produced changelog bytes count for their partition's task; other topics
// do not; rates are bytes over the window since the previous report, and a
// report sooner than minRateWindow repeats the previous rates.
func TestTaskBytesBecomeRatesOverAWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	tb := newTaskBytes([]string{"in", "table"}, []string{"app-s-changelog"}, func() time.Time { return now })
	if r := tb.rates(); r != nil {
		t.Fatalf("first report %v; want none: no window has closed", r)
	}
	var md kgo.BrokerMetadata
	tb.OnFetchBatchRead(md, "in", 0, kgo.FetchBatchMetrics{CompressedBytes: 1500, UncompressedBytes: 9000})
	tb.OnFetchBatchRead(md, "table", 0, kgo.FetchBatchMetrics{CompressedBytes: 500})
	tb.OnFetchBatchRead(md, "app-s-changelog", 1, kgo.FetchBatchMetrics{CompressedBytes: 7777}) // a restore, not the active's flow
	tb.OnProduceBatchWritten(md, "app-s-changelog", 1, kgo.ProduceBatchMetrics{CompressedBytes: 300})
	tb.OnProduceBatchWritten(md, "out", 0, kgo.ProduceBatchMetrics{CompressedBytes: 4000})
	now = now.Add(5 * time.Second)
	if r := tb.rates(); r != nil {
		t.Fatalf("report after 5 s: %v; want none yet", r)
	}
	now = now.Add(5 * time.Second)
	want := map[int32]balancer.TaskRate{0: {Input: 200}, 1: {Changelog: 30}}
	got := tb.rates()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("rates over 10 s: %v; want %v", got, want)
	}
	now = now.Add(time.Second)
	if again := tb.rates(); again[0] != want[0] {
		t.Fatalf("a report 1 s later: %v; want the previous %v", again, want)
	}
	now = now.Add(20 * time.Second)
	if idle := tb.rates(); idle[0] != (balancer.TaskRate{}) {
		t.Fatalf("an idle window: %v; want zero rates", idle)
	}
}
