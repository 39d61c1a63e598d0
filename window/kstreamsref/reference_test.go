package kstreamsref

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// bigRetention keeps every window of a hand-written case in the store.
const bigRetention = 100_000

func in(key string, ts int64) Record         { return Record{Key: key, Value: 1, Timestamp: ts} }
func inv(key string, ts, value int64) Record { return Record{Key: key, Value: value, Timestamp: ts} }
func onp(p int32, r Record) Record           { r.Partition = p; return r }

func out(key string, start, end, value, ts int64) Output {
	return Output{Key: key, Start: start, End: end, Value: &value, Timestamp: ts}
}

func tomb(key string, start, end, ts int64) Output {
	return Output{Key: key, Start: start, End: end, Timestamp: ts}
}

func stored(key string, start, end, value int64) StoredWindow {
	return StoredWindow{Key: key, Start: start, End: end, Value: value}
}

func (o Output) String() string {
	v := "null"
	if o.Value != nil {
		v = fmt.Sprint(*o.Value)
	}
	return fmt.Sprintf("%s[%d,%d]=%s@%d", o.Key, o.Start, o.End, v, o.Timestamp)
}

func sameOutput(a, b []Output) bool {
	return slices.EqualFunc(a, b, func(x, y Output) bool { return x.String() == y.String() })
}

// kafkaCase is one hand-computed scenario of a single partition, unless
// wantByPartition is set.
type kafkaCase struct {
	name        string
	window      Window
	aggregation Aggregation
	emit        Emit
	interval    int64
	partitions  int32
	records     []Record
	want        []Output
	wantStore   []StoredWindow // checked when not nil
	wantDropped int64
	// wantByPartition replaces want for cases of several partitions.
	wantByPartition [][]Output
}

// scenario is the case as the i-th scenario sent to the reference.
func (c kafkaCase) scenario(i int) Scenario {
	return Scenario{
		Name: fmt.Sprintf("case%02d", i), Window: c.window, Aggregation: c.aggregation, Emit: c.emit,
		Partitions: max(1, c.partitions), EmitIntervalMs: c.interval, Records: c.records,
	}
}

// referenceCases pin Kafka Streams 4.4.0's windowed aggregations on inputs
// small enough to follow by hand: they are the semantics Rackstream's
// windows match, including the surprising ones.
func referenceCases() []kafkaCase {
	tumbling := Window{Type: Tumbling, SizeMs: 10, RetentionMs: bigRetention}
	hopping := Window{Type: Hopping, SizeMs: 10, AdvanceMs: 5, RetentionMs: bigRetention}
	sliding := Window{Type: Sliding, TimeDifferenceMs: 10, RetentionMs: bigRetention}
	session := Window{Type: Session, GapMs: 5, RetentionMs: bigRetention}
	with := func(w Window, f func(*Window)) Window { f(&w); return w }

	return []kafkaCase{
		{
			name:   "tumbling: a record counts in the window [start, start+size) that holds it; the output timestamp is the window's latest record time",
			window: tumbling, aggregation: Count, emit: Update,
			records: []Record{in("a", 1), in("a", 5), in("a", 12), in("a", 10)},
			want: []Output{
				out("a", 0, 10, 1, 1), out("a", 0, 10, 2, 5),
				out("a", 10, 20, 1, 12), out("a", 10, 20, 2, 12),
			},
			wantStore: []StoredWindow{stored("a", 0, 10, 2), stored("a", 10, 20, 2)},
		},
		{
			name:   "tumbling: a record whose window ended at or before stream time minus grace is dropped",
			window: tumbling, aggregation: Count, emit: Update,
			records:     []Record{in("a", 1), in("a", 10), in("a", 9), in("a", 3)},
			want:        []Output{out("a", 0, 10, 1, 1), out("a", 10, 20, 1, 10)},
			wantDropped: 2,
		},
		{
			name:   "tumbling: grace keeps a window open past its end",
			window: with(tumbling, func(w *Window) { w.GraceMs = 5 }), aggregation: Count, emit: Update,
			records: []Record{in("a", 1), in("a", 12), in("a", 3), in("a", 15), in("a", 4)},
			want: []Output{
				out("a", 0, 10, 1, 1), out("a", 10, 20, 1, 12),
				out("a", 0, 10, 2, 3), out("a", 10, 20, 2, 15),
			},
			wantDropped: 1,
		},
		{
			name:   "sum adds the values; a window starts from 0",
			window: tumbling, aggregation: Sum, emit: Update,
			records: []Record{inv("a", 1, 5), inv("a", 2, -7), inv("b", 3, 4)},
			want:    []Output{out("a", 0, 10, 5, 1), out("a", 0, 10, -2, 2), out("b", 0, 10, 4, 3)},
		},
		{
			name:   "tumbling, emit final: each window once when stream time reaches end + grace, by window start then key",
			window: tumbling, aggregation: Count, emit: Final,
			records: []Record{in("b", 1), in("a", 2), in("b", 5), in("c", 11), in("a", 3), in("z", 100)},
			want: []Output{
				out("a", 0, 10, 1, 2), out("b", 0, 10, 2, 5), // at c@11
				out("c", 10, 20, 1, 11), // at z@100
			},
			wantStore:   []StoredWindow{stored("a", 0, 10, 1), stored("b", 0, 10, 2), stored("c", 10, 20, 1), stored("z", 100, 110, 1)},
			wantDropped: 1,
		},
		{
			name:   "emit final with the default retention: a record far ahead expires windows before they are emitted",
			window: Window{Type: Tumbling, SizeMs: 10}, aggregation: Count, emit: Final,
			records:   []Record{in("a", 1), in("a", 12), in("a", 100)},
			want:      []Output{out("a", 0, 10, 1, 1)}, // [10,20) is never emitted
			wantStore: []StoredWindow{stored("a", 100, 110, 1)},
		},
		{
			name:   "emit final with Kafka's default throttle of 1000 ms: the wall clock stands still, so nothing is emitted after the first record",
			window: tumbling, aggregation: Count, emit: Final, interval: 1000,
			records: []Record{in("a", 1), in("a", 12), in("a", 25), in("a", 100)},
			want:    nil,
		},
		{
			name:   "the same with the throttle at 0: every closing record emits",
			window: tumbling, aggregation: Count, emit: Final,
			records: []Record{in("a", 1), in("a", 12), in("a", 25), in("a", 100)},
			want:    []Output{out("a", 0, 10, 1, 1), out("a", 10, 20, 1, 12), out("a", 20, 30, 1, 25)},
		},
		{
			name:   "hopping: a record counts in every window that holds it; starts are multiples of the advance, which need not divide the size",
			window: with(hopping, func(w *Window) { w.AdvanceMs = 3 }), aggregation: Count, emit: Update,
			records: []Record{in("a", 7), in("a", 12)},
			want: []Output{
				out("a", 0, 10, 1, 7), out("a", 3, 13, 1, 7), out("a", 6, 16, 1, 7),
				out("a", 3, 13, 2, 12), out("a", 6, 16, 2, 12), out("a", 9, 19, 1, 12), out("a", 12, 22, 1, 12),
			},
		},
		{
			name:   "hopping: a late record is dropped from each closed window, counted once per window, and still counts in its open ones",
			window: hopping, aggregation: Count, emit: Update,
			records: []Record{in("a", 22), in("a", 8), in("a", 18)},
			want: []Output{
				out("a", 15, 25, 1, 22), out("a", 20, 30, 1, 22),
				out("a", 15, 25, 2, 22), // a@18's window [10,20) is closed
			},
			wantDropped: 3,
		},
		{
			name:   "sliding: a record makes its left window [t-d, t]; the previous record's right window [prev+1, prev+1+d] appears when a record falls in it",
			window: sliding, aggregation: Count, emit: Update,
			records: []Record{in("a", 20), in("a", 25)},
			want: []Output{
				out("a", 10, 20, 1, 20),
				out("a", 21, 31, 1, 25), out("a", 15, 25, 2, 25),
			},
			wantStore: []StoredWindow{stored("a", 10, 20, 1), stored("a", 15, 25, 2), stored("a", 21, 31, 1)},
		},
		{
			name:   "sliding: an out-of-order record updates the windows that hold it, then makes its left and right windows",
			window: with(sliding, func(w *Window) { w.GraceMs = 10 }), aggregation: Count, emit: Update,
			records: []Record{in("a", 20), in("a", 25), in("a", 22)},
			want: []Output{
				out("a", 10, 20, 1, 20),
				out("a", 21, 31, 1, 25), out("a", 15, 25, 2, 25),
				out("a", 21, 31, 2, 25), out("a", 15, 25, 3, 25), out("a", 12, 22, 2, 22), out("a", 23, 33, 1, 25),
			},
			wantStore: []StoredWindow{
				stored("a", 10, 20, 1), stored("a", 12, 22, 2), stored("a", 15, 25, 3),
				stored("a", 21, 31, 2), stored("a", 23, 33, 1),
			},
		},
		{
			name:   "sliding: records before the time difference share the window [0, d]",
			window: sliding, aggregation: Count, emit: Update,
			records: []Record{in("a", 3), in("a", 5)},
			want:    []Output{out("a", 0, 10, 1, 3), out("a", 4, 14, 1, 5), out("a", 0, 10, 2, 5)},
		},
		{
			name:   "sliding: a record is dropped when the last window that could hold it, ending at t+d, ends before stream time minus grace; at the edge it updates only the open windows",
			window: sliding, aggregation: Count, emit: Update,
			// a@25: every window holding it ends by 35, before 40. a@30:
			// [30,40] is open (end = close time), the new windows [21,31] and
			// [20,30] are closed (two drops), its right window [31,41] opens.
			records: []Record{in("a", 20), in("a", 40), in("a", 25), in("a", 30)},
			want: []Output{
				out("a", 10, 20, 1, 20), out("a", 30, 40, 1, 40),
				out("a", 30, 40, 2, 40), out("a", 31, 41, 1, 40),
			},
			wantStore:   []StoredWindow{stored("a", 10, 20, 1), stored("a", 30, 40, 2), stored("a", 31, 41, 1)},
			wantDropped: 3,
		},
		{
			name:   "session: each change replaces the session with a tombstone and the new one; a record at a lone session's own time replaces it in place",
			window: session, aggregation: Sum, emit: Update,
			records: []Record{inv("a", 1, 1), inv("a", 3, 2), inv("a", 3, 4), inv("b", 10, 1), inv("b", 10, 2)},
			want: []Output{
				out("a", 1, 1, 1, 1),
				tomb("a", 1, 1, 1), out("a", 1, 3, 3, 3),
				tomb("a", 1, 3, 3), out("a", 1, 3, 7, 3),
				out("b", 10, 10, 1, 10), out("b", 10, 10, 3, 10),
			},
			wantStore: []StoredWindow{stored("a", 1, 3, 7), stored("b", 10, 10, 3)},
		},
		{
			name:   "session: a record within the gap of two sessions merges them: both get tombstones, then the merged session",
			window: session, aggregation: Sum, emit: Update,
			records: []Record{inv("a", 1, 1), inv("a", 10, 2), inv("a", 5, 4)},
			want: []Output{
				out("a", 1, 1, 1, 1), out("a", 10, 10, 2, 10),
				tomb("a", 1, 1, 1), tomb("a", 10, 10, 10), out("a", 1, 10, 7, 10),
			},
			wantStore: []StoredWindow{stored("a", 1, 10, 7)},
		},
		{
			name:   "session with the default retention (gap + grace): a merge cannot reach a session past retention",
			window: Window{Type: Session, GapMs: 5}, aggregation: Sum, emit: Update,
			records: []Record{inv("a", 1, 1), inv("a", 10, 2), inv("a", 5, 4)},
			want: []Output{
				out("a", 1, 1, 1, 1), out("a", 10, 10, 2, 10),
				tomb("a", 10, 10, 10), out("a", 5, 10, 6, 10),
			},
			wantStore: []StoredWindow{stored("a", 5, 10, 6)},
		},
		{
			name:   "session: a record is dropped when its merged session ends before stream time minus grace minus gap",
			window: session, aggregation: Count, emit: Update,
			records:     []Record{in("a", 1), in("a", 20), in("a", 2)},
			want:        []Output{out("a", 1, 1, 1, 1), out("a", 20, 20, 1, 20)},
			wantDropped: 1,
		},
		{
			name:   "session, emit final: closed sessions by end, start, then key; a later record can merge a session already emitted, which is emitted again",
			window: session, aggregation: Sum, emit: Final,
			records: []Record{
				inv("b", 1, 1), inv("c", 2, 1), inv("a", 2, 1), inv("e", 0, 1), inv("e", 2, 1),
				inv("d", 1, 1), inv("d", 10, 2), inv("d", 5, 4), inv("z", 100, 1),
			},
			want: []Output{
				out("b", 1, 1, 1, 1), out("d", 1, 1, 1, 1), // at d@10
				out("e", 0, 2, 2, 2), out("a", 2, 2, 1, 2), out("c", 2, 2, 1, 2),
				out("d", 1, 10, 7, 10), // at z@100: d's [1,1] merged into [1,10]
			},
		},
		{
			name:   "each partition is its own task: stream time does not cross partitions",
			window: tumbling, aggregation: Count, emit: Update, partitions: 2,
			records: []Record{onp(0, in("a", 1)), onp(1, in("b", 50)), onp(0, in("a", 5)), onp(1, in("b", 3))},
			wantByPartition: [][]Output{
				{out("a", 0, 10, 1, 1), out("a", 0, 10, 2, 5)},
				{out("b", 50, 60, 1, 50)},
			},
			wantDropped: 1,
		},
	}
}

// Kafka's answers to the hand-computed cases are the ones the cases pin.
func TestReferenceIsKafkaStreams(t *testing.T) {
	k := kafkaResults(t)
	for i, c := range referenceCases() {
		t.Run(c.name, func(t *testing.T) {
			res, err := k.cases[i], k.caseErrs[i]
			if err != nil {
				t.Fatal(err)
			}
			want := c.wantByPartition
			if want == nil {
				want = [][]Output{c.want}
			}
			var dropped int64
			for p, pr := range res.Partitions {
				if !sameOutput(pr.Output, want[p]) {
					t.Errorf("partition %d output\n got %v\nwant %v", p, pr.Output, want[p])
				}
				dropped += pr.DroppedRecords
			}
			if dropped != c.wantDropped {
				t.Errorf("dropped-records-total %d, want %d", dropped, c.wantDropped)
			}
			if c.wantStore != nil && !slices.Equal(res.Partitions[0].Store, c.wantStore) {
				t.Errorf("store\n got %v\nwant %v", res.Partitions[0].Store, c.wantStore)
			}
		})
	}

	t.Run("a scenario Kafka cannot run is an error naming it, and the next still runs", func(t *testing.T) {
		_, err := k.ref.Run(Scenario{Name: "bad", Window: Window{Type: "weekly"}, Aggregation: Count, Emit: Update, Partitions: 1})
		if err == nil || !strings.Contains(err.Error(), "bad") || !strings.Contains(err.Error(), "weekly") {
			t.Fatalf("error %v, want one naming the scenario and the window type", err)
		}
		tumbling := Window{Type: Tumbling, SizeMs: 10, RetentionMs: bigRetention}
		if _, err := k.ref.Run(Scenario{Name: "good", Window: tumbling, Aggregation: Count, Emit: Update, Partitions: 1,
			Records: []Record{in("a", 1)}}); err != nil {
			t.Fatalf("after an error: %v", err)
		}
	})
}
