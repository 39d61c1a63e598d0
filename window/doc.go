// Package window is the pure core of time in Rackstream: window
// definitions and their arithmetic, stream time, lateness and final
// results, the store operations of windowed aggregations, the key layouts
// of window, session and timer stores, and retention segments. Every
// function is a deterministic function of its arguments (no clocks, no
// I/O, no goroutines); the runtime owns the stores, the clocks and the
// emitting. Semantics are Kafka Streams' wherever it defines them, and each
// difference is named below.
//
// # Windows and time
//
// Times are epoch milliseconds (int64), durations milliseconds. A task's
// stream time (StreamTime) is the largest record timestamp it has seen and
// never goes back. Four window types:
//
//   - Tumbling(size) and Hopping(size, advance) are TimeWindows: [s, s+size),
//     end exclusive, s a multiple of advance. WindowsFor(ts) lists the
//     windows of a record, oldest first.
//   - Sliding(d) windows are [s, s+d], both ends inclusive, and exist only
//     where a record begins or ends one (see SlidingAggregation).
//   - Session(gap) windows are [first, last] record of a burst of a key's
//     records no more than gap apart, both ends inclusive.
//
// Windows align to the epoch in UTC and never start before 0: a daily
// window is a UTC day and cannot be offset to a time zone, as in Kafka
// Streams. A negative timestamp falls in no window; Kafka Streams drops
// such records before any processor, and the aggregations refuse them.
//
// # Closing, lateness and final results
//
// Each definition has a Grace. A window closes when stream time passes it
// by the grace, and the comparison differs by type exactly as in Kafka
// Streams' aggregations: a time window is closed once stream time >=
// end + grace (at equality, since its end is exclusive); a sliding window
// once stream time > end + grace; a session once stream time > end + gap +
// grace. A closed window takes no more records: the aggregations skip it
// and report it in Result.Late, and a record that changed nothing because
// of that was dropped (Result.Dropped).
//
// Under EmitOnClose an aggregation emits nothing per record; after each
// record the caller asks FinalsDue(lastClose, streamTime) which windows
// just closed, emits them from its store in time order then key order
// (sessions by end, then start, then key), and records the returned Close
// with its state. Consecutive ranges never overlap, so a window is emitted
// once, and a new owner that restores lastClose emits neither a duplicate
// nor a gap.
//
// # Aggregations as store operations
//
// TimeAggregation, SlidingAggregation and SessionAggregation take one record
// (key, timestamp, stream time) and a read view of the store (WindowReader,
// SessionReader) and return the puts, deletes and emits it implies
// (Result.Ops), in the order Kafka Streams forwards them. Sessions merged
// by a record are deleted and, under EmitOnUpdate, retracted downstream with
// a tombstone. The aggregate itself is the caller's: an Aggregator's Init,
// Add and (sessions) Merge. Record timestamps must lie in [0,
// MaxTimestamp] (ErrTimestamp otherwise). MemWindows and MemSessions are in-memory stores
// with the layouts below, for tests and test drivers.
//
// # Store layouts
//
// Window stores are keyed (key, start), session stores (key, end, start),
// with the key escaped so that one key's windows in a time range are one
// contiguous range scan whatever the other keys' lengths, and keys keep
// their byte order (see encoding.go). Time-first layouts order every key's
// windows for final results. Sessions put the end before the start because
// both merge lookups and final results select sessions by end. Segments
// divide a store by time, max(retention/2, 60 s) per segment, so expiry
// drops whole segments; the retention must cover the window and its grace
// (MinRetention, ValidateRetention).
//
// # Timers
//
// A durable timer belongs to a key and a clock (stream or wall) and fires
// once its clock reaches Due; a key has at most one per clock. The timer
// store queues them by clock, then due time, then key, so the due timers of
// a clock are one range scan (DueRange); an index by key lets SetTimer
// replace and CancelTimer remove a key's timer. A fired timer is removed in
// the same commit as its handler's writes.
//
// # Stream-stream joins
//
// StreamJoin takes one record of either side (key, timestamp, a Seq that
// orders records of one key and time), the join's JoinState and a read
// view of its stores (JoinReader), and returns the pairs and lone results
// to emit, the record to store, and the unmatched records to pend or
// unpend (JoinResult), with the state after it. JoinWindows give each
// side's reach (Before, After) and the Grace an unmatched record of a left
// or outer join waits before it is emitted alone; each side's records stay
// Retention (Before + After + Grace) after its newest one. The decisions
// are Kafka Streams' KStreamKStreamJoin's, quirks included (see
// StreamJoin); window/kstreamsref checks them record for record. Before
// and After must be >= 0, where Kafka Streams takes a negative one whose
// sum with the other is not.
//
// # Where Rackstream differs from Kafka Streams
//
//   - Sliding windows need a time difference > 0. Kafka Streams accepts 0
//     and then fails on the first record.
//   - FinalsDue is the caller's to call after every record, and nothing
//     throttles it. Kafka Streams throttles the check by wall clock
//     (__emit.interval.ms.kstreams.windowed.aggregation__, 1000 ms by
//     default): there the same final results come out later, with the first
//     record after the interval. With the throttle at 0 both emit them after
//     the same records. (Kafka Streams also skips the check after a sliding
//     window record earlier than the time difference; such a record leaves
//     stream time where it was or moves it below the time difference, where
//     no window closes, so that changes nothing.)
//
// Retention is the store's, and a caller matches Kafka Streams by what it
// reads through Segments and by the order of its calls. Retention is
// measured against the store's own time (the largest window start, or
// session end, written), not stream time; Segments takes that time as an
// argument. A write is skipped only when its segment is no longer Kept.
// The aggregations read the windows that are Live; final results of time
// and sliding windows are read LiveForFinals, final sessions from every
// Kept segment. And a record's windows are written before the final
// results are read, so a record that moves the store's time more than a
// retention past a window that just closed hides that window before it is
// emitted; a session stays readable as final until its segment is dropped.
//
// As in Kafka Streams, a session already emitted as final can still be
// merged into a later session by a record within gap of it that is not
// late itself; the merged session is then emitted as final in turn.
//
// # Checked against Kafka Streams
//
// window/kstreamsref runs Kafka Streams 4.4.0 itself (TopologyTestDriver,
// no broker) and this package, driven as a task drives it, on the same
// input: 160 generated scenarios (the four window types, count and sum,
// both emit modes, one to four partitions, out-of-order records, records
// past grace, repeated timestamps, session merges), 96 of them again with
// Kafka's default retention, a third of those in seconds so that whole
// segments expire, and hand-computed cases. Each partition gives the same
// output record for record and in order (final results; updates and
// session tombstones), the same final store, and the same count of dropped
// records, counted once per window a record missed (Result.Late), as
// Kafka's dropped-records-total. Only the wall-clock throttle above is left
// out.
package window
