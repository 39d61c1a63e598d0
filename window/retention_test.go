package window

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSegments(t *testing.T) {
	day := int64(86_400_000)
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"the interval is half the retention", NewSegments(day).Interval, day / 2},
		{"the interval is at least a minute", NewSegments(10_000).Interval, int64(60_000)},
		{"a segment covers [id*interval, (id+1)*interval)", []int64{NewSegments(day).ID(0), NewSegments(day).ID(day/2 - 1), NewSegments(day).ID(day / 2)}, []int64{0, 0, 1}},
		{"negative times round down", NewSegments(120_000).ID(-1), int64(-1)},
		{"a segment starts at id*interval", NewSegments(day).Start(3), 3 * day / 2},
		{"nothing expires within the first retention", NewSegments(day).MinLive(day - 1), int64(-1)},
		{"segments wholly older than the retention expire", NewSegments(day).Expired([]int64{0, 1, 2, 3, 4}, 3*day), []int64{0, 1, 2, 3}},
		{"the segment holding now - retention stays", NewSegments(day).Expired([]int64{1, 2, 3}, 2*day+1), []int64{1}},
		{"a window exactly a retention old is not visible", NewSegments(day).Live(day, 2*day), false},
		{"a window one ms younger is", NewSegments(day).Live(day+1, 2*day), true},
		{"a window exactly a retention old can still be emitted as final", NewSegments(day).LiveForFinals(day, 2*day), true},
		{"one ms older it cannot", NewSegments(day).LiveForFinals(day-1, 2*day), false},
		{"a window past retention is kept while its segment holds now - retention", []bool{NewSegments(day).Live(day, 2*day+day/2-1), NewSegments(day).Kept(day, 2*day+day/2-1)}, []bool{false, true}},
		{"a segment wholly older than now - retention is not kept", NewSegments(day).Kept(day-1, 2*day), false},
		{"within the first minute nothing expires: 5 ms windows past a 5 ms retention are still kept", NewSegments(5).Kept(0, 59_999), true},
		{"the changelog keeps the store's retention plus the margin", ChangelogRetention(day, day), 2 * day},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			switch g := tt.got.(type) {
			case []int64:
				if !slices.Equal(g, tt.want.([]int64)) {
					t.Fatalf("got %v, want %v", g, tt.want)
				}
			case []bool:
				if !slices.Equal(g, tt.want.([]bool)) {
					t.Fatalf("got %v, want %v", g, tt.want)
				}
			default:
				if g != tt.want {
					t.Fatalf("got %v, want %v", g, tt.want)
				}
			}
		})
	}
}

// TestPropertySegmentsNeverDropVisibleWindows: a segment expires only once
// every window in it is invisible, and a store holds a bounded number of
// live segments: no more than Retention/Interval + 2.
func TestPropertySegmentsNeverDropVisibleWindows(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for range 100000 {
		s := NewSegments(1 + r.Int64N(1_000_000))
		now := r.Int64N(10_000_000)
		ts := now - r.Int64N(2*s.Retention+2*s.Interval)
		if s.LiveForFinals(ts, now) && !s.Kept(ts, now) {
			t.Fatalf("%+v: live window at %d in expired segment %d at %d", s, ts, s.ID(ts), now)
		}
		if n := s.ID(now) - s.MinLive(now) + 1; n > s.Retention/s.Interval+2 {
			t.Fatalf("%+v: %d live segments at %d", s, n, now)
		}
	}
}
