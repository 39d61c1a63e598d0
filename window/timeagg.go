package window

import "fmt"

// TimeAggregation is a windowed aggregation over tumbling or hopping
// windows, Kafka Streams' windowedBy(TimeWindows).aggregate.
type TimeAggregation[V any] struct {
	Windows TimeWindows
	Agg     Aggregator[V]
	Emit    Emit
}

// Process folds a record of key at ts into the windows containing it, at
// stream time st (already advanced by this record), reading their
// aggregates from r. Each window is updated unless it has closed: a new
// window starts from Init, and its stored timestamp is the largest record
// timestamp in it. Under EmitOnUpdate every updated window is emitted at
// that timestamp, with the previous aggregate (Init's for a new window) as
// Old.
func (a TimeAggregation[V]) Process(r WindowReader[V], key []byte, ts, st int64) (Result[V], error) {
	if err := checkTimestamp(ts); err != nil {
		return Result[V]{}, err
	}
	o := ops[V]{emit: a.Emit}
	open, late := a.Windows.Place(ts, st)
	o.res.Late = late
	for _, win := range open {
		got, err := r.Windows(key, win.Start, win.Start)
		if err != nil {
			return Result[V]{}, fmt.Errorf("read window [%d,%d): %w", win.Start, win.End, err)
		}
		old, newTS := a.Agg.Init(), ts
		if len(got) > 0 {
			old, newTS = got[0].Value, max(ts, got[0].Timestamp)
		}
		v := a.Agg.Add(old)
		o.put(win, v, newTS)
		o.update(win, v, newTS, old, true)
	}
	return o.res, nil
}
