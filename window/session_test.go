package window

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

func newSessionDriver(t *testing.T, w SessionWindows, emit Emit) *driver {
	return &driver{t: t, emit: emit, last: NoTimestamp, due: w.FinalsDue, session: true,
		process: func(d *driver, r rec, st int64) (Result[[]int64], error) {
			return SessionAggregation[[]int64]{Windows: w, Agg: collect(r.ts), Emit: emit}.Process(&d.sess, []byte(r.key), r.ts, st)
		}}
}
func TestSessionAggregation(t *testing.T) {
	tests := []struct {
		name    string
		def     SessionWindows
		emit    Emit
		in      []rec
		outs    []string
		stored  []string
		dropped []rec
	}{
		{
			name: "a lone record opens a session of one point",
			def:  Session(10), emit: EmitOnUpdate,
			in:     []rec{{"k", 5}},
			outs:   []string{"update k[5,5]=[5]@5"},
			stored: []string{"update k[5,5]=[5]@0"},
		},
		{
			name: "a record within the gap extends the session: the old one is retracted",
			def:  Session(10), emit: EmitOnUpdate,
			in: []rec{{"k", 5}, {"k", 15}},
			outs: []string{
				"update k[5,5]=[5]@5",
				"tombstone k[5,5]=[]@5", "update k[5,15]=[5 15]@15",
			},
			stored: []string{"update k[5,15]=[5 15]@0"},
		},
		{
			name: "a record more than the gap away opens a second session",
			def:  Session(10), emit: EmitOnUpdate,
			in:     []rec{{"k", 5}, {"k", 16}},
			outs:   []string{"update k[5,5]=[5]@5", "update k[16,16]=[16]@16"},
			stored: []string{"update k[5,5]=[5]@0", "update k[16,16]=[16]@0"},
		},
		{
			name: "a record between two sessions merges them; both are retracted, by end",
			def:  Session(10), emit: EmitOnUpdate,
			in: []rec{{"k", 0}, {"k", 20}, {"k", 10}},
			outs: []string{
				"update k[0,0]=[0]@0", "update k[20,20]=[20]@20",
				"tombstone k[0,0]=[]@0", "tombstone k[20,20]=[]@20", "update k[0,20]=[0 10 20]@20",
			},
			stored: []string{"update k[0,20]=[0 10 20]@0"},
		},
		{
			name: "a record on an existing point session updates it in place, no tombstone",
			def:  Session(10), emit: EmitOnUpdate,
			in:     []rec{{"k", 5}, {"k", 5}},
			outs:   []string{"update k[5,5]=[5]@5", "update k[5,5]=[5 5]@5"},
			stored: []string{"update k[5,5]=[5 5]@0"},
		},
		{
			name: "a record inside a session updates it; the old bounds are retracted",
			def:  Session(10), emit: EmitOnUpdate,
			in: []rec{{"k", 0}, {"k", 8}, {"k", 4}},
			outs: []string{
				"update k[0,0]=[0]@0",
				"tombstone k[0,0]=[]@0", "update k[0,8]=[0 8]@8",
				"tombstone k[0,8]=[]@8", "update k[0,8]=[0 4 8]@8",
			},
			stored: []string{"update k[0,8]=[0 4 8]@0"},
		},
		{
			name: "a record whose merged session closed is dropped, nothing changes",
			def:  Session(10).WithGrace(5), emit: EmitOnUpdate,
			in:      []rec{{"k", 0}, {"k", 100}, {"k", 84}},
			outs:    []string{"update k[0,0]=[0]@0", "update k[100,100]=[100]@100"},
			stored:  []string{"update k[0,0]=[0]@0", "update k[100,100]=[100]@0"},
			dropped: []rec{{"k", 84}},
		},
		{
			name: "a record at exactly end + gap + grace is accepted",
			def:  Session(10).WithGrace(5), emit: EmitOnUpdate,
			in:     []rec{{"k", 100}, {"k", 85}},
			outs:   []string{"update k[100,100]=[100]@100", "update k[85,85]=[85]@85"},
			stored: []string{"update k[85,85]=[85]@0", "update k[100,100]=[100]@0"},
		},
		{
			name: "emit on close: merges emit nothing, finals come by end once closed",
			def:  Session(10), emit: EmitOnClose,
			in: []rec{{"b", 0}, {"a", 3}, {"b", 5}, {"a", 12}, {"c", 40}},
			outs: []string{
				"final b[0,5]=[0 5]@5",
				"final a[3,12]=[3 12]@12",
			},
			stored: []string{"update a[3,12]=[3 12]@0", "update b[0,5]=[0 5]@0", "update c[40,40]=[40]@0"},
		},
		{
			name: "as in Kafka Streams, a final session can still be merged into a later one",
			def:  Session(10), emit: EmitOnClose,
			// Stream time 100 makes [80,85] final (85+10 < 100); 95 is not
			// late (95+10 >= 100) and lies within the gap of 85.
			in:     []rec{{"k", 80}, {"k", 85}, {"j", 100}, {"k", 95}, {"j", 200}},
			outs:   []string{"final k[80,85]=[80 85]@85", "final k[80,95]=[80 85 95]@95", "final j[100,100]=[100]@100"},
			stored: []string{"update j[100,100]=[100]@0", "update j[200,200]=[200]@0", "update k[80,95]=[80 85 95]@0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newSessionDriver(t, tt.def, tt.emit).run(tt.in...)
			checkOuts(t, "emits", d.outs, tt.outs)
			checkOuts(t, "store", d.stored(), tt.stored)
			if !slices.Equal(d.dropped, tt.dropped) {
				t.Fatalf("dropped %v, want %v", d.dropped, tt.dropped)
			}
		})
	}
}

// TestPropertySessionsNeverOverlap runs random records, some late, through
// session aggregations and checks them with checkSessions.
func TestPropertySessionsNeverOverlap(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 3000 {
		w := Session(1 + r.Int64N(8)).WithGrace(r.Int64N(10))
		var in []rec
		for range 1 + r.IntN(15) {
			in = append(in, rec{[]string{"a", "b"}[r.IntN(2)], r.Int64N(60)})
		}
		checkSessions(t, w, in, newSessionDriver(t, w, EmitOnUpdate).run(in...))
	}
}

// checkSessions checks a session store built from in: a key's sessions are
// the chains of its accepted records no more than Gap apart (so they never
// overlap and lie more than Gap apart), each spans exactly its records, and
// replaying what was emitted, tombstones deleting, gives the store.
func checkSessions(t *testing.T, w SessionWindows, in []rec, d *driver) {
	t.Helper()
	stored := d.stored()
	accepted := map[string][]int64{}
	dropped := slices.Clone(d.dropped)
	for _, r := range in {
		if i := slices.Index(dropped, r); i >= 0 {
			dropped = slices.Delete(dropped, i, i+1)
			continue
		}
		accepted[r.key] = append(accepted[r.key], r.ts)
	}
	var want []string
	for _, k := range slices.Sorted(maps.Keys(accepted)) {
		ts := accepted[k]
		slices.Sort(ts)
		start := 0
		for i := 1; i <= len(ts); i++ {
			if i == len(ts) || ts[i]-ts[i-1] > w.Gap {
				want = append(want, out{key: k, win: Window{ts[start], ts[i-1]}, val: ts[start:i]}.String())
				start = i
			}
		}
	}
	checkOuts(t, fmt.Sprintf("%+v sessions", w), stored, want)
	replay := map[string]out{}
	for _, o := range d.outs {
		k := o.key + string(SessionKey(nil, o.win))
		if o.tombstone {
			if _, ok := replay[k]; !ok {
				t.Fatalf("%+v: tombstone for %s%v never emitted", w, o.key, o.win)
			}
			delete(replay, k)
		} else {
			replay[k] = o
		}
	}
	if len(replay) != len(stored) {
		t.Fatalf("%+v: downstream holds %d sessions, store %d", w, len(replay), len(stored))
	}
	for _, s := range stored {
		o, ok := replay[s.key+string(SessionKey(nil, s.win))]
		if !ok || !slices.Equal(o.val, s.val) {
			t.Fatalf("%+v: downstream has %v for %s%v, store %v", w, o.val, s.key, s.win, s.val)
		}
	}
}
