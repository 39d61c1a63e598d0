package main

import (
	"testing"
	"time"
)

// TestLoadAcksCountInTheInstancesBuckets: the load's acknowledgement times
// fall in the buckets of the instances' end-to-end histogram (1 ms
// doubling), so that the freshness row reads both the same way.
func TestLoadAcksCountInTheInstancesBuckets(t *testing.T) {
	var p producer
	for _, d := range []time.Duration{500 * time.Microsecond, time.Millisecond, 3 * time.Millisecond, 3 * time.Millisecond, time.Hour} {
		p.acked[ackBucket(d)].Add(1)
	}
	c := p.ackCounts()
	if c.n != 5 {
		t.Fatalf("%v acknowledgements counted, want 5", c.n)
	}
	for q, want := range map[float64]string{0.4: "1ms", 0.8: "4ms", 1: "+Inf"} {
		if got := c.under(q); got != want {
			t.Errorf("quantile %v under %s, want %s", q, got, want)
		}
	}
}

func TestSlowestProbesAreListedSlowestFirst(t *testing.T) {
	at := time.Date(2026, 12, 4, 19, 52, 11, 183e6, time.UTC)
	probes := []*probe{
		{sent: at, part: 9, ack: 7 * time.Millisecond, lat: 48 * time.Millisecond},
		{sent: at.Add(time.Second), part: 2, ack: time.Millisecond, lat: 148 * time.Millisecond},
		{sent: at.Add(2 * time.Second), part: 0, ack: 0, lat: 12 * time.Millisecond},
	}
	got := slowest(probes, 2)
	want := "19:52:12.183 148ms (ack 1ms, partition 2); 19:52:11.183 48ms (ack 7ms, partition 9)"
	if got != want {
		t.Fatalf("slowest = %q\nwant %q", got, want)
	}
	if probes[0].part != 9 {
		t.Fatal("slowest reordered its argument")
	}
	if got := slowest(nil, 3); got != "" {
		t.Fatalf("slowest(nil) = %q, want empty", got)
	}
}
