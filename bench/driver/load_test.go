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
