package window

// Emit says when a windowed aggregation forwards results downstream, as
// Kafka Streams' EmitStrategy.
type Emit uint8

const (
	// EmitOnUpdate forwards every change of a window's aggregate, and a
	// tombstone for every session merged away.
	EmitOnUpdate Emit = iota
	// EmitOnClose forwards nothing while records arrive; each window's
	// final result is emitted once, after it closes (see Finals).
	EmitOnClose
)

// OpKind is what an Op does.
type OpKind uint8

const (
	// OpPut stores Value, with Timestamp, as the aggregate of Window.
	OpPut OpKind = iota + 1
	// OpDelete removes Window from the store (a session merged away).
	OpDelete
	// OpEmit forwards the windowed key (the record's key and Window)
	// downstream with Value, or as a tombstone, at Timestamp.
	OpEmit
)

// Op is one step of an aggregation's answer to a record: a store write or a
// downstream emit, for the record's key. The caller applies a Result's Ops
// in order; the emits come in the order Kafka Streams forwards them.
type Op[V any] struct {
	Kind   OpKind
	Window Window
	// Value is the aggregate stored (OpPut) or forwarded (OpEmit, unless
	// Tombstone).
	Value V
	// Timestamp is the stored aggregate's timestamp (OpPut: the largest
	// record timestamp in the window; unused for sessions) or the forwarded
	// record's timestamp (OpEmit).
	Timestamp int64
	// Old is the previous aggregate of an emitted window, when HasOld, as
	// Kafka Streams' Change.oldValue for downstream that asks for it.
	Old    V
	HasOld bool
	// Tombstone marks an OpEmit that removes Window downstream.
	Tombstone bool
}

// Result is an aggregation's answer to one record.
type Result[V any] struct {
	Ops []Op[V]
	// Late lists the windows the record did not update because they had
	// closed. A record with Late windows and no OpPut was dropped entirely:
	// the caller counts it and may route it to a dead-letter topic.
	Late []Window
}

// Dropped reports whether the record changed nothing because it was late.
func (r Result[V]) Dropped() bool {
	if len(r.Late) == 0 {
		return false
	}
	for _, op := range r.Ops {
		if op.Kind == OpPut {
			return false
		}
	}
	return true
}

// Aggregator folds records into a window's aggregate. None of its
// functions may modify the aggregates it is given.
type Aggregator[V any] struct {
	// Init returns the aggregate of an empty window.
	Init func() V
	// Add folds the record being processed into agg.
	Add func(agg V) V
	// Merge combines the aggregates of two sessions being merged (session
	// windows only).
	Merge func(a, b V) V
}

// Entry is one stored window: its aggregate and, for time and sliding
// windows, the largest record timestamp in it.
type Entry[V any] struct {
	Window    Window
	Value     V
	Timestamp int64
}

// WindowReader is the view of a window store an aggregation reads.
type WindowReader[V any] interface {
	// Windows returns key's windows whose start lies in [from, to], oldest
	// first.
	Windows(key []byte, from, to int64) ([]Entry[V], error)
}

// SessionReader is the view of a session store a session aggregation reads.
type SessionReader[V any] interface {
	// Sessions returns key's sessions that end at or after earliestEnd and
	// start at or before latestStart, by end.
	Sessions(key []byte, earliestEnd, latestStart int64) ([]Entry[V], error)
}

// ops collects a Result for one record at ts.
type ops[V any] struct {
	emit Emit
	res  Result[V]
}

func (o *ops[V]) put(w Window, v V, ts int64) {
	o.res.Ops = append(o.res.Ops, Op[V]{Kind: OpPut, Window: w, Value: v, Timestamp: ts})
}

func (o *ops[V]) update(w Window, v V, ts int64, old V, hasOld bool) {
	if o.emit == EmitOnUpdate {
		o.res.Ops = append(o.res.Ops, Op[V]{Kind: OpEmit, Window: w, Value: v, Timestamp: ts, Old: old, HasOld: hasOld})
	}
}

func (o *ops[V]) remove(w Window, old V) {
	o.res.Ops = append(o.res.Ops, Op[V]{Kind: OpDelete, Window: w})
	if o.emit == EmitOnUpdate {
		o.res.Ops = append(o.res.Ops, Op[V]{Kind: OpEmit, Window: w, Timestamp: w.End, Old: old, HasOld: true, Tombstone: true})
	}
}
