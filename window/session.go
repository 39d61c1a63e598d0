package window

import "fmt"

// SessionAggregation is a windowed aggregation over session windows, Kafka
// Streams' windowedBy(SessionWindows).aggregate.
//
// A record at ts merges every session of its key that lies within Gap of
// it (ending at or after ts-Gap and starting at or before ts+Gap) into one
// session spanning them all and ts. The merged sessions are deleted from
// the store and, under EmitOnUpdate, retracted downstream with a tombstone
// each; the new session is stored and emitted. Sessions of a key therefore
// never overlap, and any two are more than Gap apart.
type SessionAggregation[V any] struct {
	Windows SessionWindows
	Agg     Aggregator[V]
	Emit    Emit
}

// Process folds a record of key at ts into its session at stream time st
// (already advanced by this record), reading nearby sessions from r. The
// record is dropped when the merged session has closed; Late then holds
// that session, and nothing changes.
//
// The merged aggregate is Merge applied, from Init, to the sessions by end,
// and then Add. Emits are timestamped with the session's end. A record that
// lands on an existing single-point session [ts, ts] updates it in place,
// without a tombstone, as in Kafka Streams.
func (a SessionAggregation[V]) Process(r SessionReader[V], key []byte, ts, st int64) (Result[V], error) {
	if err := checkTimestamp(ts); err != nil {
		return Result[V]{}, err
	}
	gap := a.Windows.Gap
	near, err := r.Sessions(key, ts-gap, ts+gap)
	if err != nil {
		return Result[V]{}, fmt.Errorf("read sessions within %d of %d: %w", gap, ts, err)
	}
	point := Window{Start: ts, End: ts}
	merged, agg := point, a.Agg.Init()
	for _, s := range near {
		agg = a.Agg.Merge(agg, s.Value)
		merged = Window{Start: min(merged.Start, s.Window.Start), End: max(merged.End, s.Window.End)}
	}
	o := ops[V]{emit: a.Emit}
	if a.Windows.Closed(merged, st) {
		o.res.Late = []Window{merged}
		return o.res, nil
	}
	if merged != point {
		for _, s := range near {
			o.remove(s.Window, s.Value)
		}
	}
	agg = a.Agg.Add(agg)
	o.put(merged, agg, 0)
	var zero V
	o.update(merged, agg, merged.End, zero, false)
	return o.res, nil
}
