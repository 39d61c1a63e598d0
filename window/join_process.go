package window

import (
	"bytes"
	"fmt"
)

// StreamJoin is a stream-stream join of two co-partitioned streams within
// join windows, Kafka Streams' KStream#join, #leftJoin and #outerJoin with
// JoinWindows, and the emission of unmatched records only once their window
// has closed (Kafka Streams 3.1 and later).
//
// Each side's records are kept in the side's store for Windows.Retention
// after the newest one. A record first emits the pending unmatched records
// whose windows have closed (when it does not lag stream time), then joins
// the other side's stored records in its window, oldest first, each pair
// timestamped with the later of the two. A record of an outer side that met
// nothing is pending until its window plus grace has passed, or emitted
// alone at once when stream time is already past its window. Last, the
// record is written to its own side's store.
type StreamJoin[V any] struct {
	Windows JoinWindows
	Kind    JoinKind
}

// Process runs a record rec of side rec.Side through the join, from state
// s, reading the join's stores through r.
//
// Records without a key or a value are the caller's: Kafka Streams drops
// them, except that an outer side's record without a key is emitted alone
// at once.
func (j StreamJoin[V]) Process(s JoinState, r JoinReader[V], rec Buffered[V]) (JoinResult[V], error) {
	ts := rec.Timestamp
	if err := checkTimestamp(ts); err != nil {
		return JoinResult[V]{}, err
	}
	res := JoinResult[V]{}
	s.StreamTime = max(s.StreamTime, ts)
	back, forward := j.Windows.reach(rec.Side)

	if j.Kind != InnerJoin && ts == s.StreamTime {
		if err := j.emitClosed(&s, r, forward, &res); err != nil {
			return JoinResult[V]{}, err
		}
	}

	other := rec.Side.Other()
	from := max(0, ts-back, s.StoreTime[other]-j.Windows.Retention()+1)
	to := max(0, ts+forward)
	var matches []Buffered[V]
	if from <= to {
		var err error
		if matches, err = r.Buffered(other, rec.Key, from, to); err != nil {
			return JoinResult[V]{}, fmt.Errorf("read %s records of key %q in [%d,%d]: %w", other, rec.Key, from, to, err)
		}
	}
	for _, m := range matches {
		if j.Kind != InnerJoin {
			res.Ops = append(res.Ops, JoinOp[V]{Kind: JoinUnpend, Record: Buffered[V]{Side: other, Key: rec.Key, Timestamp: m.Timestamp}})
		}
		res.Ops = append(res.Ops, pair(rec, m, max(ts, m.Timestamp)))
	}
	if len(matches) == 0 && j.Kind.Outer(rec.Side) {
		if max(0, ts+forward) < s.StreamTime {
			res.Ops = append(res.Ops, alone(rec))
		} else {
			s.MinPending = min(s.MinPending, ts)
			res.Ops = append(res.Ops, JoinOp[V]{Kind: JoinPend, Record: rec})
		}
	}

	s.StoreTime[rec.Side] = max(s.StoreTime[rec.Side], ts)
	if NewSegments(j.Windows.Retention()).Kept(ts, s.StoreTime[rec.Side]) {
		res.Ops = append(res.Ops, JoinOp[V]{Kind: JoinStore, Record: rec})
	} else {
		res.Expired = true
	}
	res.State = s
	return res, nil
}

// emitClosed emits, oldest first, the pending records whose window plus
// grace has passed, and unpends them. forward is the processing side's
// reach forward: Kafka Streams skips the scan when the earliest pending
// record seen, reaching that far, is still open, whichever side it is on.
// The scan stops once it has seen an open record of each side; MinPending
// is left at the last record it looked at.
func (j StreamJoin[V]) emitClosed(s *JoinState, r JoinReader[V], forward int64, res *JoinResult[V]) error {
	if s.MinPending != NoPending && s.MinPending+forward+j.Windows.Grace >= s.StreamTime {
		return nil
	}
	s.MinPending = NoPending
	var open [2]bool
	var prev *Buffered[V]
	err := r.Pending(func(p Buffered[V]) bool {
		s.MinPending = p.Timestamp
		if open[Left] && open[Right] {
			return false
		}
		_, reach := j.Windows.reach(p.Side)
		if p.Timestamp+reach+j.Windows.Grace >= s.StreamTime {
			open[p.Side] = true
			return true
		}
		res.Ops = append(res.Ops, alone(p))
		if prev != nil && !samePending(*prev, p) {
			res.Ops = append(res.Ops, unpend(*prev))
		}
		prev = &p
		return true
	})
	if err != nil {
		return fmt.Errorf("read pending unmatched records: %w", err)
	}
	if prev != nil {
		res.Ops = append(res.Ops, unpend(*prev))
	}
	return nil
}

func samePending[V any](a, b Buffered[V]) bool {
	return a.Timestamp == b.Timestamp && a.Side == b.Side && bytes.Equal(a.Key, b.Key)
}

func unpend[V any](p Buffered[V]) JoinOp[V] {
	return JoinOp[V]{Kind: JoinUnpend, Record: Buffered[V]{Side: p.Side, Key: p.Key, Timestamp: p.Timestamp}}
}

// pair is the result of rec meeting m of the other side.
func pair[V any](rec, m Buffered[V], ts int64) JoinOp[V] {
	op := JoinOp[V]{Kind: JoinEmit, Key: rec.Key, Timestamp: ts, HasLeft: true, HasRight: true}
	if rec.Side == Left {
		op.Left, op.Right = rec.Value, m.Value
	} else {
		op.Left, op.Right = m.Value, rec.Value
	}
	return op
}

// alone is the result of an unmatched record, at its own timestamp.
func alone[V any](rec Buffered[V]) JoinOp[V] {
	op := JoinOp[V]{Kind: JoinEmit, Key: rec.Key, Timestamp: rec.Timestamp}
	if rec.Side == Left {
		op.Left, op.HasLeft = rec.Value, true
	} else {
		op.Right, op.HasRight = rec.Value, true
	}
	return op
}
