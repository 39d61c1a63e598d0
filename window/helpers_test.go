package window

import (
	"fmt"
	"slices"
	"testing"
)

// rec is an input record.
type rec struct {
	key string
	ts  int64
}

// out is a forwarded result: an update, a tombstone or a final result.
type out struct {
	key       string
	win       Window
	val       []int64 // timestamps of the records aggregated, sorted
	ts        int64
	tombstone bool
	final     bool
	at        int64 // stream time when emitted
}

func (o out) String() string {
	kind := "update"
	switch {
	case o.tombstone:
		kind = "tombstone"
	case o.final:
		kind = "final"
	}
	return fmt.Sprintf("%s %s[%d,%d]=%v@%d", kind, o.key, o.win.Start, o.win.End, o.val, o.ts)
}

// collect is the aggregator of the tests: the sorted list of the record
// timestamps in a window, so every result can be checked by brute force.
func collect(ts int64) Aggregator[[]int64] {
	return Aggregator[[]int64]{
		Init: func() []int64 { return nil },
		Add: func(a []int64) []int64 {
			b := append(slices.Clone(a), ts)
			slices.Sort(b)
			return b
		},
		Merge: func(a, b []int64) []int64 {
			c := append(slices.Clone(a), b...)
			slices.Sort(c)
			return c
		},
	}
}

// driver runs records through one aggregation the way a task would: it
// advances stream time, applies the ops to an in-memory store, keeps the
// emits, and under EmitOnClose emits final results after each record.
type driver struct {
	t        *testing.T
	emit     Emit
	st       StreamTime
	last     int64 // last close time
	wins     MemWindows[[]int64]
	sess     MemSessions[[]int64]
	process  func(d *driver, r rec, st int64) (Result[[]int64], error)
	due      func(lastClose, st int64) (Finals, bool)
	session  bool
	outs     []out
	dropped  []rec
	lateWins int
}

func newTimeDriver(t *testing.T, w TimeWindows, emit Emit) *driver {
	return &driver{t: t, emit: emit, last: NoTimestamp, due: w.FinalsDue,
		process: func(d *driver, r rec, st int64) (Result[[]int64], error) {
			return TimeAggregation[[]int64]{Windows: w, Agg: collect(r.ts), Emit: emit}.Process(&d.wins, []byte(r.key), r.ts, st)
		}}
}

func newSlidingDriver(t *testing.T, w SlidingWindows, emit Emit) *driver {
	return &driver{t: t, emit: emit, last: NoTimestamp, due: w.FinalsDue,
		process: func(d *driver, r rec, st int64) (Result[[]int64], error) {
			return SlidingAggregation[[]int64]{Windows: w, Agg: collect(r.ts), Emit: emit}.Process(&d.wins, []byte(r.key), r.ts, st)
		}}
}

func (d *driver) run(rs ...rec) *driver {
	d.t.Helper()
	for _, r := range rs {
		st := d.st.Observe(r.ts)
		res, err := d.process(d, r, st)
		if err != nil {
			d.t.Fatal(err)
		}
		if d.session {
			err = d.sess.Apply([]byte(r.key), res.Ops)
		} else {
			err = d.wins.Apply([]byte(r.key), res.Ops)
		}
		if err != nil {
			d.t.Fatal(err)
		}
		for _, op := range res.Ops {
			if op.Kind == OpEmit {
				d.outs = append(d.outs, out{key: r.key, win: op.Window, val: op.Value, ts: op.Timestamp, tombstone: op.Tombstone})
			}
		}
		if res.Dropped() {
			d.dropped = append(d.dropped, r)
		}
		d.lateWins += len(res.Late)
		if d.emit != EmitOnClose {
			continue
		}
		f, ok := d.due(d.last, st)
		if !ok {
			continue
		}
		var finals []Keyed[[]int64]
		if d.session {
			finals = d.sess.Finals(f)
		} else {
			finals = d.wins.Finals(f)
		}
		for _, k := range finals {
			ts := k.Timestamp
			if d.session {
				ts = k.Window.End
			}
			d.outs = append(d.outs, out{key: string(k.Key), win: k.Window, val: k.Value, ts: ts, final: true, at: st})
		}
		d.last = f.Close
	}
	return d
}

// stored returns the store's windows as outs, by key then time.
func (d *driver) stored() []out {
	var ks []Keyed[[]int64]
	if d.session {
		ks = d.sess.All()
	} else {
		ks = d.wins.All()
	}
	var o []out
	for _, k := range ks {
		o = append(o, out{key: string(k.Key), win: k.Window, val: k.Value, ts: k.Timestamp})
	}
	return o
}

func checkOuts(t *testing.T, what string, got []out, want []string) {
	t.Helper()
	gs := make([]string, len(got))
	for i, o := range got {
		gs[i] = o.String()
	}
	if !slices.Equal(gs, want) {
		t.Fatalf("%s:\n got  %q\n want %q", what, gs, want)
	}
}
