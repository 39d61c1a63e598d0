package main

import (
	"strings"
	"testing"
	"time"
)

func TestTheFreshnessP99IsTheMedianOfItsWindows(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name     string
		windows  []time.Duration
		pooled   time.Duration
		want     time.Duration
		wantNote string
	}{
		{"one window: its own p99", []time.Duration{80 * ms}, 80 * ms, 80 * ms, ""},
		{"none seen", nil, 0, 0, ""},
		{"three: the middle one, whatever their order", []time.Duration{114 * ms, 60 * ms, 83 * ms}, 101 * ms, 83 * ms,
			"median of the p99s of 3 windows of probes of 30s each, one after another: 114ms, 60ms, 83ms (the p99 of all their probes at once: 101ms)"},
		{"two: their mean", []time.Duration{40 * ms, 60 * ms}, 58 * ms, 50 * ms, "2 windows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, note := windowsMedian(c.windows, c.pooled, 30*time.Second)
			if got != c.want {
				t.Errorf("p99 %v, want %v", got, c.want)
			}
			if (c.wantNote == "") != (note == "") || !strings.Contains(note, c.wantNote) {
				t.Errorf("note %q, want one containing %q", note, c.wantNote)
			}
		})
	}
}

func TestSeenLatenciesAreTheSeenProbesSorted(t *testing.T) {
	ms := time.Millisecond
	got := seenLatencies([]*probe{{lat: 30 * ms}, {lat: 0}, {lat: 10 * ms}, {lat: 20 * ms}})
	if len(got) != 3 || got[0] != 10*ms || got[1] != 20*ms || got[2] != 30*ms {
		t.Fatalf("seenLatencies = %v, want [10ms 20ms 30ms] (the unseen probe left out)", got)
	}
}
