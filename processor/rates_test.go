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
	tb := newTaskBytes([]string{"in", "table"}, []string{"app-s-changelog"}, nil, 2, func() time.Time { return now })
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

// TestOutputBytesCountForTheirTaskInItsOwnPartition: an output record
// counts for the task that emitted it when it lands in the task's own
// partition number, scaled by the compression the output batches show;
// records landing elsewhere, and records of other topics, do not count.
func TestOutputBytesCountForTheirTaskInItsOwnPartition(t *testing.T) {
	now := time.Unix(1000, 0)
	tb := newTaskBytes([]string{"in"}, nil, []string{"out"}, 3, func() time.Time { return now })
	tb.rates() // opens the first window
	rec := func(topic string, p int32, key, value string) *kgo.Record {
		return &kgo.Record{Topic: topic, Partition: p, Key: []byte(key), Value: []byte(value),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}
	}
	for range 100 {
		tb.emit(1, rec("out", 1, "key", "value-12345678")) // 3 + 14 + 2 bytes
	}
	tb.emit(1, rec("out", 2, "key", "re-keyed elsewhere"))
	tb.emit(2, rec("dlq", 2, "key", "not an output"))
	tb.emit(7, rec("out", 7, "key", "a task out of range"))
	var md kgo.BrokerMetadata
	tb.OnProduceBatchWritten(md, "out", 1, kgo.ProduceBatchMetrics{CompressedBytes: 1000, UncompressedBytes: 4000})
	now = now.Add(10 * time.Second)
	got := tb.rates()
	if want := (balancer.TaskRate{Output: 100 * 19 / 10 / 4}); len(got) != 1 || got[1] != want {
		t.Fatalf("rates %v; want task 1 alone at %+v", got, want)
	}
}
