package main

import (
	"math"
	"strings"
	"testing"
)

// TestGokaRateAgainstThePipe: the goka rate target's explanation says
// where 8x goka stands against the pipe's own records/s, from the run's
// medians, and says nothing without them.
func TestGokaRateAgainstThePipe(t *testing.T) {
	for _, tc := range []struct {
		name        string
		goka, pipe1 float64
		want        []string
	}{
		{"above the pipe (make bench at 6c505c0, Kafka 4.4)", 174801, 1136097,
			[]string{"1,398,408 records/s here", "1.23x the pipe writing 1 record per input (1,136,097 records/s", "above what any count could reach"}},
		{"within reach", 100000, 1136097,
			[]string{"800,000 records/s here", "0.70 of the pipe writing 1 record per input"}},
		{"no goka figure", 0, 1136097, nil},
		{"no pipe figure", 174801, math.NaN(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := gokaRateAgainstPipe(tc.goka, tc.pipe1)
			if tc.want == nil {
				if got != "" {
					t.Fatalf("got %q, want nothing", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			if tc.goka*8 <= tc.pipe1 && strings.Contains(got, "above what") {
				t.Errorf("%q says out of reach for a target below the pipe", got)
			}
		})
	}
}
