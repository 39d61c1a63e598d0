package processor

// Windowed aggregations: Kafka Streams' groupByKey().windowedBy(w) with
// count, reduce and aggregate, as a handler over a window or session store
// (windowstore.go). The arithmetic is package window's; this file decodes,
// stages the store writes and emits, and keeps the aggregation's progress.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/window"
)

// Windowed is a key with a window, Kafka Streams' Windowed<K>: what a
// windowed aggregation's result belongs to. End is the window's end as
// Kafka Streams' Window.end(): exclusive for tumbling and hopping windows,
// inclusive for sliding windows and sessions.
type Windowed[K any] struct {
	Key        K
	Start, End time.Time
}

// WindowDefinition is a window definition of package window: TimeWindows
// (tumbling or hopping), SlidingWindows or SessionWindows, each with its
// grace.
type WindowDefinition interface {
	window.TimeWindows | window.SlidingWindows | window.SessionWindows
}

// Aggregator says how records fold into a window's aggregate, as Kafka
// Streams' Initializer, Aggregator and (sessions) Merger. Count and Reduce
// build the common ones. None of its functions may modify the aggregates
// they are given.
type Aggregator[K, V, A any] struct {
	// Init returns the aggregate of an empty window.
	Init func() A
	// Add folds a record into agg.
	Add func(key K, value V, agg A) A
	// Merge combines the aggregates of two sessions a record joins;
	// required for session windows only.
	Merge func(key K, a, b A) A
	// first makes a window's first value its aggregate (Reduce); Init is
	// then unused.
	first func(V) A
}

// Count counts the records of each window, as Kafka Streams' count().
func Count[K, V any]() Aggregator[K, V, int64] {
	return Aggregator[K, V, int64]{
		Init:  func() int64 { return 0 },
		Add:   func(_ K, _ V, n int64) int64 { return n + 1 },
		Merge: func(_ K, a, b int64) int64 { return a + b },
	}
}

// Reduce combines the values of each window with reduce, as Kafka Streams'
// reduce(): a window's first value is its aggregate, and each later value
// v makes it reduce(agg, v). Sessions merge with reduce too.
func Reduce[K, V any](reduce func(agg, value V) V) Aggregator[K, V, V] {
	return Aggregator[K, V, V]{
		Add:   func(_ K, v V, agg V) V { return reduce(agg, v) },
		Merge: func(_ K, a, b V) V { return reduce(a, b) },
		first: func(v V) V { return v },
	}
}

// WindowOption configures a windowed aggregation.
type WindowOption func(*windowConfig)

type windowConfig struct {
	final      bool
	retention  int64
	additional int64
}

// EmitFinal makes the aggregation emit each window's result once, when it
// closes (stream time passes its end plus grace), instead of on every
// update: Kafka Streams' EmitStrategy.onWindowClose().
func EmitFinal() WindowOption { return func(c *windowConfig) { c.final = true } }

// WindowRetention keeps windows in the store, for queries, for d after the
// newest one (for sessions: after the newest session end), rather than the
// definition's minimum (window length plus grace, Kafka Streams'
// default). It may not be shorter than that minimum.
func WindowRetention(d time.Duration) WindowOption {
	return func(c *windowConfig) { c.retention = d.Milliseconds() }
}

// ChangelogAdditionalRetention is the store's changelog retention beyond
// the store's own, windowstore.changelog.additional.retention.ms
// [DefaultChangelogAdditionalRetention]: the margin that keeps the broker
// from deleting a window the store still holds.
func ChangelogAdditionalRetention(d time.Duration) WindowOption {
	return func(c *windowConfig) { c.additional = d.Milliseconds() }
}

// DefaultChangelogAdditionalRetention is Kafka Streams' default of
// windowstore.changelog.additional.retention.ms: one day.
const DefaultChangelogAdditionalRetention = 24 * time.Hour

// WindowedAggregation is a declared windowed aggregation: its window or
// session store and how a record updates it. Handler makes the input
// handler that runs it.
type WindowedAggregation[K, V, A any] struct {
	topo   *Topology
	spec   *storeSpec
	layout windowLayout
	// size is the window length: End - Start of a time or sliding window.
	size  int64
	final bool
	key   codec.Codec[K]
	val   codec.Codec[A]
	aggr  Aggregator[K, V, A]

	timeDef    window.TimeWindows
	slidingDef window.SlidingWindows
	sessionDef window.SessionWindows
}

// NewWindowedAggregation declares a windowed aggregation named name (its
// store's name) over the windows def, keyed by key, with aggregates
// encoded by agg. The store is a window store (sessions: a session store)
// like any other: changelogged to <application.id>-<name>-changelog,
// created with cleanup.policy=compact,delete and retention.ms of the
// store's retention plus ChangelogAdditionalRetention, restored and kept
// warm by standbys. Its writes never enter the record cache.
func NewWindowedAggregation[W WindowDefinition, K, V, A any](t *Topology, name string, def W, key codec.Codec[K], agg codec.Codec[A], a Aggregator[K, V, A], opts ...WindowOption) *WindowedAggregation[K, V, A] {
	cfg := windowConfig{additional: DefaultChangelogAdditionalRetention.Milliseconds()}
	for _, o := range opts {
		o(&cfg)
	}
	wa := &WindowedAggregation[K, V, A]{topo: t, final: cfg.final, key: key, val: agg, aggr: a}
	var defErr error
	var minRetention int64
	switch d := any(def).(type) {
	case window.TimeWindows:
		wa.timeDef, wa.size, wa.layout.kind = d, d.Size, kindTime
		defErr, minRetention = d.Validate(), d.MinRetention()
	case window.SlidingWindows:
		wa.slidingDef, wa.size, wa.layout.kind = d, d.TimeDifference, kindSliding
		defErr, minRetention = d.Validate(), d.MinRetention()
	case window.SessionWindows:
		wa.sessionDef, wa.layout.kind = d, kindSession
		defErr, minRetention = d.Validate(), d.MinRetention()
	}
	if cfg.retention == 0 {
		cfg.retention = minRetention
	}
	var errs []error
	if defErr != nil {
		errs = append(errs, defErr)
	}
	if defErr == nil {
		if err := window.ValidateRetention(cfg.retention, minRetention); err != nil {
			errs = append(errs, err)
		}
	}
	if cfg.additional < 0 {
		errs = append(errs, fmt.Errorf("changelog additional retention must be >= 0, got %d ms", cfg.additional))
	}
	if a.Add == nil || a.Init == nil && a.first == nil {
		errs = append(errs, errors.New("the aggregator needs Init and Add"))
	}
	if wa.layout.kind == kindSession && a.Merge == nil {
		errs = append(errs, errors.New("session windows need the aggregator's Merge"))
	}
	wa.layout.segs = window.NewSegments(cfg.retention)
	opt := func(s *storeSpec) {
		s.uncached = true
		s.window = &windowStore{layout: wa.layout, size: wa.size}
		s.changelogConfigs = map[string]string{
			"cleanup.policy": "compact,delete",
			"retention.ms":   strconv.FormatInt(window.ChangelogRetention(cfg.retention, cfg.additional), 10),
		}
	}
	var s *Store[[]byte, []byte]
	if key != nil && agg != nil {
		s = NewStore(t, name, codec.Bytes(), codec.Bytes(), opt)
		s.spec.render = func(b []byte) (any, error) { return agg.Decode(b) }
	} else {
		errs = append(errs, errors.New("key and aggregate codecs are required"))
		s = &Store[[]byte, []byte]{spec: &storeSpec{name: name}}
	}
	wa.spec = s.spec
	if err := errors.Join(errs...); err != nil {
		t.errs = append(t.errs, fmt.Errorf("windowed aggregation %q: %w", name, err))
	}
	return wa
}

// Name returns the aggregation's store name.
func (a *WindowedAggregation[K, V, A]) Name() string { return a.spec.name }

// Changelog returns its store's changelog topic.
func (a *WindowedAggregation[K, V, A]) Changelog() string { return a.spec.changelog }

// Handler returns the input handler that folds each record into its
// windows and emits the results to out (nil: none; the store alone, for
// queries). Records without a value are skipped, as in Kafka Streams; a
// record too late for every window it falls in (past grace) is dropped,
// counted in rackstream_window_late_records_total, and dead-lettered under
// the error policy dlq with stage "late".
func (a *WindowedAggregation[K, V, A]) Handler(out *Output[K, WindowValue[A]]) Handler[K, V] {
	if out == nil {
		return a.HandlerFunc(nil)
	}
	return a.HandlerFunc(func(ctx *Context, w Windowed[K], agg A, tombstone bool) error {
		if tombstone {
			return out.EmitTombstone(ctx, w.Key, windowHeaders(w.Start, w.End)...)
		}
		return out.Emit(ctx, w.Key, WindowValue[A]{Start: w.Start.UnixMilli(), End: w.End.UnixMilli(), Value: agg})
	})
}

// HandlerFunc is Handler calling emit for each result: a window's
// aggregate, or (tombstone, emit-on-update only) the retraction of a
// session a record merged into a larger one.
func (a *WindowedAggregation[K, V, A]) HandlerFunc(emit func(ctx *Context, w Windowed[K], agg A, tombstone bool) error) Handler[K, V] {
	return func(ctx *Context, key K, value V) error {
		if ctx.Tombstone() {
			return nil
		}
		return a.process(ctx, key, value, emit)
	}
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
// its own (the largest timestamp it has seen in the task), persisted in
// its store; with a task-wide stream time this becomes the task's, read
// from r.ctx, and streamTime stays in the progress only as a record.
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
		ctx.late = a.spec // Kafka Streams drops such records before any processor
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
	if res.Dropped() {
		ctx.late = a.spec
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
			if a.layout.segs.ID(t) < a.layout.segs.MinLive(r.meta.storeTime) {
				continue
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
	// Every window the store holds is emitted, retention aside: expiry
	// runs after this and deletes only windows that are final already, so
	// none is deleted before it is emitted. Kafka Streams hides a window
	// a record moved more than a retention behind the store's time, even
	// when it is final only now.
	held := func(int64) bool { return true }
	err := a.layout.timeWindows(r.scan, a.size, f.From, f.To, held, func(w rawWindow) bool {
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
