package window

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPropertyHoppingWindowCount: every record at ts >= Size lands in
// exactly Size/Advance windows when Advance divides Size, and in floor or
// ceil of Size/Advance otherwise; every window returned contains it, starts
// on a multiple of Advance, and none is missing.
func TestPropertyHoppingWindowCount(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		adv := 1 + r.Int64N(50)
		size := adv * (1 + r.Int64N(6))
		if r.IntN(2) == 0 {
			size += r.Int64N(adv)
		}
		w := Hopping(size, adv)
		ts := r.Int64N(10_000)
		ws := w.WindowsFor(ts)
		for _, win := range ws {
			if win.Start%adv != 0 || win.Start > ts || ts >= win.End || win.End-win.Start != size || win.Start < 0 {
				t.Fatalf("%+v: window %v returned for %d", w, win, ts)
			}
		}
		// Brute force: every aligned start s in [ts-size+1, ts], s >= 0.
		want := 0
		for s := max(0, ts-size+1); s <= ts; s++ {
			if s%adv == 0 {
				want++
			}
		}
		if len(ws) != want {
			t.Fatalf("%+v: %d windows for %d, want %d", w, len(ws), ts, want)
		}
		if ts >= size {
			lo, hi := size/adv, (size+adv-1)/adv
			if len(ws) < int(lo) || len(ws) > int(hi) {
				t.Fatalf("%+v: %d windows for %d, want %d..%d", w, len(ws), ts, lo, hi)
			}
		}
	}
}

// TestPropertyFinalsTileTheCloses: as stream time advances in random steps,
// FinalsDue hands out each window start (session end) exactly once, and
// exactly when the window's Closed turns true.
func TestPropertyFinalsTileTheCloses(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		size, grace := 1+r.Int64N(20), r.Int64N(10)
		cases := []struct {
			name   string
			due    func(lastClose, st int64) (Finals, bool)
			closed func(at, st int64) bool // the window with that start (session: end)
		}{
			{"time", TimeWindows{Size: size, Advance: size, Grace: grace}.FinalsDue,
				func(s, st int64) bool { return TimeWindows{Grace: grace}.Closed(Window{s, s + size}, st) }},
			{"sliding", SlidingWindows{TimeDifference: size, Grace: grace}.FinalsDue,
				func(s, st int64) bool { return SlidingWindows{Grace: grace}.Closed(Window{s, s + size}, st) }},
			{"session", SessionWindows{Gap: size, Grace: grace}.FinalsDue,
				func(e, st int64) bool { return SessionWindows{Gap: size, Grace: grace}.Closed(Window{0, e}, st) }},
		}
		for _, c := range cases {
			emitted := map[int64]int64{} // start -> stream time of emission
			last, st := NoTimestamp, NoTimestamp
			for range 40 {
				st += r.Int64N(15)
				f, ok := c.due(last, st)
				if ok {
					last = f.Close
				} else {
					f = Finals{From: 0, To: -1}
				}
				for s := f.From; s <= f.To; s++ {
					if _, dup := emitted[s]; dup {
						t.Fatalf("%s: %d emitted twice", c.name, s)
					}
					if !c.closed(s, st) {
						t.Fatalf("%s: %d emitted at %d before it closed", c.name, s, st)
					}
					emitted[s] = st
				}
				for s := int64(0); s < max(st, 0); s++ {
					if _, ok := emitted[s]; c.closed(s, st) && !ok {
						t.Fatalf("%s: %d closed by %d but not emitted", c.name, s, st)
					}
				}
			}
		}
	}
}

// TestPropertyEmitFinalOnceAfterClose: under EmitOnClose, for every window
// type and any order of records (late ones included), each window of a key
// is emitted at most once, only once it has closed, with the value the
// store still holds for it (no record changes a closed window), and a last
// record far ahead makes every stored window final.
func TestPropertyEmitFinalOnceAfterClose(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 1500 {
		size, grace := 1+r.Int64N(10), r.Int64N(6)
		var in []rec
		for range 1 + r.IntN(20) {
			in = append(in, rec{[]string{"a", "b", "c"}[r.IntN(3)], r.Int64N(80)})
		}
		in = append(in, rec{"z", 1000})
		adv := 1 + r.Int64N(size)
		drivers := []struct {
			d      *driver
			closed func(Window, int64) bool
		}{
			{newTimeDriver(t, Hopping(size, adv).WithGrace(grace), EmitOnClose), Hopping(size, adv).WithGrace(grace).Closed},
			{newSlidingDriver(t, Sliding(size).WithGrace(grace), EmitOnClose), Sliding(size).WithGrace(grace).Closed},
			{newSessionDriver(t, Session(size).WithGrace(grace), EmitOnClose), Session(size).WithGrace(grace).Closed},
		}
		for _, c := range drivers {
			c.d.run(in...)
			seen := map[string]out{}
			for _, o := range c.d.outs {
				if !o.final {
					t.Fatalf("an update was emitted under EmitOnClose: %v", o)
				}
				id := o.key + string(WindowKey(nil, o.win.Start)) + string(WindowKey(nil, o.win.End))
				if _, dup := seen[id]; dup {
					t.Fatalf("%v emitted twice", o)
				}
				seen[id] = o
				if !c.closed(o.win, o.at) {
					t.Fatalf("%v emitted at stream time %d, before it closed", o, o.at)
				}
			}
			for _, s := range c.d.stored() {
				if s.key == "z" {
					continue
				}
				id := s.key + string(WindowKey(nil, s.win.Start)) + string(WindowKey(nil, s.win.End))
				o, ok := seen[id]
				if !ok {
					t.Fatalf("stored window %v never emitted", s)
				}
				if !slices.Equal(o.val, s.val) {
					t.Fatalf("final %v differs from the store's %v", o, s.val)
				}
			}
		}
	}
}
