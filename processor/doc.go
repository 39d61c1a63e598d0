// Package processor runs stateful stream processors on Kafka: a small typed
// topology API, an in-memory TestDriver for handler tests, and the Runtime
// that runs a topology as one instance of a replicated processor group.
//
// # Topology
//
// A processor group is its application id. It declares its input topics,
// each with key and value codecs and a handler; its stores; and its output
// topics:
//
//	topo := processor.New("click-counter")
//	counts := processor.NewStore(topo, "counts", codec.String(), codec.Int64())
//	updates := processor.NewOutput(topo, "click-counts", codec.String(), codec.Int64())
//	processor.NewInput(topo, "clicks", codec.String(), codec.String(),
//		func(ctx *processor.Context, user, page string) error {
//			n, _, err := counts.Get(ctx, user)
//			if err != nil {
//				return err
//			}
//			if err := counts.Put(ctx, user, n+1); err != nil {
//				return err
//			}
//			return updates.Emit(ctx, user, n+1)
//		})
//
// The handler is called once per record with the decoded key and value and a
// Context showing the record's topic, partition, offset, timestamp and
// headers. Its store writes and emits are staged and take effect together
// when it returns nil; an error or a panic discards them, and the record is
// retried with backoff (Retry) and then handed to the error policy. The
// records its writes and emits produce (changelog and output records) carry
// the input record's timestamp, as in Kafka Streams; with the record cache
// on, a merged write carries the time it is flushed.
//
// A handler also reads global tables (NewGlobalTable): compacted topics
// held whole by every instance, read by any key, restored before the
// instance joins its group and followed in the background, with no order
// with the stream (see GlobalTable). It joins a co-partitioned table
// (NewTable): a compacted topic partitioned like the inputs, of which task
// i holds partition i as a store restored from the topic itself, updated
// by the task in timestamp order with the inputs (max.task.idle.ms, see
// Table). InnerJoin and LeftJoin (and InnerJoinBy, LeftJoinBy for a key
// taken from the record) build the usual stream-table join handlers.
//
// # Tasks and the mapping contract
//
// Task i owns partition i of every input topic, of every co-partitioned
// table's topic and of every store's changelog (<application.id>-<store>-changelog unless WithChangelog adopts
// another compacted topic, such as a goka group table). So all inputs and
// changelogs must have the same partition count: the runtime checks it at
// start and while running, and refuses to go on, naming every topic and its
// count, when they differ. Keys map to partitions with one function,
// package partition's, for emits, dead letters, queries and producers.
//
// # Delivery
//
// At-least-once, at the processed watermark: every commit interval, on
// revoke and on shutdown, each task pauses between two records only for its
// cut (its record cache written through, its stores' write buffers frozen,
// its processed offsets taken) and goes on; once the records produced
// before the cut are acknowledged (changelog, outputs, dead letters), each
// task's stores write the frozen data and changelog checkpoint in one
// LevelDB batch, and then the input offsets taken at the cut are
// committed. Lost partitions are dropped without committing. Records after
// the last commit may be handled again after a crash; none is skipped.
// Ahead of its cut, a task with a large record cache writes it through
// itself, a chunk after each batch it takes, at the commit's request, so
// that its records wait at most a chunk's time for a commit; the tasks of
// a commit do so in turn, within one deadline for the commit (the commit
// interval, within 100 ms to 5 s). A moved task's first commit skips this
// (its cut writes the whole cache): its latency is the failover's. An
// instance's first periodic commit comes at a random moment of the
// interval, so that instances started together do not all commit at once
// ever after.
//
// With Options.CacheMaxBytes (statestore.cache.max.bytes) above 0, a record
// cache merges the writes to one key of a store, and the emits of one key to
// an output, within a commit interval: only the last reaches the changelog
// and the output, as in Kafka Streams. A commit writes it through and keeps
// a store's entries, clean, for the next reads, and an output's keys, spent,
// for the next emits to reuse. When full it drops those first (spent outputs
// before stores), then writes through the least recently written key, one at
// a time, so hot keys keep merging while a flood of cold keys passes
// through. The budget is divided among the tasks active on the instance;
// zero turns it off. Options.MemoryBytes (state.memory.bytes, 128 MiB by default)
// above 0 sizes the stores and bounds the cache from one budget; 0 leaves
// each its own size.
//
// # Record cache and streams
//
// The record cache merges per key, which is right for a table (a store, or
// an output whose records update a key) and wrong for a stream, whose
// records are events. So a stream gets past it whole: an output declared
// AsStream (every windowed output, NewWindowedOutput) has each emit
// produced in order when its record's effects are applied, never merged;
// and a window or session store's writes go straight to its write buffer
// and changelog, so that its range reads (Context's scan) need no merge
// with the cache. Results of different windows of one key are therefore
// never merged, whatever the key is. The emits of an AsStream output are
// still covered by the commit like every effect: a commit waits for them to
// be acknowledged (or puts them in its transaction) before it commits the
// offsets.
//
// # Windows
//
// NewWindowedAggregation declares a windowed aggregation (tumbling,
// hopping, sliding or session windows of package window, with count,
// reduce or an aggregator, emitting every update or final results only)
// over a window or session store: an ordinary changelogged store laid out
// with package window's key encodings (windowstore.go). Its stream time is
// its own (the largest timestamp it has seen in its task), stored with
// its windows and last close time so that both move with the changelog;
// windowed.go reads it in one place (observe), to be replaced by the
// task's stream time. docs/time-and-windows.md is the user's guide.
//
// Options.Guarantee (processing.guarantee) changes what a crash does to
// the records since the last commit. Under ExactlyOnceV2 each commit is a
// Kafka transaction of the instance's one producer with every task's
// changelog records, outputs, dead letters and input offsets
// (TxnOffsetCommit, checked against the group generation: a zombie is
// fenced); the stores write their buffers and checkpoints only after it
// commits, an abort drops them and restarts the tasks from their last
// commit (txn.go, rewind.go), and inputs, restores and standbys read
// committed. Under AtMostOnce a batch's offsets are committed before its
// records are processed (guarantee.go): a crash may skip, never repeat.
//
// Shutdown (cancelling Run's context) finishes the in-flight records,
// commits as above, leaves the group and closes the stores, within
// Options.ShutdownTimeout. Every wait on the way is bounded: a commit that
// is flushing to unreachable brokers is aborted when its partitions are
// lost or revoked, or the shutdown begins, rather than holding its tasks
// (and with them the group callbacks and the poll loop) until the brokers
// return; past the timeout Run gives up, logs what it was waiting for, and
// closes the stores anyway (within a second more): Run always releases the
// state directory. A handler still running then finds its store reads and
// writes failing with ErrTaskClosed, and Run returns an error naming its
// task.
//
// # Zero values and defaults
//
// DefaultOptions holds every default (the configuration's key table takes
// its own from it); a zero field means zero, never "the default":
// CommitInterval 0 commits after every batch a task works through,
// ShutdownTimeout 0 does not wait, CacheMaxBytes 0 turns the record cache
// off. NewRuntime rejects a zero that makes no sense, naming its key.
//
// # Reads
//
// A query reads a task's stores through Runtime.Replica's read-only
// views: StoreView, the committed LevelDB state (isolation=committed), or
// under at-least-once FreshView, the task's latest processed state
// (isolation=latest): the record cache over the write buffer over LevelDB,
// read without blocking the task. Runtime.GlobalTable hands out a global
// table's GlobalView. No view writes: a store changes only through a
// handler of its running task, which produces each write to the store's
// changelog. docs/architecture.md maps the runtime's files.
//
// # Poison records
//
// A record whose key or value does not decode, or whose handler still fails
// after the retries, goes to the error policy: PolicyDeadLetter (default)
// produces it as it arrived to <application.id>-dlq with headers naming the
// source topic, partition, offset, stage and error (HeaderDLQTopic ...);
// PolicySkip logs and counts it; PolicyFail stops the task and makes the
// instance not ready. The partition never blocks on a poison record under
// the first two.
//
// # Replicas
//
// The runtime joins the consumer group <application.id> with the balancer
// of package assignor/balancer, which places each task's active and
// num.standby.replicas standbys across the client tags. Standby and warmup
// replicas tail their changelogs through package state; an active task
// whose replica is already here is promoted, replaying only its lag, and a
// task moved away stays a standby when the plan keeps one here. Replica,
// Placement and Ready serve the HTTP query layer (query), and
// Options.OnPlacement hands each new placement, once, to whoever follows
// it (logs, metrics, dev), with the settings the group's leader planned it
// with.
package processor
