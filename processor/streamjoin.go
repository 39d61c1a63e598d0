package processor

// Stream-stream joins: Kafka Streams' KStream#join, #leftJoin and
// #outerJoin of two co-partitioned streams within JoinWindows, as two
// input handlers over one store of the join (streamjoin_store.go). This
// file declares them; package window's StreamJoin decides what a record
// emits and stores.

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/window"
)

// Joined is a stream-stream join's result: both records' values, or one of
// them alone (the other nil) for an unmatched record of a left or outer
// join. As JSON: {"left": ..., "right": ...}, null for the missing side.
type Joined[L, R any] struct {
	Left  *L `json:"left"`
	Right *R `json:"right"`
}

// StreamJoin is a declared stream-stream join: its store and windows.
// Left and Right make the handlers of its two inputs, which must be
// co-partitioned topics keyed alike.
type StreamJoin[K, L, R any] struct {
	topo  *Topology
	spec  *storeSpec
	core  window.StreamJoin[[]byte]
	key   codec.Codec[K]
	left  codec.Codec[L]
	right codec.Codec[R]
}

// NewStreamJoin declares a join named name (its store's name) of kind
// (window.InnerJoin, LeftJoin or OuterJoin) within the windows w, with keys
// encoded by key and the two streams' values by left and right.
//
// Both streams' records are kept in the join's store for w.Retention()
// after the newest one, as Kafka Streams keeps them, with the unmatched
// records of a left or outer join waiting for their window to close and
// the join's progress. The store is changelogged to
// <application.id>-<name>-changelog, created with
// cleanup.policy=compact,delete and retention.ms of the join's retention
// plus ChangelogAdditionalRetention (the only WindowOption a join takes),
// restored and kept warm by standbys like every store. Its writes never
// enter the record cache.
func NewStreamJoin[K, L, R any](t *Topology, name string, kind window.JoinKind, w window.JoinWindows, key codec.Codec[K], left codec.Codec[L], right codec.Codec[R], opts ...WindowOption) *StreamJoin[K, L, R] {
	cfg := windowConfig{additional: DefaultChangelogAdditionalRetention.Milliseconds()}
	for _, o := range opts {
		o(&cfg)
	}
	j := &StreamJoin[K, L, R]{topo: t, core: window.StreamJoin[[]byte]{Windows: w, Kind: kind}, key: key, left: left, right: right}
	var errs []error
	if err := w.Validate(); err != nil {
		errs = append(errs, err)
	}
	if kind != window.InnerJoin && kind != window.LeftJoin && kind != window.OuterJoin {
		errs = append(errs, fmt.Errorf("join kind %d: want window.InnerJoin, LeftJoin or OuterJoin", kind))
	}
	if cfg.final || cfg.retention != 0 {
		errs = append(errs, errors.New("a join takes no EmitFinal or WindowRetention: it emits unmatched records when their window closes, and keeps records for before + after + grace"))
	}
	if cfg.additional < 0 {
		errs = append(errs, fmt.Errorf("changelog additional retention must be >= 0, got %d ms", cfg.additional))
	}
	opt := func(s *storeSpec) {
		s.uncached = true
		s.changelogConfigs = map[string]string{
			"cleanup.policy": "compact,delete",
			"retention.ms":   strconv.FormatInt(window.ChangelogRetention(w.Retention(), cfg.additional), 10),
		}
	}
	if key == nil || left == nil || right == nil {
		errs = append(errs, errors.New("key, left and right codecs are required"))
		j.spec = &storeSpec{name: name}
	} else {
		j.spec = NewStore(t, name, codec.Bytes(), codec.Bytes(), opt).spec
		j.spec.join = &joinStore{retention: w.Retention(), render: [2]func([]byte) (any, error){
			window.Left:  func(b []byte) (any, error) { return left.Decode(b) },
			window.Right: func(b []byte) (any, error) { return right.Decode(b) },
		}}
	}
	if err := errors.Join(errs...); err != nil {
		t.errs = append(t.errs, fmt.Errorf("stream join %q: %w", name, err))
	}
	return j
}

// Name returns the join's store name.
func (j *StreamJoin[K, L, R]) Name() string { return j.spec.name }

// Changelog returns its store's changelog topic.
func (j *StreamJoin[K, L, R]) Changelog() string { return j.spec.changelog }

// NewJoinedOutput declares an output of join results (see
// StreamJoin.Left): keys encoded with key, so that it is co-partitioned
// with the inputs, and values as JSON (Joined). The output is a stream
// (AsStream): no result is merged away by the record cache.
func NewJoinedOutput[K, L, R any](t *Topology, topic string, key codec.Codec[K]) *Output[K, Joined[L, R]] {
	return NewOutput(t, topic, key, codec.JSON[Joined[L, R]](), AsStream())
}

// JoinEmit receives a join result of key, stamped at: the later of the two
// records' timestamps for a pair, the record's own for an unmatched one.
// What it emits to a stream output (AsStream) carries that timestamp; an
// output the record cache merges is stamped when the cache flushes.
type JoinEmit[K, L, R any] func(ctx *Context, key K, joined Joined[L, R], at time.Time) error

// Left returns the handler of the left stream's input, emitting each
// result to out (see NewJoinedOutput). Records without a value are
// skipped, as in Kafka Streams.
func (j *StreamJoin[K, L, R]) Left(out *Output[K, Joined[L, R]]) Handler[K, L] {
	return j.LeftFunc(emitTo(out))
}

// Right returns the handler of the right stream's input (see Left).
func (j *StreamJoin[K, L, R]) Right(out *Output[K, Joined[L, R]]) Handler[K, R] {
	return j.RightFunc(emitTo(out))
}

// LeftFunc is Left calling emit for each result.
func (j *StreamJoin[K, L, R]) LeftFunc(emit JoinEmit[K, L, R]) Handler[K, L] {
	return func(ctx *Context, key K, value L) error {
		return handleSide(j, ctx, window.Left, key, value, j.left, emit)
	}
}

// RightFunc is Right calling emit for each result.
func (j *StreamJoin[K, L, R]) RightFunc(emit JoinEmit[K, L, R]) Handler[K, R] {
	return func(ctx *Context, key K, value R) error {
		return handleSide(j, ctx, window.Right, key, value, j.right, emit)
	}
}

// handleSide encodes a record's value with its side's codec (a tombstone
// has none) and runs it through the join.
func handleSide[K, L, R, V any](j *StreamJoin[K, L, R], ctx *Context, side window.Side, key K, value V, c codec.Codec[V], emit JoinEmit[K, L, R]) error {
	if ctx.rec == nil || ctx.Tombstone() {
		return j.handle(ctx, side, key, nil, emit)
	}
	vb, err := c.Encode(value)
	if err != nil {
		return fmt.Errorf("stream join %s: encode %s value: %w", j.spec.name, side, err)
	}
	if vb == nil {
		vb = []byte{} // nil is a tombstone's
	}
	return j.handle(ctx, side, key, vb, emit)
}

func emitTo[K, L, R any](out *Output[K, Joined[L, R]]) JoinEmit[K, L, R] {
	if out == nil {
		return nil
	}
	return func(ctx *Context, key K, v Joined[L, R], _ time.Time) error { return out.Emit(ctx, key, v) }
}
