package window

import (
	"slices"
	"testing"
)

func TestWindowsForAlignsToTheEpoch(t *testing.T) {
	tests := []struct {
		name string
		def  TimeWindows
		ts   int64
		want []Window
	}{
		{"tumbling: a record lands in the one window containing it", Tumbling(10), 25, []Window{{20, 30}}},
		{"tumbling: the start belongs to the window", Tumbling(10), 20, []Window{{20, 30}}},
		{"tumbling: the end belongs to the next window", Tumbling(10), 29, []Window{{20, 30}}},
		{"tumbling: timestamp 0 is in the first window", Tumbling(10), 0, []Window{{0, 10}}},
		{"hopping: a record lands in size/advance windows, oldest first", Hopping(10, 5), 12, []Window{{5, 15}, {10, 20}}},
		{"hopping: on a boundary the window ending there is excluded", Hopping(10, 5), 15, []Window{{10, 20}, {15, 25}}},
		{"hopping: windows never start before 0", Hopping(10, 5), 3, []Window{{0, 10}}},
		{"hopping: uneven advance gives ceil or floor windows", Hopping(10, 3), 10, []Window{{3, 13}, {6, 16}, {9, 19}}},
		{"hopping: uneven advance near the start", Hopping(10, 3), 9, []Window{{0, 10}, {3, 13}, {6, 16}, {9, 19}}},
		{"a daily window is aligned to UTC midnight", Tumbling(86_400_000), 86_400_000 + 3_600_000, []Window{{86_400_000, 172_800_000}}},
		{"a negative timestamp is in no window", Tumbling(10), -1, nil},
		{"a timestamp past MaxTimestamp is in no window", Tumbling(10), MaxTimestamp + 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.def.WindowsFor(tt.ts); !slices.Equal(got, tt.want) {
				t.Fatalf("WindowsFor(%d) = %v, want %v", tt.ts, got, tt.want)
			}
		})
	}
}

func TestWindowsCloseAsInKafkaStreams(t *testing.T) {
	tests := []struct {
		name   string
		closed bool
		want   bool
	}{
		{"time window: open one ms before end + grace", Tumbling(10).WithGrace(5).Closed(Window{0, 10}, 14), false},
		{"time window: closed at exactly end + grace", Tumbling(10).WithGrace(5).Closed(Window{0, 10}, 15), true},
		{"time window without grace: closed when stream time reaches its end", Tumbling(10).Closed(Window{0, 10}, 10), true},
		{"sliding window: open at exactly end + grace (end inclusive)", Sliding(10).WithGrace(5).Closed(Window{0, 10}, 15), false},
		{"sliding window: closed one ms later", Sliding(10).WithGrace(5).Closed(Window{0, 10}, 16), true},
		{"session: open at exactly end + gap + grace", Session(10).WithGrace(5).Closed(Window{0, 3}, 18), false},
		{"session: closed one ms later", Session(10).WithGrace(5).Closed(Window{0, 3}, 19), true},
		{"nothing is closed before any record", Tumbling(1).Closed(Window{0, 1}, NoTimestamp), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.closed != tt.want {
				t.Fatalf("closed = %v, want %v", tt.closed, tt.want)
			}
		})
	}
}

func TestLateRecords(t *testing.T) {
	t.Run("hopping: a record is late window by window", func(t *testing.T) {
		open, late := Hopping(10, 5).Place(12, 19)
		if !slices.Equal(open, []Window{{10, 20}}) || !slices.Equal(late, []Window{{5, 15}}) {
			t.Fatalf("open %v late %v", open, late)
		}
	})
	t.Run("tumbling: a record within grace is placed", func(t *testing.T) {
		open, late := Tumbling(10).WithGrace(5).Place(9, 14)
		if !slices.Equal(open, []Window{{0, 10}}) || late != nil {
			t.Fatalf("open %v late %v", open, late)
		}
	})
	t.Run("sliding: late when the window starting at the record has closed", func(t *testing.T) {
		w := Sliding(10).WithGrace(5)
		if w.Late(5, 20) {
			t.Fatal("record at 5 with stream time 20 = 5+10+5 must still be accepted")
		}
		if !w.Late(5, 21) {
			t.Fatal("record at 5 with stream time 21 must be late")
		}
	})
}

func TestStreamTimeNeverGoesBack(t *testing.T) {
	var s StreamTime
	if s.Time() != NoTimestamp {
		t.Fatalf("empty tracker reads %d", s.Time())
	}
	steps := []struct{ ts, want int64 }{{5, 5}, {3, 5}, {9, 9}, {9, 9}, {0, 9}, {12, 12}}
	for _, st := range steps {
		if got := s.Observe(st.ts); got != st.want {
			t.Fatalf("Observe(%d) = %d, want %d", st.ts, got, st.want)
		}
	}
	r := RestoreStreamTime(s.Time())
	if r.Observe(10) != 12 {
		t.Fatal("a restored tracker must keep its stream time")
	}
	if RestoreStreamTime(NoTimestamp).Time() != NoTimestamp {
		t.Fatal("restoring NoTimestamp must give an empty tracker")
	}
}
