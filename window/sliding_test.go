package window

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSlidingAggregation(t *testing.T) {
	w := Sliding(10).WithGrace(100)
	tests := []struct {
		name   string
		in     []rec
		stored []string
	}{
		{
			name:   "a first record creates only its left window",
			in:     []rec{{"k", 20}},
			stored: []string{"update k[10,20]=[20]@20"},
		},
		{
			name: "a second record within reach: its left window holds both, the first's right window holds it",
			in:   []rec{{"k", 20}, {"k", 25}},
			stored: []string{
				"update k[10,20]=[20]@20",
				"update k[15,25]=[20 25]@25",
				"update k[21,31]=[25]@25",
			},
		},
		{
			name: "a record out of reach of the previous one starts afresh",
			in:   []rec{{"k", 20}, {"k", 50}},
			stored: []string{
				"update k[10,20]=[20]@20",
				"update k[40,50]=[50]@50",
			},
		},
		{
			name: "an out-of-order record updates the windows it falls in and gets its right window",
			in:   []rec{{"k", 20}, {"k", 30}, {"k", 25}},
			stored: []string{
				"update k[10,20]=[20]@20",
				"update k[15,25]=[20 25]@25",
				"update k[20,30]=[20 25 30]@30",
				"update k[21,31]=[25 30]@30",
				"update k[26,36]=[30]@30",
			},
		},
		{
			name:   "a duplicate timestamp only updates its existing left window",
			in:     []rec{{"k", 20}, {"k", 20}},
			stored: []string{"update k[10,20]=[20 20]@20"},
		},
		{
			name: "records earlier than the time difference share the window [0, D]",
			in:   []rec{{"k", 3}, {"k", 7}},
			stored: []string{
				"update k[0,10]=[3 7]@7",
				"update k[4,14]=[7]@7",
			},
		},
		{
			name: "keys never see each other's windows",
			in:   []rec{{"a", 20}, {"b", 25}},
			stored: []string{
				"update a[10,20]=[20]@20",
				"update b[15,25]=[25]@25",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newSlidingDriver(t, w, EmitOnUpdate).run(tt.in...)
			checkOuts(t, "store", d.stored(), tt.stored)
			checkBruteForceSliding(t, w.TimeDifference, tt.in, d.stored())
		})
	}
}

func TestSlidingUpdatesAreEmittedInKafkaOrder(t *testing.T) {
	d := newSlidingDriver(t, Sliding(10).WithGrace(100), EmitOnUpdate).run(rec{"k", 20}, rec{"k", 30}, rec{"k", 25})
	checkOuts(t, "emits", d.outs, []string{
		"update k[10,20]=[20]@20",
		// 30: the right window of 20, then its own left window.
		"update k[21,31]=[30]@30",
		"update k[20,30]=[20 30]@30",
		// 25: the windows after it newest first, then its left window
		// (seeded from [10,20]), then its right window (copied from
		// [21,31] before the record was added to it).
		"update k[21,31]=[25 30]@30",
		"update k[20,30]=[20 25 30]@30",
		"update k[15,25]=[20 25]@25",
		"update k[26,36]=[30]@30",
	})
}

func TestSlidingLateness(t *testing.T) {
	w := Sliding(10).WithGrace(5)
	t.Run("a record whose own window closed is dropped whole", func(t *testing.T) {
		d := newSlidingDriver(t, w, EmitOnUpdate).run(rec{"k", 100}, rec{"k", 84})
		if !slices.Equal(d.dropped, []rec{{"k", 84}}) {
			t.Fatalf("dropped %v", d.dropped)
		}
	})
	t.Run("a window at exactly end + grace still takes the record; closed ones are skipped", func(t *testing.T) {
		// Stream time 100, grace 5: [85,95] is open, 85's own left
		// window [75,85] has closed; its right window [86,96] is new.
		d := newSlidingDriver(t, w, EmitOnUpdate).run(rec{"k", 95}, rec{"k", 100}, rec{"k", 85})
		if len(d.dropped) != 0 || d.lateWins != 1 {
			t.Fatalf("dropped %v, late windows %d", d.dropped, d.lateWins)
		}
		checkOuts(t, "store", d.stored(), []string{
			"update k[85,95]=[85 95]@95",
			"update k[86,96]=[95]@95",
			"update k[90,100]=[95 100]@100",
			"update k[96,106]=[100]@100",
		})
	})
	t.Run("a record whose windows have all closed is dropped, though its own window is open", func(t *testing.T) {
		d := newSlidingDriver(t, w, EmitOnUpdate).run(rec{"k", 100}, rec{"k", 85})
		if !slices.Equal(d.dropped, []rec{{"k", 85}}) {
			t.Fatalf("dropped %v", d.dropped)
		}
	})
}

// checkBruteForceSliding checks a store built from records that were never
// late: the windows are exactly each record's left window (clamped to
// [0, D]) and each right window with a record in it, and each holds the
// records of its interval, with the largest as its timestamp.
func checkBruteForceSliding(t *testing.T, d int64, in []rec, stored []out) {
	t.Helper()
	type kw struct {
		key string
		win Window
	}
	want := map[kw]bool{}
	for _, r := range in {
		if r.ts < d {
			want[kw{r.key, Window{0, d}}] = true
		} else {
			want[kw{r.key, Window{r.ts - d, r.ts}}] = true
		}
		for _, u := range in {
			if u.key == r.key && u.ts > r.ts && u.ts <= r.ts+1+d {
				want[kw{r.key, Window{r.ts + 1, r.ts + 1 + d}}] = true
			}
		}
	}
	got := map[kw]bool{}
	for _, o := range stored {
		got[kw{o.key, o.win}] = true
		var vals []int64
		for _, r := range in {
			if r.key == o.key && o.win.Start <= r.ts && r.ts <= o.win.End {
				vals = append(vals, r.ts)
			}
		}
		slices.Sort(vals)
		if !slices.Equal(vals, o.val) || (len(vals) > 0 && o.ts != vals[len(vals)-1]) {
			t.Fatalf("window %s holds %v@%d, want %v", o.key, o.val, o.ts, vals)
		}
		if !want[kw{o.key, o.win}] {
			t.Fatalf("window %s[%d,%d] should not exist", o.key, o.win.Start, o.win.End)
		}
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("window %s[%d,%d] is missing", k.key, k.win.Start, k.win.End)
		}
	}
}

// TestPropertySlidingMatchesBruteForce: in any order, records that are
// never late build exactly the windows and aggregates the definition of
// sliding windows gives.
func TestPropertySlidingMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		dd := 1 + r.Int64N(10)
		var in []rec
		for range 1 + r.IntN(12) {
			in = append(in, rec{[]string{"a", "b"}[r.IntN(2)], r.Int64N(40)})
		}
		d := newSlidingDriver(t, Sliding(dd).WithGrace(1000), EmitOnUpdate).run(in...)
		checkBruteForceSliding(t, dd, in, d.stored())
	}
}
