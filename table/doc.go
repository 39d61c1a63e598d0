// Package table reads a compacted Kafka topic as a local key-value table,
// from any Go program. The topic may be a Rackstream group's store
// changelog (<application.id>-<store>-changelog unless the store names its
// own), a goka group table (<group>-table), or any compacted topic whose
// records are key -> latest value, a nil value deleting the key.
//
// A Mirror is goka's View and Kafka Streams' read-only KTable, outside the
// application that writes it. It restores every partition of the topic
// into LevelDB, one database per partition, as a Rackstream standby
// restores a store: large batches, each carrying its checkpoint, the next
// offset to read. Then it tails the topic in the background, as a standby
// does. Nothing is ever written to Kafka: the Mirror joins no group and
// commits nothing. A processor's global tables (processor.NewGlobalTable)
// are Mirrors the runtime opens for itself.
//
//	r, err := table.Open(ctx, "click-counter-counts-changelog",
//		table.Options{Brokers: []string{"localhost:9092"}})
//	...
//	defer r.Close(ctx)
//	v, found, err := r.Get([]byte("ann"))
//
// # Freshness
//
// Reads answer from local data, which trails the topic by the Mirror's
// lag: the offsets between each partition's checkpoint and the end offset
// last seen for it. That end is the last stable offset, as the Mirror reads
// with read_committed: the changelog of an exactly-once application is
// never read uncommitted. Without transactions it is the high watermark.
// Lag reports the total, Lags each partition's. Unlike goka's View, a
// Mirror can bound its freshness. WaitCaughtUp asks the brokers for the end
// offsets as they are now, and returns once every partition has applied up
// to them. A write acknowledged before the call is visible after it:
// read-your-writes across programs.
//
// # Keys and partitions
//
// Get finds a key's partition with the partitioner the writer used, and
// reads that partition's database only. The partitioner is murmur2, Kafka's
// default, unless Partitioner says otherwise; goka tables use fnv1a. Scan
// merges the partitions in key order. Typed wraps a Mirror with codecs of
// package codec; codec.FromGoka adapts a goka table's codec.
//
// # Disk and restarts
//
// With StateDir the databases and their checkpoints stay on disk, and a
// Mirror opened again on the same directory restores only what it missed.
// The directory is locked while a Mirror has it open. Without StateDir they
// live in a temporary directory that Close removes. Open detects a topic
// deleted and recreated, or truncated under the Mirror's checkpoint, and
// restores the partition from scratch. While running, a partition whose
// topic moved stops following it, and Err reports why: open the Mirror
// again. A change of the topic's partition count is not followed either:
// reopen the Mirror.
package table
