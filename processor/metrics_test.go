package processor

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestEndToEndLatencyRunsFromTheRecordsTimestamp: the timed records (one
// in latencyEvery) observe the time from their timestamp to the end of
// their processing; a timestamp ahead of the instance's clock (producers
// on other machines) counts as 0, not as a negative latency.
func TestEndToEndLatencyRunsFromTheRecordsTimestamp(t *testing.T) {
	h := newHarness(t, nil)
	now := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	h.env.now = func() time.Time { return now }
	h.start(0)
	task := h.m.task(0)
	p := kgo.FetchTopicPartition{Topic: harnessInput, FetchPartition: kgo.FetchPartition{Partition: 0}}
	for i := range latencyEvery + 1 {
		ts := now.Add(-1500 * time.Millisecond) // the first timed record: 1.5 s old
		switch {
		case i == latencyEvery:
			ts = now.Add(time.Hour) // the second: from a clock ahead of ours
		case i > 0:
			ts = now.Add(-time.Hour) // untimed: must not count
		}
		p.Records = append(p.Records, &kgo.Record{Topic: harnessInput, Partition: 0, Offset: int64(i), Key: []byte("k"), Value: []byte("v"), Timestamp: ts})
	}
	if !task.push(p) {
		t.Fatal("task 0 took no records")
	}
	h.waitProcessed(task, latencyEvery+1)
	fams, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "rackstream_record_e2e_latency_seconds" {
			continue
		}
		hist := f.GetMetric()[0].GetHistogram()
		if hist.GetSampleCount() != 2 || hist.GetSampleSum() != 1.5 {
			t.Fatalf("end-to-end latency: %d samples summing to %vs; want 2 summing to 1.5s (1.5 s, and 0 for the timestamp ahead)", hist.GetSampleCount(), hist.GetSampleSum())
		}
		return
	}
	t.Fatal("no rackstream_record_e2e_latency_seconds series")
}
