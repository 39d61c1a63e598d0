package processor

// One record's run of a windowed aggregation (windowed.go): package
// window's operations on the task's window or session store, the emits,
// the final results due, expiry and the aggregation's progress, all staged
// with the record.

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rackstream/rackstream/window"
)

// lateMark is a windowed aggregation's word on a late record: how many of
// its windows had closed, and whether it changed nothing (dropped whole).
type lateMark struct {
	store   *storeSpec
	windows int
	dropped bool
}

// opt is an aggregate inside package window: ok false before a Reduce's
// first value.
type opt[A any] struct {
	v  A
	ok bool
}

// windowed is one record's run of the aggregation: the store reads of
// package window's readers, on the running task's store.
type windowed[K, V, A any] struct {
	a    *WindowedAggregation[K, V, A]
	ctx  *Context
	meta windowMeta
}

func (r *windowed[K, V, A]) scan(start, end []byte, fn func(k, v []byte) bool) error {
	return r.ctx.scan(r.a.spec, start, end, fn)
}

func (r *windowed[K, V, A]) entries(raw []rawWindow) ([]window.Entry[opt[A]], error) {
	out := make([]window.Entry[opt[A]], len(raw))
	for i, w := range raw {
		v, err := r.a.val.Decode(w.agg)
		if err != nil {
			return nil, fmt.Errorf("store %s: decode window [%d,%d] of key %q: %w", r.a.spec.name, w.win.Start, w.win.End, w.key, err)
		}
		out[i] = window.Entry[opt[A]]{Window: w.win, Value: opt[A]{v, true}, Timestamp: w.ts}
	}
	return out, nil
}

// Windows implements window.WindowReader.
func (r *windowed[K, V, A]) Windows(key []byte, from, to int64) ([]window.Entry[opt[A]], error) {
	raw, err := r.a.layout.keyWindows(r.scan, r.a.size, key, from, to, r.meta.storeTime)
	if err != nil {
		return nil, err
	}
	return r.entries(raw)
}

// Sessions implements window.SessionReader.
func (r *windowed[K, V, A]) Sessions(key []byte, earliestEnd, latestStart int64) ([]window.Entry[opt[A]], error) {
	raw, err := r.a.layout.keyWindows(r.scan, 0, key, earliestEnd, math.MaxInt64, r.meta.storeTime)
	if err != nil {
		return nil, err
	}
	raw = slices.DeleteFunc(raw, func(w rawWindow) bool { return w.win.Start > latestStart })
	return r.entries(raw)
}

// observe advances the aggregation's stream time by a record at ts and
// returns it: the one place the aggregation learns stream time. It keeps
// its own, as a Kafka Streams windowed processor does (the largest
// timestamp among the records that reached it in the task), persisted in
// its store; r.ctx.StreamTime() would be the task's, over all its records.
func (r *windowed[K, V, A]) observe(ts int64) int64 {
	st := window.RestoreStreamTime(r.meta.streamTime)
	r.meta.streamTime = st.Observe(ts)
	return r.meta.streamTime
}

// aggregator is a's Aggregator for one record of key with value.
func (a *WindowedAggregation[K, V, A]) aggregator(key K, value V) window.Aggregator[opt[A]] {
	return window.Aggregator[opt[A]]{
		Init: func() opt[A] {
			if a.aggr.first != nil {
				return opt[A]{}
			}
			return opt[A]{a.aggr.Init(), true}
		},
		Add: func(agg opt[A]) opt[A] {
			if !agg.ok {
				return opt[A]{a.aggr.first(value), true}
			}
			return opt[A]{a.aggr.Add(key, value, agg.v), true}
		},
		Merge: func(x, y opt[A]) opt[A] {
			switch {
			case !x.ok:
				return y
			case !y.ok:
				return x
			}
			return opt[A]{a.aggr.Merge(key, x.v, y.v), true}
		},
	}
}

// process runs the aggregation for one record: package window's
// operations on the store, the emits, the final results due, expiry and
// the progress, all staged with the record.
func (a *WindowedAggregation[K, V, A]) process(ctx *Context, key K, value V, emit func(*Context, Windowed[K], A, bool) error) error {
	if ctx.topo != a.topo {
		return fmt.Errorf("windowed aggregation %s belongs to topology %s, not to %s", a.spec.name, a.topo.appID, ctx.topo.appID)
	}
	kb, err := a.key.Encode(key)
	if err != nil {
		return fmt.Errorf("windowed aggregation %s: encode key: %w", a.spec.name, err)
	}
	r := &windowed[K, V, A]{a: a, ctx: ctx, meta: emptyMeta}
	if b, found, err := ctx.get(a.topo, a.spec, metaKey); err != nil {
		return err
	} else if found {
		if r.meta, err = decodeMeta(b); err != nil {
			return fmt.Errorf("store %s: %w", a.spec.name, err)
		}
	}
	before := r.meta
	before.marks = slices.Clone(r.meta.marks)
	if len(r.meta.marks) > 0 {
		r.meta.replayed(ctx.Topic(), ctx.Offset(), func(topic string) int64 { return ctx.be.committedOffset(ctx.Partition(), topic) })
	}
	ts := ctx.Timestamp().UnixMilli()
	if ts < 0 || ts > window.MaxTimestamp {
		// Kafka Streams drops such records before any processor.
		ctx.late = append(ctx.late, lateMark{store: a.spec, windows: 1, dropped: true})
		return nil
	}
	st := r.observe(ts)
	agg := a.aggregator(key, value)
	var res window.Result[opt[A]]
	switch a.layout.kind {
	case kindTime:
		res, err = window.TimeAggregation[opt[A]]{Windows: a.timeDef, Agg: agg, Emit: a.emitMode()}.Process(r, kb, ts, st)
	case kindSliding:
		res, err = window.SlidingAggregation[opt[A]]{Windows: a.slidingDef, Agg: agg, Emit: a.emitMode()}.Process(r, kb, ts, st)
	default:
		res, err = window.SessionAggregation[opt[A]]{Windows: a.sessionDef, Agg: agg, Emit: a.emitMode()}.Process(r, kb, ts, st)
	}
	if err != nil {
		return fmt.Errorf("windowed aggregation %s: %w", a.spec.name, err)
	}
	if len(res.Late) > 0 {
		ctx.late = append(ctx.late, lateMark{store: a.spec, windows: len(res.Late), dropped: res.Dropped()})
	}
	if err := a.applyOps(r, key, kb, res.Ops, emit); err != nil {
		return err
	}
	if a.final {
		if err := a.emitFinals(r, st, emit); err != nil {
			return err
		}
	}
	expired, err := a.layout.expiredKeys(r.scan, a.size, before.storeTime, r.meta.storeTime)
	if err != nil {
		return fmt.Errorf("windowed aggregation %s: expire: %w", a.spec.name, err)
	}
	for _, k := range expired {
		if err := ctx.stage(a.topo, write{store: a.spec, key: k, del: true}); err != nil {
			return err
		}
	}
	if !r.meta.equal(before) {
		return ctx.stage(a.topo, write{store: a.spec, key: metaKey, value: r.meta.encode()})
	}
	return nil
}

func (a *WindowedAggregation[K, V, A]) emitMode() window.Emit {
	if a.final {
		return window.EmitOnClose
	}
	return window.EmitOnUpdate
}

// applyOps stages a record's store writes and, under emit-on-update, its
// emits. A write to a window whose segment has expired is skipped.
func (a *WindowedAggregation[K, V, A]) applyOps(r *windowed[K, V, A], key K, kb []byte, ops []window.Op[opt[A]], emit func(*Context, Windowed[K], A, bool) error) error {
	for _, op := range ops {
		switch op.Kind {
		case window.OpPut:
			t := a.layout.segmentTime(op.Window)
			r.meta.storeTime = max(r.meta.storeTime, t)
			if !a.layout.segs.Kept(t, r.meta.storeTime) {
				continue // its segment has expired, as in Kafka Streams
			}
			enc, err := a.val.Encode(op.Value.v)
			if err != nil {
				return fmt.Errorf("windowed aggregation %s: encode aggregate of key %q: %w", a.spec.name, kb, err)
			}
			v := windowValue(op.Timestamp, enc)
			var iv []byte
			if a.final {
				iv = v
			} else {
				iv = []byte{}
			}
			if err := r.ctx.stage(a.topo, write{store: a.spec, key: a.layout.dataKey(kb, op.Window), value: v}); err != nil {
				return err
			}
			if err := r.ctx.stage(a.topo, write{store: a.spec, key: a.layout.timeKey(kb, op.Window), value: iv}); err != nil {
				return err
			}
		case window.OpDelete:
			for _, k := range [][]byte{a.layout.dataKey(kb, op.Window), a.layout.timeKey(kb, op.Window)} {
				if err := r.ctx.stage(a.topo, write{store: a.spec, key: k, del: true}); err != nil {
					return err
				}
			}
		case window.OpEmit:
			if emit == nil {
				continue
			}
			if err := emit(r.ctx, a.windowed(key, op.Window), op.Value.v, op.Tombstone); err != nil {
				return err
			}
		}
	}
	return nil
}

// emitFinals emits the windows that closed at stream time st since the
// last close, in the time index's order, and records the new close.
func (a *WindowedAggregation[K, V, A]) emitFinals(r *windowed[K, V, A], st int64, emit func(*Context, Windowed[K], A, bool) error) error {
	var f window.Finals
	var ok bool
	switch a.layout.kind {
	case kindTime:
		f, ok = a.timeDef.FinalsDue(r.meta.lastClose, st)
	case kindSliding:
		f, ok = a.slidingDef.FinalsDue(r.meta.lastClose, st)
	default:
		f, ok = a.sessionDef.FinalsDue(r.meta.lastClose, st)
	}
	if !ok {
		return nil
	}
	var finals []rawWindow
	// As Kafka Streams reads them: time and sliding windows while
	// LiveForFinals, sessions from every kept segment. A record that moves
	// the store's time more than a retention past a window that just
	// closed hides it before it is emitted.
	now := r.meta.storeTime
	visible := func(t int64) bool { return a.layout.segs.LiveForFinals(t, now) }
	if a.layout.kind == kindSession {
		visible = func(t int64) bool { return a.layout.segs.Kept(t, now) }
	}
	err := a.layout.timeWindows(r.scan, a.size, f.From, f.To, visible, func(w rawWindow) bool {
		w.key, w.agg = bytes.Clone(w.key), bytes.Clone(w.agg)
		finals = append(finals, w)
		return true
	})
	if err != nil {
		return fmt.Errorf("windowed aggregation %s: read final results: %w", a.spec.name, err)
	}
	if len(finals) > 0 {
		r.meta.marks = append(r.meta.marks, closeMark{topic: r.ctx.Topic(), offset: r.ctx.Offset(), closeBefore: r.meta.lastClose})
	}
	r.meta.lastClose = f.Close
	if emit == nil {
		return nil
	}
	for _, w := range finals {
		k, err := a.key.Decode(w.key)
		if err != nil {
			return fmt.Errorf("windowed aggregation %s: decode key %q: %w", a.spec.name, w.key, err)
		}
		v, err := a.val.Decode(w.agg)
		if err != nil {
			return fmt.Errorf("windowed aggregation %s: decode window [%d,%d] of key %q: %w", a.spec.name, w.win.Start, w.win.End, w.key, err)
		}
		if err := emit(r.ctx, a.windowed(k, w.win), v, false); err != nil {
			return err
		}
	}
	return nil
}

func (a *WindowedAggregation[K, V, A]) windowed(key K, w window.Window) Windowed[K] {
	return Windowed[K]{Key: key, Start: time.UnixMilli(w.Start).UTC(), End: time.UnixMilli(w.End).UTC()}
}
