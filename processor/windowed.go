package processor

// Windowed aggregations: Kafka Streams' groupByKey().windowedBy(w) with
// count, reduce and aggregate, as a handler over a window or session store
// (windowstore.go). This file declares them; windowed_process.go runs one
// record through package window's operations.

import (
	"errors"
	"fmt"
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
// store's name) over the windows def (package window's TimeWindows for
// tumbling and hopping windows, SlidingWindows or SessionWindows, each
// with its grace), keyed by key, with aggregates encoded by agg. The store is a window store (sessions: a session store)
// like any other: changelogged to <application.id>-<name>-changelog,
// created with cleanup.policy=compact,delete and retention.ms of the
// store's retention plus ChangelogAdditionalRetention, restored and kept
// warm by standbys. Its writes never enter the record cache.
func NewWindowedAggregation[W window.TimeWindows | window.SlidingWindows | window.SessionWindows, K, V, A any](t *Topology, name string, def W, key codec.Codec[K], agg codec.Codec[A], a Aggregator[K, V, A], opts ...WindowOption) *WindowedAggregation[K, V, A] {
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
		if ctx.rec == nil {
			return fmt.Errorf("windowed aggregation %s: %w", a.spec.name, errOutsideCall)
		}
		if ctx.Tombstone() {
			return nil
		}
		return a.process(ctx, key, value, emit)
	}
}
