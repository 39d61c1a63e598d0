package processor

// Stream-table joins, as Kafka Streams' KStream#join and #leftJoin with a
// KTable (co-partitioned, by the record's key) or a GlobalKTable (by a key
// the record gives): handlers built from a table and a function of the
// record and the table's row. A join reads the table as it is when the
// record is processed (see Table's and GlobalTable's ordering rules); it
// keeps no state of its own, and an update of the table alone emits
// nothing.
//
// As in Kafka Streams, a stream record without a value (a tombstone) is
// skipped by every join: there is nothing to enrich.

// Keyed is a table a handler reads by key: a co-partitioned *Table or a
// *GlobalTable.
type Keyed[K, V any] interface {
	Get(ctx *Context, key K) (value V, found bool, err error)
}

// InnerJoin returns a handler that looks up each record's key in tbl and
// calls h with the record and the table's row. Records whose key tbl does
// not have, never written or deleted by a tombstone, are skipped. tbl is a
// co-partitioned table, or a global table keyed like the stream.
func InnerJoin[K, V, T any](tbl Keyed[K, T], h func(ctx *Context, key K, value V, row T) error) Handler[K, V] {
	return InnerJoinBy(tbl, func(key K, _ V) K { return key }, h)
}

// LeftJoin returns a handler that looks up each record's key in tbl and
// calls h with the record and the table's row, found false (row the zero
// value) when tbl does not have the key.
func LeftJoin[K, V, T any](tbl Keyed[K, T], h func(ctx *Context, key K, value V, row T, found bool) error) Handler[K, V] {
	return LeftJoinBy(tbl, func(key K, _ V) K { return key }, h)
}

// InnerJoinBy is InnerJoin on the table key tableKey gives for each
// record: for a global table, which any key may be read from (Kafka
// Streams' join with a GlobalKTable and a KeyValueMapper). On a
// co-partitioned table, tableKey must keep the record's partition: a key
// of another partition is in another task's table.
func InnerJoinBy[K, V, TK, T any](tbl Keyed[TK, T], tableKey func(key K, value V) TK, h func(ctx *Context, key K, value V, row T) error) Handler[K, V] {
	return func(ctx *Context, key K, value V) error {
		if ctx.Tombstone() {
			return nil
		}
		row, found, err := tbl.Get(ctx, tableKey(key, value))
		if err != nil || !found {
			return err
		}
		return h(ctx, key, value, row)
	}
}

// LeftJoinBy is LeftJoin on the table key tableKey gives for each record
// (see InnerJoinBy).
func LeftJoinBy[K, V, TK, T any](tbl Keyed[TK, T], tableKey func(key K, value V) TK, h func(ctx *Context, key K, value V, row T, found bool) error) Handler[K, V] {
	return func(ctx *Context, key K, value V) error {
		if ctx.Tombstone() {
			return nil
		}
		row, found, err := tbl.Get(ctx, tableKey(key, value))
		if err != nil {
			return err
		}
		return h(ctx, key, value, row, found)
	}
}
