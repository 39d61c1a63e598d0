package window

import (
	"errors"
	"slices"
	"testing"
)

func TestTimeAggregation(t *testing.T) {
	tests := []struct {
		name    string
		def     TimeWindows
		emit    Emit
		in      []rec
		outs    []string
		dropped []rec
	}{
		{
			name: "tumbling: each update is emitted with the largest timestamp so far",
			def:  Tumbling(10), emit: EmitOnUpdate,
			in: []rec{{"k", 3}, {"k", 7}, {"k", 5}, {"k", 12}},
			outs: []string{
				"update k[0,10]=[3]@3", "update k[0,10]=[3 7]@7", "update k[0,10]=[3 5 7]@7",
				"update k[10,20]=[12]@12",
			},
		},
		{
			name: "tumbling: a record at stream time equal to end + grace is late",
			def:  Tumbling(10).WithGrace(2), emit: EmitOnUpdate,
			in:      []rec{{"k", 12}, {"k", 9}},
			outs:    []string{"update k[10,20]=[12]@12"},
			dropped: []rec{{"k", 9}},
		},
		{
			name: "hopping: a record updates every window containing it, oldest first",
			def:  Hopping(10, 5), emit: EmitOnUpdate,
			in:   []rec{{"k", 7}},
			outs: []string{"update k[0,10]=[7]@7", "update k[5,15]=[7]@7"},
		},
		{
			name: "emit on close: finals come once each, by start then key, after the close",
			def:  Tumbling(10).WithGrace(5), emit: EmitOnClose,
			in: []rec{{"b", 1}, {"a", 2}, {"a", 11}, {"b", 14}, {"a", 15}, {"c", 30}},
			outs: []string{
				// Stream time 15 closes [0,10): both keys' windows.
				"final a[0,10]=[2]@2", "final b[0,10]=[1]@1",
				// Stream time 30 closes [10,20).
				"final a[10,20]=[11 15]@15", "final b[10,20]=[14]@14",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newTimeDriver(t, tt.def, tt.emit).run(tt.in...)
			checkOuts(t, "emits", d.outs, tt.outs)
			if !slices.Equal(d.dropped, tt.dropped) {
				t.Fatalf("dropped %v, want %v", d.dropped, tt.dropped)
			}
		})
	}
}

func TestAggregationsRefuseTimestampsOutOfRange(t *testing.T) {
	var ws MemWindows[[]int64]
	var ss MemSessions[[]int64]
	for _, ts := range []int64{-1, MaxTimestamp + 1} {
		_, e1 := TimeAggregation[[]int64]{Windows: Tumbling(10), Agg: collect(ts)}.Process(&ws, []byte("k"), ts, ts)
		_, e2 := SlidingAggregation[[]int64]{Windows: Sliding(10), Agg: collect(ts)}.Process(&ws, []byte("k"), ts, ts)
		_, e3 := SessionAggregation[[]int64]{Windows: Session(10), Agg: collect(ts)}.Process(&ss, []byte("k"), ts, ts)
		for _, err := range []error{e1, e2, e3} {
			if !errors.Is(err, ErrTimestamp) {
				t.Fatalf("timestamp %d: error %v, want ErrTimestamp", ts, err)
			}
		}
	}
}
