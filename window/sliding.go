package window

import "fmt"

// SlidingAggregation is a windowed aggregation over sliding windows, Kafka
// Streams' windowedBy(SlidingWindows).aggregate.
//
// A sliding window exists only where its content changes: each record at
// ts has a left window [ts-D, ts] that ends at it, and a right window
// [ts+1, ts+1+D] that starts just after it, created only when some later
// record falls in it (D is the time difference). Windows that start before
// 0 are folded into one window [0, D]. A record updates every existing
// window of its key that contains it and creates its own left window, its
// right window and the right window of the record just before it, when
// those are missing and not empty. The stored timestamp of a window is the
// largest record timestamp in it.
type SlidingAggregation[V any] struct {
	Windows SlidingWindows
	Agg     Aggregator[V]
	Emit    Emit
}

// slideState is what a record learns from its key's nearby windows.
type slideState[V any] struct {
	starts      map[int64]bool // starts of the windows read
	left, right *Entry[V]      // the windows whose aggregates seed new ones
	leftExists  bool           // the record's left window is stored
	rightExists bool           // the record's right window is stored
	prev        int64          // the timestamp of the record before this one...
	hasPrev     bool           // ...when there is one within reach
}

// Process folds a record of key at ts into its sliding windows at stream
// time st (already advanced by this record), reading nearby windows from r.
// The record is dropped when Windows.Late(ts, st); windows it falls in that
// have closed are skipped one by one and listed in Late.
func (a SlidingAggregation[V]) Process(r WindowReader[V], key []byte, ts, st int64) (Result[V], error) {
	if err := checkTimestamp(ts); err != nil {
		return Result[V]{}, err
	}
	d := a.Windows.TimeDifference
	o := ops[V]{emit: a.Emit}
	if a.Windows.Late(ts, st) {
		o.res.Late = []Window{{Start: ts, End: ts + d}}
		return o.res, nil
	}
	if ts < d {
		return a.early(r, key, ts, st, o)
	}
	got, err := r.Windows(key, max(0, ts-2*d), ts+1)
	if err != nil {
		return Result[V]{}, fmt.Errorf("read sliding windows [%d,%d]: %w", max(0, ts-2*d), ts+1, err)
	}
	s := slideState[V]{starts: make(map[int64]bool, len(got))}
	// Newest first: the windows after the record, then its left window,
	// then the newest window that ends before it, which is all the history
	// the record needs.
	for i := len(got) - 1; i >= 0; i-- {
		e := &got[i]
		s.starts[e.Window.Start] = true
		end := e.Window.Start + d
		switch {
		case e.Window.Start == ts+1:
			s.rightExists = true
		case end > ts:
			if s.right == nil {
				s.right = e
			}
			a.update(&o, Window{e.Window.Start, end}, e.Value, e.Timestamp, ts, st)
		case end == ts:
			s.leftExists = true
			a.update(&o, Window{e.Window.Start, end}, e.Value, e.Timestamp, ts, st)
			if e.Timestamp >= ts {
				// A record at ts was here before: every window it
				// needs exists already.
				return o.res, nil
			}
			s.prev, s.hasPrev = e.Timestamp, true
		default:
			s.left = e
			s.prev, s.hasPrev = e.Timestamp, true
			i = 0
		}
	}
	a.create(&o, s, ts, st)
	return o.res, nil
}

// early handles a record at ts < D, whose left window would start before 0:
// the window [0, D] stands for all of those.
func (a SlidingAggregation[V]) early(r WindowReader[V], key []byte, ts, st int64, o ops[V]) (Result[V], error) {
	d := a.Windows.TimeDifference
	got, err := r.Windows(key, 0, ts+1)
	if err != nil {
		return Result[V]{}, fmt.Errorf("read sliding windows [0,%d]: %w", ts+1, err)
	}
	s := slideState[V]{starts: make(map[int64]bool, len(got))}
	var first *Entry[V] // the window [0, D]
	for i := range got {
		e := &got[i]
		s.starts[e.Window.Start] = true
		switch {
		case e.Window.Start == 0:
			first = e
			if e.Timestamp < ts {
				s.prev, s.hasPrev = e.Timestamp, true
			}
		case e.Window.Start <= ts:
			s.right = e
			a.update(&o, Window{e.Window.Start, e.Window.Start + d}, e.Value, e.Timestamp, ts, st)
		case e.Window.Start == ts+1:
			s.rightExists = true
		}
	}
	if s.right == nil && first != nil && first.Timestamp > ts {
		s.right = first
	}
	if !s.rightExists && s.right != nil && s.right.Timestamp > ts {
		a.createRight(&o, ts, s.right)
	}
	if s.hasPrev && !s.starts[s.prev+1] {
		a.update(&o, Window{s.prev + 1, s.prev + 1 + d}, a.Agg.Init(), ts, ts, st)
	}
	if first == nil {
		a.update(&o, Window{0, d}, a.Agg.Init(), ts, ts, st)
	} else {
		a.update(&o, Window{0, d}, first.Value, first.Timestamp, ts, st)
	}
	return o.res, nil
}

// create adds the windows the record at ts brings into existence: the right
// window of the record before it, its own left window, its own right window.
func (a SlidingAggregation[V]) create(o *ops[V], s slideState[V], ts, st int64) {
	d := a.Windows.TimeDifference
	if s.hasPrev {
		// The previous record's right window, when it is missing and this
		// record falls in it.
		if start := s.prev + 1; !s.starts[start] && start+d >= ts {
			a.update(o, Window{start, start + d}, a.Agg.Init(), ts, ts, st)
		}
	}
	if !s.leftExists {
		// The left window holds what the newest earlier window holds, when
		// the previous record is within D of this one.
		seed := a.Agg.Init()
		if s.hasPrev && s.left != nil && ts-d <= s.prev {
			seed = s.left.Value
		}
		a.update(o, Window{ts - d, ts}, seed, ts, ts, st)
	}
	if !s.rightExists && s.right != nil && s.right.Timestamp > ts {
		a.createRight(o, ts, s.right)
	}
}

// update folds the record at ts into win, whose aggregate was old with
// timestamp oldTS, unless win has closed.
func (a SlidingAggregation[V]) update(o *ops[V], win Window, old V, oldTS, ts, st int64) {
	if a.Windows.Closed(win, st) {
		o.res.Late = append(o.res.Late, win)
		return
	}
	v, newTS := a.Agg.Add(old), max(ts, oldTS)
	o.put(win, v, newTS)
	o.update(win, v, newTS, old, true)
}

// createRight stores the record's right window [ts+1, ts+1+D] with the
// aggregate of the window seed it copies: the records after ts that seed
// holds are exactly those of the new window. The aggregate does not include
// the record, so no closing check applies.
func (a SlidingAggregation[V]) createRight(o *ops[V], ts int64, seed *Entry[V]) {
	win := Window{ts + 1, ts + 1 + a.Windows.TimeDifference}
	o.put(win, seed.Value, seed.Timestamp)
	var zero V
	o.update(win, seed.Value, seed.Timestamp, zero, false)
}
