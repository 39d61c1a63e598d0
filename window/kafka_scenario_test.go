package window

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// concat is an order-sensitive aggregator: "0" then "+v" per record, so
// the values show the order in which records reached each window.
func concat(v string) Aggregator[string] {
	return Aggregator[string]{
		Init:  func() string { return "0" },
		Add:   func(a string) string { return a + "+" + v },
		Merge: func(a, b string) string { return a + b[1:] },
	}
}

type valueAt struct {
	v  string
	ts int64
}

// runSliding runs records of one key through a sliding aggregation and
// gathers what it forwards as Kafka Streams' tests do: for each window
// start, the set of "value@timestamp" forwarded.
func runSliding(t *testing.T, w SlidingWindows, emit Emit, in []valueAt) map[int64][]string {
	var store MemWindows[string]
	var st StreamTime
	last := NoTimestamp
	got := map[int64][]string{}
	add := func(start int64, v string, ts int64) {
		if e := fmt.Sprintf("%s@%d", v, ts); !slices.Contains(got[start], e) {
			got[start] = append(got[start], e)
		}
	}
	for _, r := range in {
		now := st.Observe(r.ts)
		res, err := SlidingAggregation[string]{Windows: w, Agg: concat(r.v), Emit: emit}.Process(&store, []byte("A"), r.ts, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Apply([]byte("A"), res.Ops); err != nil {
			t.Fatal(err)
		}
		for _, op := range res.Ops {
			if op.Kind == OpEmit {
				add(op.Window.Start, op.Value, op.Timestamp)
			}
		}
		if f, ok := w.FinalsDue(last, now); ok {
			for _, k := range store.Finals(f) {
				add(k.Window.Start, k.Value, k.Timestamp)
			}
			last = f.Close
		}
	}
	for k := range got {
		slices.Sort(got[k])
	}
	return got
}

// TestSlidingMatchesKafkaStreamsScenarios replays the inputs of Kafka
// Streams' own sliding-window aggregation tests (one key, records out of
// order, with and without records earlier than the time difference) and
// expects the results those tests pin, in both emit modes.
func TestSlidingMatchesKafkaStreamsScenarios(t *testing.T) {
	tests := []struct {
		name            string
		in              []valueAt
		updates, finals map[int64][]string
	}{
		{
			name: "out of order, no grace",
			in:   []valueAt{{"1", 100}, {"2", 105}, {"3", 106}, {"4", 103}, {"5", 113}, {"6", 110}},
			updates: map[int64][]string{
				50:  {"0+1@100"},
				55:  {"0+1+2@105"},
				56:  {"0+1+2+3+4@106", "0+1+2+3@106"},
				63:  {"0+1+2+3+4+5+6@113", "0+1+2+3+4+5@113"},
				101: {"0+2+3+4+5+6@113", "0+2+3+4+5@113", "0+2+3+4@106", "0+2+3@106", "0+2@105"},
				104: {"0+2+3+5+6@113", "0+2+3+5@113", "0+2+3@106"},
				106: {"0+3+5+6@113", "0+3+5@113", "0+3@106"},
				107: {"0+5+6@113", "0+5@113"},
				111: {"0+5@113"},
			},
			finals: map[int64][]string{50: {"0+1@100"}, 55: {"0+1+2@105"}, 56: {"0+1+2+3+4@106"}},
		},
		{
			name: "early records share the window [0, 50], no grace",
			in:   []valueAt{{"1", 0}, {"2", 5}, {"3", 6}, {"4", 3}, {"5", 13}, {"6", 10}, {"7", 70}},
			updates: map[int64][]string{
				0:  {"0+1+2+3+4+5+6@13", "0+1+2+3+4+5@13", "0+1+2+3+4@6", "0+1+2+3@6", "0+1+2@5", "0+1@0"},
				1:  {"0+2+3+4+5+6@13", "0+2+3+4+5@13", "0+2+3+4@6", "0+2+3@6", "0+2@5"},
				4:  {"0+2+3+5+6@13", "0+2+3+5@13", "0+2+3@6"},
				6:  {"0+3+5+6@13", "0+3+5@13", "0+3@6"},
				7:  {"0+5+6@13", "0+5@13"},
				11: {"0+5@13"},
				20: {"0+7@70"},
			},
			finals: map[int64][]string{
				0: {"0+1+2+3+4+5+6@13"}, 1: {"0+2+3+4+5+6@13"}, 4: {"0+2+3+5+6@13"},
				6: {"0+3+5+6@13"}, 7: {"0+5+6@13"}, 11: {"0+5@13"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, m := range []map[int64][]string{tt.updates, tt.finals} {
				for k := range m {
					slices.Sort(m[k])
				}
			}
			if got := runSliding(t, Sliding(50), EmitOnUpdate, tt.in); !maps.EqualFunc(got, tt.updates, slices.Equal) {
				t.Errorf("updates:\n got  %v\n want %v", got, tt.updates)
			}
			if got := runSliding(t, Sliding(50), EmitOnClose, tt.in); !maps.EqualFunc(got, tt.finals, slices.Equal) {
				t.Errorf("finals:\n got  %v\n want %v", got, tt.finals)
			}
		})
	}
}

// TestSessionMatchesKafkaStreamsScenarios replays inputs of Kafka Streams'
// own session aggregation tests and expects the results they pin.
func TestSessionMatchesKafkaStreamsScenarios(t *testing.T) {
	t.Run("several keys and merging: finals by end, then key", func(t *testing.T) {
		const gap = 5 * 60 * 1000
		d := newSessionDriver(t, Session(gap), EmitOnClose).run(
			rec{"a", 0}, rec{"b", 0}, rec{"c", 0}, rec{"d", 0}, rec{"d", gap / 2},
			rec{"a", gap + 1}, rec{"b", gap + 1}, rec{"a", gap + 1 + gap/2}, rec{"c", gap + 1 + gap/2})
		checkOuts(t, "finals", d.outs, []string{
			"final a[0,0]=[0]@0", "final b[0,0]=[0]@0", "final c[0,0]=[0]@0",
			"final d[0,150000]=[0 150000]@150000",
		})
	})
	t.Run("finals closed by one record: by end, then start, then key", func(t *testing.T) {
		d := newSessionDriver(t, Session(5), EmitOnClose).run(
			rec{"b", 1}, rec{"c", 2}, rec{"a", 2}, rec{"e", 0}, rec{"e", 2},
			rec{"d", 1}, rec{"d", 10}, rec{"d", 5}, rec{"z", 100})
		checkOuts(t, "finals", d.outs, []string{
			"final b[1,1]=[1]@1", "final d[1,1]=[1]@1",
			"final e[0,2]=[0 2]@2", "final a[2,2]=[2]@2", "final c[2,2]=[2]@2",
			"final d[1,10]=[1 5 10]@10",
		})
	})
	t.Run("late with grace: on time at the edge, late one ms after", func(t *testing.T) {
		d := newSessionDriver(t, Session(10).WithGrace(1), EmitOnUpdate).run(
			rec{"dummy", 0}, rec{"OnTime1", 0}, rec{"dummy", 11}, rec{"OnTime2", 0}, rec{"dummy", 12}, rec{"Late1", 0})
		if !slices.Equal(d.dropped, []rec{{"Late1", 0}}) {
			t.Fatalf("dropped %v", d.dropped)
		}
	})
}
