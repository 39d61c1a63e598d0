// Package state owns a Rackstream instance's local state: one LevelDB
// database per store and task, the compacted changelog topic behind every
// store, checkpoints written atomically with the data, restore from the
// changelog, standby tailing, and the state directory that holds it all.
//
// It is the storage engine beneath packages processor and table, not a
// library for applications. A Task's lifecycle calls (Activate, Freeze,
// WriteFrozen, Commit, Promote, Demote and the rest) and a DB's writes
// belong to the runtime that owns the task. That owner is the task's record
// loop, or the apply path of a restoring or standby task, and it alone
// keeps a store and its changelog in step. Applications read stores through
// processor.Replica's read-only views and through table.Mirror. Neither
// hands out a handle into this package.
//
// # Layout
//
// A Manager owns one application's state directory,
// state.dir/<application.id>. While open, it holds an exclusive flock on the
// directory's LOCK file and writes its pid there. A second Manager on the
// same directory, in this process or another, fails with an error naming
// the directory and the holder's pid. Each task, partition slot i, has a
// directory state.dir/<application.id>/<i>. Each of its stores is a LevelDB
// database in state.dir/<application.id>/<i>/<store>.
//
// # Keys and checkpoints
//
// Inside a database, user keys live under one prefix byte and metadata
// under another, so no user key can collide with the checkpoint. The
// checkpoint is the next changelog offset to read: the last applied offset
// + 1. It is written in the same LevelDB batch as the data it covers, so
// after a crash the data and the checkpoint agree, and restore resumes
// from it.
//
// # Write path of an active task
//
// A handler's Put and Delete go to the task's write buffer, which Get and
// Scan on the DB see. They are also produced to the store's changelog
// partition through the kgo client given to Task.Activate: the
// transactional client under exactly-once. At a commit point the caller
// flushes that client, or commits its transaction, and then calls
// Task.Commit. Commit writes one LevelDB batch per store, with the buffered
// writes and the new checkpoint.
//
// Under at-least-once the commit goes in three steps, so that the task
// pauses only for an instant. Task.Freeze cuts the write buffers with the
// task paused. Task.WaitFrozen waits for the changelog records of the cut.
// Task.WriteFrozen writes the cut while the task writes on (commit.go).
// Task.Abort drops the buffer instead, for an aborted transaction. Nothing
// is fsynced: the changelog is the durable copy, and restore brings back
// LevelDB's lost tail from it.
//
// Readers on other goroutines, such as HTTP queries, have two views.
// DB.View, a CommittedView, sees only what Commit and the apply path wrote
// to LevelDB. It serves isolation=committed, and every read under
// exactly-once, where the buffer belongs to an open transaction. DB.Latest,
// a LatestView, sees the task's latest processed state: the write buffer
// over LevelDB. It serves isolation=latest under at-least-once, as Kafka
// Streams' interactive queries do; its ScanOver adds one more layer on top,
// the processor's record cache. Neither view blocks the task. The buffer is
// a hash index over an append-only arena (buffer.go). It is published to
// readers through an atomic pointer and read under its own lock, held for
// one lookup. A buffer a reader may still be reading is never reset;
// latest.go has the protocol. On a standby the two views agree: its latest
// state is what it has applied.
//
// # Restore and standbys
//
// Restore and standby tailing share one apply path. A single consumer per
// Manager reads the changelog partitions of every restoring or standby task
// from their checkpoints. It applies them in large LevelDB batches, each
// carrying its new checkpoint and holding each key once, in key order;
// goleveldb's memtable takes sorted inserts with fewer cache misses
// (sortbatch.go). Control records and compaction gaps only move the
// checkpoint.
//
// Task.Restore catches up to the end offset captured when it starts: the
// high watermark. Under read_committed it also waits for the
// transactions open then to end, committed or aborted. It reports progress
// in logs and metrics, and a task is not ready until it has caught up.
// Task.StartStandby tails continuously. Task.Promote catches a standby up
// and makes it active without reopening its stores. Task.Demote turns an
// active task back into a standby.
//
// # Changelogs and cleanup
//
// Manager.EnsureChangelogs creates missing changelogs: compacted, one
// partition per task, and min.insync.replicas one less than the replication
// factor where that is at least 1. With Options.ChangelogLeadersWith it
// gives them an explicit replica assignment: partition i's preferred leader
// in the rack of that input's partition i leader, the other replicas in
// other racks (alignedReplicas decides, a pure function of the brokers'
// racks, the input leaders' racks and the replication factor). It refuses
// an existing changelog with another partition count or without
// compaction, naming the topic and both counts. ScanCheckpoints lists the checkpoints of every store on disk
// without opening databases, for the group leader to turn into lags; each
// store keeps a small sidecar file with a recent checkpoint for it. The
// stores of tasks that are not open are deleted CleanupDelay after their
// last use, by Manager.CleanupUnassigned, which also runs in the
// background.
//
// # Metrics
//
// The package's series (rackstream_state_*) are labelled by task and store,
// and only open stores have them. They are read from the live stores at each
// scrape, so a task that closes or moves to another instance leaves no
// series behind. Counters count from the store's open, carry it as their
// created timestamp, and start again from zero when the task reopens here.
//
// # Data integrity
//
// The changelog is the durable copy of every store. LevelDB is a cache of
// it that must never be silently shorter than its checkpoint says. Stores
// open with goleveldb's StrictJournal and StrictManifest, on top of its
// default block checksums, so no damaged journal chunk or manifest record
// is dropped without a decision:
//
//   - A torn journal tail is not damage. Each batch is one journal record
//     carrying its own checkpoint, and writes are not synced. A crash or
//     SIGKILL in the middle of a batch leaves a journal whose last record is
//     incomplete, with nothing intact after it. Dropping that tail leaves
//     data and checkpoint in agreement at the last complete batch, and
//     restore applies the rest from the changelog. Such a store reopens
//     without StrictJournal and is not rebuilt. It logs a warning and counts
//     in rackstream_state_torn_journal_tails_total.
//   - Damage with intact journal records after it is real damage: a flipped
//     byte, or a lost block. Dropping the damaged batches while replaying
//     later ones would keep a checkpoint past data that is gone. So is a
//     damaged or truncated MANIFEST, a damaged or missing table file found
//     at open, or an unreadable checkpoint. The store's directory is moved
//     aside to <store>.corrupt-<unix-nanos>, deleted CleanupDelay later. An
//     empty store with checkpoint 0 takes its place, and Restore rebuilds it
//     from the changelog's start. This is logged at ERROR with the task, the
//     store and the damaged file, and counted in
//     rackstream_state_corrupted_stores_total{reason}.
//   - A corrupted table block met while the store is open fails the task,
//     not the process. A read may meet it, or a compaction, after which
//     goleveldb refuses every write. The call that met it returns the error,
//     and it becomes the task's Err. The store is marked with a
//     RACKSTREAM-DAMAGED file in its directory, ScanCheckpoints no longer
//     reports it, and the next open rebuilds it as above.
//
// To tell the first case from the second, the journal is read once more as
// goleveldb's non-strict recovery would read it. The read notes whether any
// intact record follows the first damaged chunk, in its file or a later
// one. That recovery resumes at the next 32 KiB block after a damaged
// chunk, so what it drops of a tail is always a suffix of the batches: the
// store keeps an earlier checkpoint with exactly the data it covers.
//
// A write that fails, on a full disk say, is returned to the caller and
// recorded as the task's Err. It loses nothing: the batch was not applied,
// the checkpoint did not move, and the changelog still has every
// acknowledged record.
package state
