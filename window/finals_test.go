package window

import "testing"

func TestFinalsDue(t *testing.T) {
	type step struct {
		lastClose, st int64
		want          Finals
		ok            bool
	}
	tests := []struct {
		name string
		due  func(lastClose, st int64) (Finals, bool)
		step step
	}{
		{"tumbling: nothing is final before the first window closes", Tumbling(10).FinalsDue, step{NoTimestamp, 9, Finals{}, false}},
		{"tumbling: the first window is final when stream time reaches its end", Tumbling(10).FinalsDue, step{NoTimestamp, 10, Finals{0, 0, 10}, true}},
		{"tumbling: grace delays finality", Tumbling(10).WithGrace(5).FinalsDue, step{NoTimestamp, 14, Finals{}, false}},
		{"tumbling: final at end + grace", Tumbling(10).WithGrace(5).FinalsDue, step{NoTimestamp, 15, Finals{0, 0, 10}, true}},
		{"tumbling: the range resumes after the last emitted start", Tumbling(10).FinalsDue, step{10, 35, Finals{1, 25, 35}, true}},
		{"tumbling: no step of stream time, nothing new", Tumbling(10).FinalsDue, step{35, 35, Finals{}, false}},
		{"hopping: starts up to close - size", Hopping(10, 5).FinalsDue, step{NoTimestamp, 17, Finals{0, 7, 17}, true}},
		{"sliding: final once stream time passes end + grace", Sliding(10).WithGrace(2).FinalsDue, step{NoTimestamp, 12, Finals{}, false}},
		{"sliding: window [0,10] is final at stream time 13 with grace 2", Sliding(10).WithGrace(2).FinalsDue, step{NoTimestamp, 13, Finals{0, 0, 11}, true}},
		{"sliding: the range resumes at the next start", Sliding(10).FinalsDue, step{11, 20, Finals{1, 9, 20}, true}},
		{"session: ranges over ends, final once past end + gap + grace", Session(5).WithGrace(1).FinalsDue, step{NoTimestamp, 6, Finals{}, false}},
		{"session: a session ending at 0 is final at stream time 7", Session(5).WithGrace(1).FinalsDue, step{NoTimestamp, 7, Finals{0, 0, 1}, true}},
		{"session: the range resumes at the last close", Session(5).FinalsDue, step{2, 10, Finals{2, 4, 5}, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.due(tt.step.lastClose, tt.step.st)
			if ok != tt.step.ok || got != tt.step.want {
				t.Fatalf("FinalsDue(%d, %d) = %+v, %v; want %+v, %v", tt.step.lastClose, tt.step.st, got, ok, tt.step.want, tt.step.ok)
			}
		})
	}
}
