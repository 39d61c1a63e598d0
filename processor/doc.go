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
// A handler re-keys records through a repartition topic (NewRepartition,
// with GroupBy and SelectKey for the usual handlers): each record it sends
// is handled by the task owning its new key's slot, as after Kafka
// Streams' groupBy or selectKey. The runtime creates the topic, consumes it
// like an input and purges what the group has committed.
//
// # Time
//
// Each task has a stream time (Context.StreamTime): the largest timestamp
// of the records it has handled, never going back, as Kafka Streams
// defines it. A record's timestamp is its own unless its input has an
// extractor (WithTimestamp); a record whose extractor fails, or whose
// timestamp is before the epoch, goes to the error policy with stage
// StageTimestamp. Records that do not decode, and co-partitioned tables'
// records, do not move stream time. A task with several inputs takes
// the records it has fetched in timestamp order across them, and waits up
// to MaxTaskIdle for an input that has none (Kafka Streams waits longer
// for an input known to lag).
//
// Schedule runs a punctuator in every task on stream time (after the
// record that reaches the next multiple of its interval) or on the wall
// clock (between two records). OnTimer declares durable per-key timers: a
// handler sets or cancels a key's timer on either clock (Timers.Set,
// Timers.Cancel), and the timer handler runs once it is due, after the
// record that moves stream time to it, or when the wall clock passes it.
// Stream time and timers live in the task's store __time, declared by the
// first stream-time punctuator, timer handler or KeepStreamTime. They are
// written with the task's other writes, so they move with the task to any
// instance, standby or not. A fired timer's removal commits with its
// handler's writes, at least once or exactly once as the guarantee says. A
// wall-clock timer that came due while its task had no owner fires once the
// task resumes. Kafka Streams keeps a
// partition's time in its committed offsets, but restarts the stream time
// each windowed processor observes after a move. Here one stream time per
// task moves with its state. docs/time-and-windows.md has an example.
//
// # Tasks and the mapping contract
//
// Task i owns partition i of every input topic, of every co-partitioned
// table's topic and of every store's changelog. A changelog is
// <application.id>-<store>-changelog unless WithChangelog adopts another
// compacted topic, such as a goka group table. So all inputs and
// changelogs must have the same partition count: the runtime checks it at
// start and while running, and refuses to go on, naming every topic and its
// count, when they differ. Keys map to partitions with one function,
// package partition's, for emits, dead letters, queries and producers.
//
// # Delivery
//
// At-least-once, at the processed watermark. Every commit interval, on
// revoke and on shutdown, each task pauses between two records for its cut
// and goes on. The cut writes the record cache through, freezes the stores'
// write buffers and takes the processed offsets. Once the records produced
// before the cut are acknowledged (changelog, outputs, dead letters), each
// task's stores write the frozen data and changelog checkpoint in one
// LevelDB batch. Then the input offsets taken at the cut are committed
// (docs/design.md §7). Lost partitions are dropped without committing.
// Records after the last commit may be handled again after a crash; none is
// skipped.
//
// Ahead of its cut, a task with a large record cache writes it through
// itself, a chunk after each batch it takes, at the commit's request. So
// its records wait at most a chunk's time for a commit. The tasks of a
// commit do so in turn, within one deadline for the commit: the commit
// interval, clamped to 100 ms to 5 s. A moved task's first commit skips
// this, and its cut writes the whole cache. An instance's first periodic
// commit comes at a random moment of the interval, so that instances
// started together do not all commit at once ever after.
//
// With Options.CacheMaxBytes (statestore.cache.max.bytes), a record cache
// merges the writes to one key of a store, and the emits of one key to an
// output, within a commit interval. Only the last reaches the changelog
// and the output, as in Kafka Streams. A commit writes it through. It
// keeps a store's entries, clean, for the next reads, and an output's
// keys, spent, for the next emits to reuse. When full it drops those
// first, spent outputs before stores. Then it writes through the least
// recently written key, one at a time, so hot keys keep merging while a
// flood of cold keys passes through. The budget is divided among the tasks
// active on the instance; Zero turns it off. Options.MemoryBytes
// (state.memory.bytes) sizes the stores and bounds the cache from one
// budget; Zero leaves each its own size.
//
// # Record cache and streams
//
// The record cache merges per key, which is right for a table (a store, or
// an output whose records update a key) and wrong for a stream, whose
// records are events. So a stream gets past it whole. An output declared
// AsStream, as every windowed output is (NewWindowedOutput), has each emit
// produced in order when its record's effects are applied, never merged. A
// window or session store's writes go straight to its write buffer and
// changelog, so its range reads (Context's scan) need no merge with the
// cache. Results of different windows of one key are therefore never
// merged, whatever the key is. The commit still covers the emits of an
// AsStream output like every effect. It waits for them to be acknowledged,
// or puts them in its transaction, before it commits the offsets.
//
// # Windows
//
// NewWindowedAggregation declares a windowed aggregation (tumbling,
// hopping, sliding or session windows of package window, with count,
// reduce or an aggregator, emitting every update or final results only)
// over a window or session store: an ordinary changelogged store laid out
// with package window's key encodings. Its stream time is its own, as a
// Kafka Streams windowed processor's: the largest timestamp among the
// records that reached it in its task, where Context.StreamTime is over
// all the task's records. It is stored with its windows and last close
// time, so that both move with the changelog.
// docs/time-and-windows.md is the user's guide.
//
// Options.Guarantee (processing.guarantee) changes what a crash does to
// the records since the last commit. Under ExactlyOnceV2 each commit is a
// Kafka transaction of the instance's one producer with every task's
// changelog records, outputs, dead letters and input offsets. The offsets
// go in with TxnOffsetCommit, checked against the group generation, so a
// zombie is fenced. The stores write their buffers and checkpoints only
// after the transaction commits. An abort drops them and restarts the tasks
// from their last commit. Inputs, restores and standbys read committed.
// Under AtMostOnce a batch's offsets are committed before its records are
// processed: a crash may skip, never repeat.
//
// Shutdown (cancelling Run's context) finishes the in-flight records,
// commits as above, leaves the group and closes the stores, within
// Options.ShutdownTimeout. Every wait on the way is bounded. A commit that
// is flushing to unreachable brokers is aborted when its partitions are
// lost or revoked, or when the shutdown begins. It never holds its tasks,
// the group callbacks or the poll loop until the brokers return. Past the
// timeout Run gives up, logs what it was waiting for, and closes the stores
// anyway within a second more. Run always releases the state directory. A handler still running then finds its store reads and
// writes failing with ErrTaskClosed, and Run returns an error naming its
// task.
//
// # Zero values and defaults
//
// A field of Options left at its zero value takes its default, which
// DefaultOptions holds (the configuration's key table shows its own from
// it): Options{Brokers: brokers, StateDir: dir} is a complete
// configuration. Where zero is a setting of its own, Zero asks for it:
// CommitInterval: Zero commits after every batch a task works through,
// ShutdownTimeout: Zero does not wait, CacheMaxBytes: Zero turns the record
// cache off. NewRuntime rejects a value out of range, naming its key.
//
// # Reads
//
// A query reads a task's stores through Runtime.Replica's read-only views.
// StoreView reads the committed LevelDB state (isolation=committed). Under
// at-least-once, FreshView reads the task's latest processed state
// (isolation=latest): the record cache over the write buffer over LevelDB,
// read without blocking the task. Runtime.GlobalTable hands out a global
// table's GlobalView. No view writes. A store changes only through a
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
