package processor

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Timestamp alignment of a task's input records with its co-partitioned
// tables (Kafka Streams' PartitionGroup and max.task.idle.ms, for the
// stream-table case).
//
// The fetched records of each table wait in the task, in offset order,
// until an input record needs them. Before the task processes an input
// record stamped ts, it applies every waiting table record stamped at or
// before ts. It goes in offset order and stops at the first one stamped
// later. So the record sees the table as of its own time. A table record
// stamped later than the input waits for a later input record. When the
// task has no input record queued, it waits as an input record waits for a
// table (below), and then the tables move on.
//
// When a table has nothing waiting, the input record could be processed
// before table records of earlier timestamps that are not fetched yet. As
// in Kafka Streams, the task then waits. It waits while the table's
// partition is known to lag: its high watermark, as of the last fetch, is
// beyond what was fetched. When it does not lag, the task waits MaxTaskIdle
// more (0: not at all), once per quiet spell. The deadline stays until the
// table's records arrive, as Kafka Streams keeps its idle deadline per
// partition. A task whose queue is full stops waiting and processes
// (enforced processing), since the fetches it waits for are paused with it.
//
// Table records ahead of the inputs wait the same way for the inputs:
// while an input partition is known to lag, and for MaxTaskIdle more.
// Unlike Kafka Streams, an input partition that has delivered nothing yet
// counts as caught up. franz-go reports no end offset for a partition whose
// fetches return nothing, so waiting for one could last forever. A table
// whose end is unknown counts as caught up too; its restore always learns
// it.
// MaxTaskIdle < 0 turns alignment off: every fetched table record is
// applied before the next input batch.
//
// The decisions are a plain function of this state (decide), unit-tested
// without a broker; table_task.go does the waiting and applying.
type tableAlign struct {
	tables []*tableQueue // one per co-partitioned table, in topology order
	idle   time.Duration // MaxTaskIdle
	// inputUntil is when the idle wait for quiet inputs ends (zero: not
	// started); kept until input records arrive, so that once it passed
	// the tables move on without waiting again (Kafka Streams' idle
	// deadline per partition).
	inputUntil time.Time
	// until is the deadline of the wait decide or decideAhead asked for
	// last (zero: none, wait for records).
	until time.Time
	// limit bounds the table records waiting in all: beyond it the oldest
	// are applied whatever their timestamps.
	limit int
	// inputLag is, per input topic, how far its last batch was from the
	// partition's high watermark (absent: nothing delivered yet).
	inputLag map[string]int64
}

// inputTaken notes an input batch the task is about to process.
func (a *tableAlign) inputTaken(p kgo.FetchTopicPartition) {
	if n := len(p.Records); n > 0 {
		if a.inputLag == nil {
			a.inputLag = make(map[string]int64)
		}
		a.inputLag[p.Topic] = max(0, p.HighWatermark-p.Records[n-1].Offset-1)
		a.inputUntil = time.Time{}
	}
}

// decideAhead says what the task does with table records waiting while no
// input record is queued, at now: apply them all (stepApply) or wait for
// input records (stepWait, until a.until if set).
func (a *tableAlign) decideAhead(now time.Time) alignStep {
	if a.waiting() == 0 {
		return stepProcess
	}
	if a.idle < 0 || a.waiting() > a.limit {
		return stepApply
	}
	a.until = time.Time{}
	for _, lag := range a.inputLag {
		if lag > 0 {
			a.inputUntil = time.Time{}
			return stepWait // input records are coming
		}
	}
	if a.idle > 0 {
		if a.inputUntil.IsZero() {
			a.inputUntil = now.Add(a.idle)
		}
		if now.Before(a.inputUntil) {
			a.until = a.inputUntil
			return stepWait
		}
	}
	return stepApply
}

// tableQueue is one table's fetched records not yet applied, and what the
// task knows of the partition's end.
type tableQueue struct {
	spec *storeSpec
	recs []*kgo.Record // offset order
	// next is the offset after the last record fetched (or restored), hwm
	// the high watermark last seen (-1: unknown).
	next, hwm int64
	// until is when the idle wait for this caught-up table ends (zero: not
	// started); kept until its records arrive or it is known to lag.
	until time.Time
	// restored is the task's checkpoint of the table when it started: the
	// group's fetches may start below it (an older committed offset),
	// and what they bring below it is already applied.
	restored int64
}

// lag is how far the fetches are behind the partition's end as last seen,
// not counting what the restore applied; -1 when unknown.
func (q *tableQueue) lag() int64 {
	if q.hwm < 0 {
		return -1
	}
	return max(0, q.hwm-max(q.next, q.restored))
}

// add queues a fetched batch of the table.
func (q *tableQueue) add(p kgo.FetchTopicPartition) {
	q.recs = append(q.recs, p.Records...)
	if n := len(p.Records); n > 0 {
		q.next = p.Records[n-1].Offset + 1
		q.until = time.Time{}
	}
	q.hwm = p.HighWatermark
}

// waiting returns the number of table records waiting.
func (a *tableAlign) waiting() int {
	n := 0
	for _, q := range a.tables {
		n += len(q.recs)
	}
	return n
}

type alignStep int

const (
	stepProcess alignStep = iota // process the input record
	stepApply                    // apply the head run of table `table`
	stepWait                     // wait for table records (until `until`, if set)
)

// decide says what the task does next before an input record stamped ts,
// at now, with its queue full or not: apply table i's waiting head (then
// decide again), wait for table records, or process the record.
func (a *tableAlign) decide(ts, now time.Time, queueFull bool) (step alignStep, table int) {
	if a.idle < 0 || a.waiting() > a.limit {
		for i, q := range a.tables {
			if len(q.recs) > 0 {
				return stepApply, i
			}
		}
		if a.idle < 0 {
			return stepProcess, 0
		}
	}
	// Waiting ends at the earliest idle deadline, or with records only
	// (zero) when a table is known to lag.
	wait, forRecords := false, false
	a.until = time.Time{}
	for i, q := range a.tables {
		switch {
		case len(q.recs) > 0 && !q.recs[0].Timestamp.After(ts):
			return stepApply, i
		case len(q.recs) > 0: // the table is ahead of the record
		case q.lag() > 0: // records of it are on the broker
			q.until = time.Time{}
			wait, forRecords = true, true
		case a.idle > 0:
			if q.until.IsZero() {
				q.until = now.Add(a.idle)
			}
			if now.Before(q.until) {
				wait = true
				if a.until.IsZero() || q.until.Before(a.until) {
					a.until = q.until
				}
			}
		}
	}
	if forRecords {
		a.until = time.Time{}
	}
	if wait && !queueFull {
		return stepWait, 0
	}
	a.until = time.Time{}
	return stepProcess, 0
}

// headRun returns the waiting records of table i to apply before an input
// record stamped ts: those stamped at or before it, or, when alignment is
// off or too many wait, all of them.
func (a *tableAlign) headRun(i int, ts time.Time) []*kgo.Record {
	q := a.tables[i]
	if a.idle < 0 || a.waiting() > a.limit {
		return q.recs
	}
	n := 0
	for n < len(q.recs) && !q.recs[n].Timestamp.After(ts) {
		n++
	}
	return q.recs[:n]
}

// applied drops the first n waiting records of table i.
func (a *tableAlign) applied(i, n int) {
	q := a.tables[i]
	clear(q.recs[:n])
	q.recs = q.recs[n:]
}
