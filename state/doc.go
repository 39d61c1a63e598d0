// Package state owns a Rackstream instance's local state: one LevelDB
// database per store and task, the compacted changelog topic behind every
// store, checkpoints written atomically with the data, restore from the
// changelog, standby tailing, and the state directory that holds it all.
//
// It is the storage engine beneath packages processor and table, not a
// library for applications. A Task's lifecycle calls (Activate, Freeze,
// WriteFrozen, Commit, Promote, Demote, ...) and a DB's writes belong to
// the runtime that owns the task: its record loop, or the apply path of a
// restoring or standby task. That owner alone keeps a store and its
// changelog in step. Applications read stores through processor.Replica's
// read-only views and through table.Mirror, which hand out no handle into
// this package.
//
// # Layout
//
// A Manager owns one application's state directory,
// state.dir/<application.id>, and holds an exclusive flock on its LOCK file
// (the holder's pid is written into it) for as long as it is open: a second
// Manager on the same directory, in this process or another, fails with an
// error naming the directory and the holder's pid. Each task (partition slot
// i) has a directory state.dir/<application.id>/<i>, and each of its stores a
// LevelDB database state.dir/<application.id>/<i>/<store>.
//
// # Keys and checkpoints
//
// Inside a database, user keys live under one prefix byte and metadata under
// another, so no user key can collide with the checkpoint. The checkpoint is
// the next changelog offset to read (the last applied offset + 1) and is
// written in the same LevelDB batch as the data it covers: after a crash the
// data and the checkpoint always agree, and restore resumes from it.
//
// # Write path of an active task
//
// A handler's Put and Delete go to the task's write buffer (Get and Scan on
// the DB see it) and are produced to the store's changelog partition
// through the kgo client given to Task.Activate (the transactional client
// under exactly-once). At a commit point the caller flushes that client (or
// commits its transaction) and then calls Task.Commit, which writes, per
// store, one LevelDB batch with the buffered writes and the new checkpoint.
// Or, so that the task pauses only for an instant (at-least-once), the
// commit goes in three steps: Task.Freeze cuts the write buffers with the
// task paused, Task.WaitFrozen waits for the changelog records of the cut,
// and Task.WriteFrozen writes it while the task writes on (commit.go).
// Task.Abort drops the buffer instead (an aborted transaction). No fsync:
// the changelog is the durable copy and LevelDB's lost tail is restored
// from it.
//
// Readers on other goroutines (HTTP queries) have two views. DB.View (a
// CommittedView) sees only what Commit and the apply path wrote to
// LevelDB: isolation=committed, and every read under exactly-once, where
// the buffer belongs to an open transaction. DB.Latest (a LatestView)
// sees the task's latest processed state, the write buffer over LevelDB:
// isolation=latest under at-least-once, as Kafka Streams' interactive
// queries do; its ScanOver takes one more layer on top, the processor's
// record cache. Neither blocks the task: the buffer (a hash index over an
// append-only arena, buffer.go) is published to readers through an atomic
// pointer and read under its own lock, held for one lookup, and a buffer a
// reader may still be reading is never reset (latest.go has the protocol). On a standby the
// two views agree: its latest state is what it has applied.
//
// # Restore and standbys
//
// Restore and standby tailing share one apply path: a single consumer per
// Manager reads the changelog partitions of every restoring or standby task
// from their checkpoints and applies them in large LevelDB batches, each
// carrying its new checkpoint and written in key order, each key once
// (sortbatch.go: goleveldb's memtable takes sorted inserts with far fewer
// cache misses). Control records and compaction gaps only move the
// checkpoint. Task.Restore catches up to the end offset captured when it
// starts (the high watermark: under read_committed it waits for the
// transactions open then to end, committed or aborted) and reports progress
// in logs and metrics; a task is not ready until it has caught up.
// Task.StartStandby tails continuously; Task.Promote catches a standby up and
// makes it active without reopening its stores; Task.Demote turns an active
// task back into a standby.
//
// # Changelogs and cleanup
//
// Manager.EnsureChangelogs creates missing changelogs (compacted, one partition per
// task, min.insync.replicas = replication factor - 1 where that is at least
// 1) and refuses existing ones with another partition count or without
// compaction, naming the topic and both counts. ScanCheckpoints lists the
// checkpoints of every store on disk without opening databases (each store
// keeps a small sidecar file with a recent checkpoint), for the group
// leader to turn into lags. Stores of tasks that are not open are deleted
// CleanupDelay after their last use (Manager.CleanupUnassigned, also run in
// the background).
//
// # Data integrity
//
// The changelog is the durable copy of every store; LevelDB is a cache of
// it that must never be silently shorter than its checkpoint says. Stores
// open with goleveldb's StrictJournal and StrictManifest (on top of its
// default block checksums), so no damaged journal chunk or manifest record
// is dropped without a decision:
//
//   - A torn journal tail is not damage. Each batch is one journal record
//     carrying its own checkpoint, and writes are not synced (the changelog
//     is the durable copy), so a crash or SIGKILL in the middle of a batch
//     leaves a journal whose last record is incomplete, with nothing intact
//     after it. Dropping that tail leaves data and checkpoint in agreement
//     at the last complete batch, and restore applies the rest from the
//     changelog. Such a store reopens without StrictJournal and is not
//     rebuilt (a warning, rackstream_state_torn_journal_tails_total).
//   - Damage with intact journal records after it (a flipped byte, a lost
//     block) is real: dropping the damaged batches while replaying later
//     ones would keep a checkpoint past data that is gone. A damaged or
//     truncated MANIFEST, a damaged or missing table file found at open,
//     or an unreadable checkpoint are real damage too. The store's
//     directory is moved aside (<store>.corrupt-<unix-nanos>, deleted
//     CleanupDelay later) and an empty store takes its place with
//     checkpoint 0: Restore rebuilds it from the changelog's start. This
//     is logged at ERROR with the task, the store and the damaged file, and
//     counted in rackstream_state_corrupted_stores_total{reason}.
//   - A corrupted table block met while the store is open (by a read, or
//     by a compaction, after which goleveldb refuses every write) fails the
//     task, not the process: the error is returned by the call that met it
//     and becomes the task's Err. The store is marked (a RACKSTREAM-DAMAGED
//     file in its directory), ScanCheckpoints no longer reports it, and the
//     next open rebuilds it as above.
//
// To tell the first case from the second, the journal is read once more as
// goleveldb's non-strict recovery would read it, noting whether any intact
// record follows the first damaged chunk, in its file or a later one. That
// recovery resumes at the next 32 KiB block after a damaged chunk, so what
// it drops of a tail is always a suffix of the batches: the store keeps an
// earlier checkpoint with exactly the data it covers.
//
// A write that fails (a full disk) is returned to the caller, recorded as
// the task's Err, and loses nothing: the batch was not applied, the
// checkpoint did not move, and the changelog still has every acknowledged
// record.
package state
