package window

import (
	"errors"
	"math"
)

// JoinWindows are Kafka Streams' JoinWindows: a record of the left stream
// at ts joins the right stream's records of its key whose timestamps lie in
// [ts-Before, ts+After], both ends inclusive; a record of the right stream
// at ts joins the left records in [ts-After, ts+Before]. Grace is how long
// after that window an unmatched record of a left or outer join waits for a
// partner before it is emitted alone.
type JoinWindows struct {
	// Before is how far a left record reaches back in time for right
	// records.
	Before int64
	// After is how far a left record reaches forward in time.
	After int64
	// Grace is how long after its window an unmatched record still waits.
	Grace int64
}

// JoinTimeDifference returns symmetric join windows: records of the two
// streams join when their timestamps differ by at most d ms. No grace.
func JoinTimeDifference(d int64) JoinWindows { return JoinWindows{Before: d, After: d} }

// WithGrace returns w with a grace period of grace ms.
func (w JoinWindows) WithGrace(grace int64) JoinWindows { w.Grace = grace; return w }

// Validate reports every fault of w at once, each a *FieldError named as
// the built-in join spells it after "processor.join.". Before and After
// must be >= 0: Kafka Streams also takes a negative one when their sum is
// not, which Rackstream does not.
func (w JoinWindows) Validate() error {
	return errors.Join(checkNonNegative("before.ms", w.Before), checkNonNegative("after.ms", w.After),
		checkNonNegative("grace.ms", w.Grace))
}

// Retention is how long each side's records stay in its store after the
// newest one: Before + After + Grace, as Kafka Streams keeps them.
func (w JoinWindows) Retention() int64 { return w.Before + w.After + w.Grace }

// JoinKind is which unmatched records a stream-stream join emits.
type JoinKind uint8

const (
	// InnerJoin emits only pairs of records that meet in the window.
	InnerJoin JoinKind = iota + 1
	// LeftJoin also emits each left record that met no right record,
	// alone, once its window has closed.
	LeftJoin
	// OuterJoin emits unmatched records of both sides alone.
	OuterJoin
)

// Outer reports whether k emits unmatched records of side s.
func (k JoinKind) Outer(s Side) bool {
	return k == OuterJoin || k == LeftJoin && s == Left
}

// Side is one of the two streams of a join.
type Side uint8

const (
	// Left is the stream whose records come first in a joined pair.
	Left Side = iota
	// Right is the other stream.
	Right
)

// Other returns the opposite side.
func (s Side) Other() Side { return 1 - s }

func (s Side) String() string {
	if s == Left {
		return "left"
	}
	return "right"
}

// reach returns how far a record of side s reaches back and forward for
// the other side's records.
func (w JoinWindows) reach(s Side) (back, forward int64) {
	if s == Left {
		return w.Before, w.After
	}
	return w.After, w.Before
}

// NoPending is JoinState.MinPending when no unmatched record is known to
// wait.
const NoPending int64 = math.MaxInt64

// JoinState is a join's progress, persisted with its stores: the join's
// stream time over both inputs, a lower bound hint of the pending
// unmatched records' timestamps, and each side's store time for retention.
type JoinState struct {
	// StreamTime is the largest record timestamp the join has seen, from
	// either side (NoTimestamp: none).
	StreamTime int64
	// MinPending is the timestamp the join last saw at the head of its
	// pending records, or the smallest pending since (NoPending: none).
	// It gates the scan for closed windows exactly as Kafka Streams'
	// tracker does, including after a scan that kept open records.
	MinPending int64
	// StoreTime is, per side, the largest timestamp written to that
	// side's store (NoTimestamp: none).
	StoreTime [2]int64
}

// NewJoinState returns the progress of a join that has seen nothing.
func NewJoinState() JoinState {
	return JoinState{StreamTime: NoTimestamp, MinPending: NoPending, StoreTime: [2]int64{NoTimestamp, NoTimestamp}}
}

// Buffered is a record kept by a join: in its side's store, or pending as
// unmatched. Seq orders records of one key and timestamp; the caller gives
// each record a Seq unique within its side and growing in processing order
// (a task uses the record's input offset).
type Buffered[V any] struct {
	Side      Side
	Key       []byte
	Timestamp int64
	Seq       int64
	Value     V
}

// JoinReader is the view of a join's stores that Process reads.
type JoinReader[V any] interface {
	// Buffered returns side's records of key with timestamps in [from,
	// to], by timestamp then Seq.
	Buffered(side Side, key []byte, from, to int64) ([]Buffered[V], error)
	// Pending calls fn with each pending unmatched record, by timestamp,
	// then side (Right first), then key bytes, then Seq, until fn returns
	// false.
	Pending(fn func(Buffered[V]) bool) error
}

// JoinOpKind is what a JoinOp does.
type JoinOpKind uint8

const (
	// JoinEmit forwards a result: a pair, or an unmatched record alone.
	JoinEmit JoinOpKind = iota + 1
	// JoinStore writes Record to its side's store.
	JoinStore
	// JoinPend writes Record to the pending unmatched records.
	JoinPend
	// JoinUnpend deletes every pending record of Record's side, key and
	// timestamp, whatever its Seq.
	JoinUnpend
)

// JoinOp is one step of a join's answer to a record.
type JoinOp[V any] struct {
	Kind JoinOpKind
	// Record is the record stored or pended, or (JoinUnpend) the side,
	// key and timestamp of the pending records to delete.
	Record Buffered[V]
	// Key, Left, Right and Timestamp are a JoinEmit's result; HasLeft or
	// HasRight is false for the side an unmatched record lacks.
	Key               []byte
	Left, Right       V
	HasLeft, HasRight bool
	Timestamp         int64
}

// JoinResult is a join's answer to one record.
type JoinResult[V any] struct {
	// Ops are applied in order; the emits come in Kafka Streams' order.
	Ops []JoinOp[V]
	// State is the join's progress after the record.
	State JoinState
	// Expired reports that the record's own store write was skipped: its
	// segment had expired. Kafka Streams counts it as a dropped record,
	// though it was joined.
	Expired bool
}
