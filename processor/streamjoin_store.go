package processor

// A stream-stream join's store and one record's run of the join.
//
// The join keeps everything in one store of the task, laid out with
// package window's join key encodings under six prefixes:
//
//   - 'l' and 'r' + window.JoinRecordKey(key, ts, seq) hold each side's
//     records, the value as the side's codec encodes it. seq is the
//     record's input offset, so a record processed again overwrites
//     itself, and records of one key and time are kept in offset order.
//   - 'x' + window.JoinTimeKey(ts, side, key, seq) indexes those records by
//     time, for expiry.
//   - 'p' + window.JoinTimeKey(ts, side, key, seq) holds the unmatched
//     records of a left or outer join that wait for their window to close,
//     in the order they are emitted.
//   - 'm' holds the join's progress (window.JoinState): its stream time,
//     each side's store time, and the hint that gates the scan of pending
//     records; then the number of marks. It is written with the records it
//     describes, so it travels with them to a new owner of the task.
//   - 'e' + topic + offset marks the unmatched records an input record
//     emitted alone, until its offset is committed (streamjoin_replay.go).
//
// Expiry deletes a side's records whose segment expired when the side's
// store time moves into a new segment, one staged delete per record and
// its index entry, as windowstore.go does for windows. Reads never see
// records past retention whether or not they are deleted yet: package
// window bounds its reads by the store time.

import (
	"fmt"
	"time"

	"github.com/rackstream/rackstream/window"
)

const (
	prefixJoinLeft    byte = 'l'
	prefixJoinRight   byte = 'r'
	prefixJoinPending byte = 'p'
	prefixJoinIndex   byte = 'x'
)

var joinStateKey = []byte{prefixMeta}

func joinSidePrefix(s window.Side) byte {
	if s == window.Left {
		return prefixJoinLeft
	}
	return prefixJoinRight
}

// joinReader is package window's view of the join's store, for one record.
type joinReader struct {
	ctx  *Context
	spec *storeSpec
}

// Buffered implements window.JoinReader.
func (r joinReader) Buffered(side window.Side, key []byte, from, to int64) ([]window.Buffered[[]byte], error) {
	lo, hi := window.JoinRecordRange(key, from, to)
	lo, hi = prefixedRange(joinSidePrefix(side), lo, hi)
	var out []window.Buffered[[]byte]
	var perr error
	err := r.ctx.scan(r.spec, lo, hi, func(k, v []byte) bool {
		_, ts, seq, err := window.ParseJoinRecordKey(k[1:])
		if err != nil {
			perr = err
			return false
		}
		out = append(out, window.Buffered[[]byte]{Side: side, Key: key, Timestamp: ts, Seq: seq, Value: append([]byte(nil), v...)})
		return true
	})
	if err == nil {
		err = perr
	}
	return out, err
}

// Pending implements window.JoinReader.
func (r joinReader) Pending(fn func(window.Buffered[[]byte]) bool) error {
	var perr error
	err := r.ctx.scan(r.spec, []byte{prefixJoinPending}, []byte{prefixJoinPending + 1}, func(k, v []byte) bool {
		ts, side, key, seq, err := window.ParseJoinTimeKey(k[1:])
		if err != nil {
			perr = err
			return false
		}
		return fn(window.Buffered[[]byte]{Side: side, Key: key, Timestamp: ts, Seq: seq, Value: append([]byte(nil), v...)})
	})
	if err == nil {
		err = perr
	}
	return err
}

// handle runs one record of side through the join: package window's
// decisions, then the store writes, the emits and expiry, all staged with
// the record. value is the record's encoding by the side's codec; nil (a
// tombstone) is skipped.
func (j *StreamJoin[K, L, R]) handle(ctx *Context, side window.Side, key K, value []byte, emit JoinEmit[K, L, R]) error {
	if ctx.rec == nil {
		return fmt.Errorf("stream join %s: %w", j.spec.name, errOutsideCall)
	}
	if ctx.topo != j.topo {
		return fmt.Errorf("stream join %s belongs to topology %s, not to %s", j.spec.name, j.topo.appID, ctx.topo.appID)
	}
	if value == nil {
		return nil
	}
	ts := ctx.Timestamp().UnixMilli()
	if ts < 0 || ts > window.MaxTimestamp {
		return nil // Kafka Streams drops such records before any processor.
	}
	kb, err := j.key.Encode(key)
	if err != nil {
		return fmt.Errorf("stream join %s: encode key: %w", j.spec.name, err)
	}
	before := joinMeta{state: window.NewJoinState()}
	if b, found, err := ctx.get(j.topo, j.spec, joinStateKey); err != nil {
		return err
	} else if found {
		if before, err = decodeJoinMeta(b); err != nil {
			return fmt.Errorf("store %s: %w", j.spec.name, err)
		}
	}
	meta := before
	if err := j.replayed(ctx, &meta); err != nil {
		return err
	}
	res, err := j.core.Process(meta.state, joinReader{ctx, j.spec}, window.Buffered[[]byte]{Side: side, Key: kb, Timestamp: ts, Seq: ctx.Offset(), Value: value})
	if err != nil {
		return fmt.Errorf("stream join %s: %w", j.spec.name, err)
	}
	if res.Expired {
		// Joined, but too late for its own side's store: counted as Kafka
		// Streams counts it, not dropped.
		ctx.late = append(ctx.late, lateMark{store: j.spec, windows: 1})
	}
	run := joinRun[K, L, R]{emit: emit}
	for _, op := range res.Ops {
		if err := j.apply(ctx, op, &run); err != nil {
			return err
		}
	}
	if err := j.expire(ctx, side, meta.state.StoreTime[side], res.State.StoreTime[side]); err != nil {
		return err
	}
	meta.state = res.State
	if err := j.mark(ctx, &meta, run.emitted); err != nil {
		return err
	}
	if meta != before {
		return ctx.stage(j.topo, write{store: j.spec, key: joinStateKey, value: meta.encode()})
	}
	return nil
}

// joinRun is what applying one record's operations collects: the
// unmatched records emitted alone (by their time-first prefix) and, of
// those, the pending entries deleted, for the record's mark.
type joinRun[K, L, R any] struct {
	emit    JoinEmit[K, L, R]
	lone    map[string]bool
	emitted []byte
}

func (j *StreamJoin[K, L, R]) put(ctx *Context, key, value []byte) error {
	return ctx.stage(j.topo, write{store: j.spec, key: key, value: value})
}

func (j *StreamJoin[K, L, R]) del(ctx *Context, key []byte) error {
	return ctx.stage(j.topo, write{store: j.spec, key: key, del: true})
}

// apply stages one of package window's operations.
func (j *StreamJoin[K, L, R]) apply(ctx *Context, op window.JoinOp[[]byte], run *joinRun[K, L, R]) error {
	r := op.Record
	switch op.Kind {
	case window.JoinStore:
		if err := j.put(ctx, prefixed(joinSidePrefix(r.Side), window.JoinRecordKey(r.Key, r.Timestamp, r.Seq)), r.Value); err != nil {
			return err
		}
		return j.put(ctx, prefixed(prefixJoinIndex, window.JoinTimeKey(r.Timestamp, r.Side, r.Key, r.Seq)), []byte{})
	case window.JoinPend:
		return j.put(ctx, prefixed(prefixJoinPending, window.JoinTimeKey(r.Timestamp, r.Side, r.Key, r.Seq)), r.Value)
	case window.JoinUnpend:
		prefix := window.JoinTimePrefix(r.Timestamp, r.Side, r.Key)
		p := prefixed(prefixJoinPending, prefix)
		lone := run.lone[string(prefix)]
		var keys [][]byte
		if err := ctx.scan(j.spec, p, window.PrefixEnd(p), func(k, v []byte) bool {
			keys = append(keys, append([]byte(nil), k...))
			if lone {
				run.emitted = appendJoinMarkEntry(run.emitted, k[1:], v)
			}
			return true
		}); err != nil {
			return fmt.Errorf("stream join %s: read pending records: %w", j.spec.name, err)
		}
		for _, k := range keys {
			if err := j.del(ctx, k); err != nil {
				return err
			}
		}
		return nil
	case window.JoinEmit:
		if !op.HasLeft || !op.HasRight {
			side := window.Left
			if op.HasRight {
				side = window.Right
			}
			if run.lone == nil {
				run.lone = map[string]bool{}
			}
			run.lone[string(window.JoinTimePrefix(op.Timestamp, side, op.Key))] = true
		}
		if run.emit == nil {
			return nil
		}
		return j.emit(ctx, op, run.emit)
	}
	return fmt.Errorf("stream join %s: unknown operation %d", j.spec.name, op.Kind)
}

// emit decodes a result and hands it to emit, stamped with its time.
func (j *StreamJoin[K, L, R]) emit(ctx *Context, op window.JoinOp[[]byte], emit JoinEmit[K, L, R]) error {
	key, err := j.key.Decode(op.Key)
	if err != nil {
		return fmt.Errorf("stream join %s: decode key %q: %w", j.spec.name, op.Key, err)
	}
	var v Joined[L, R]
	if op.HasLeft {
		l, err := j.left.Decode(op.Left)
		if err != nil {
			return fmt.Errorf("stream join %s: decode left value of key %q: %w", j.spec.name, op.Key, err)
		}
		v.Left = &l
	}
	if op.HasRight {
		r, err := j.right.Decode(op.Right)
		if err != nil {
			return fmt.Errorf("stream join %s: decode right value of key %q: %w", j.spec.name, op.Key, err)
		}
		v.Right = &r
	}
	at := time.UnixMilli(op.Timestamp).UTC()
	prev := ctx.emitAt
	ctx.emitAt = at
	defer func() { ctx.emitAt = prev }()
	return emit(ctx, key, v, at)
}

// expire stages the deletes of side's records whose segment expired when
// the side's store time moved from before to now.
func (j *StreamJoin[K, L, R]) expire(ctx *Context, side window.Side, before, now int64) error {
	segs := window.NewSegments(j.core.Windows.Retention())
	if now == window.NoTimestamp || before != window.NoTimestamp && segs.MinLive(before) == segs.MinLive(now) {
		return nil
	}
	limit := segs.Start(segs.MinLive(now))
	if limit <= 0 {
		return nil
	}
	lo, hi := window.JoinTimeRange(0, limit-1)
	lo, hi = prefixedRange(prefixJoinIndex, lo, hi)
	var keys [][]byte
	var perr error
	err := ctx.scan(j.spec, lo, hi, func(k, _ []byte) bool {
		ts, s, key, seq, err := window.ParseJoinTimeKey(k[1:])
		if err != nil {
			perr = err
			return false
		}
		if s == side {
			keys = append(keys, append([]byte(nil), k...), prefixed(joinSidePrefix(s), window.JoinRecordKey(key, ts, seq)))
		}
		return true
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("stream join %s: expire: %w", j.spec.name, err)
	}
	for _, k := range keys {
		if err := j.del(ctx, k); err != nil {
			return err
		}
	}
	return nil
}
