// Package table reads a compacted Kafka topic as a local key-value table,
// from any Go program: a Rackstream group's store changelog
// (<application.id>-<store>-changelog unless the store names its own), a
// goka group table (<group>-table), or any compacted topic whose records
// are key -> latest value, a nil value deleting the key.
//
// A Mirror is goka's View and Kafka Streams' read-only KTable outside the
// application that writes it: it restores every partition of the topic into
// LevelDB, one database per partition, as a Rackstream standby restores a
// store (large batches, each carrying its checkpoint, the next offset to
// read), and then tails the topic in the background as a standby does. Nothing is ever written to Kafka: the
// Mirror joins no group and commits nothing. A processor's global tables
// (processor.NewGlobalTable) are Mirrors the runtime opens for itself.
//
//	r, err := table.Open(ctx, "click-counter-counts-changelog",
//		table.Options{Brokers: []string{"localhost:9092"}})
//	...
//	defer r.Close(ctx)
//	v, found, err := r.Get([]byte("ann"))
//
// # Freshness
//
// Reads answer from local data, which trails the topic by the Mirror's lag:
// the offsets between each partition's checkpoint and the end offset last
// seen for it (the last stable offset: the Mirror reads with read_committed,
// so the changelog of an exactly-once application is never read
// uncommitted; without transactions that is the high watermark). Lag()
// reports it, Lags() per partition. Unlike goka's View, freshness can be
// bounded: WaitCaughtUp asks the brokers for the end offsets as they are
// now and returns once every partition has applied up to them, so that a
// write acknowledged before the call is visible after it
// (read-your-writes across programs).
//
// # Keys and partitions
//
// Get finds a key's partition with the partitioner the writer used
// (Partitioner; murmur2, Kafka's default, unless told otherwise: fnv1a for
// goka tables) and reads that partition's database only. Scan merges the
// partitions in key order. Typed wraps a Mirror with codecs of package
// codec (codec.FromGoka for a goka table's codec).
//
// # Disk and restarts
//
// With StateDir the databases and their checkpoints stay on disk and a
// Mirror opened again on the same directory restores only what it missed;
// the directory is locked while a Mirror has it open. Without it they live
// in a temporary directory removed by Close. A topic deleted and recreated,
// or truncated under the Mirror's checkpoint, is detected at Open and the
// partition restored from scratch; while running, a partition whose topic
// moved stops following it and Err reports why (open the Mirror again).
// A change of the topic's partition count is not followed: reopen the
// Mirror.
package table
