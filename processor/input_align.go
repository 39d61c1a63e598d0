package processor

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Timestamp order across a task's stream inputs (Kafka Streams'
// PartitionGroup and max.task.idle.ms), for topologies with several inputs
// and no co-partitioned table (table_align.go orders those).
//
// The fetched records of each input wait in the task, in offset order. The
// task processes the waiting record with the smallest timestamp among the
// inputs' heads; on a tie, the input declared first. While an input has
// nothing waiting, a record of another could overtake records of that
// input not fetched yet. The task then waits for MaxTaskIdle (0: not at
// all), once per quiet spell of that input, and then goes on. The deadline
// stays until the input's records arrive. Unlike Kafka Streams, it does not
// wait longer for an input known to lag. The high watermark franz-go
// reports counts a transaction's closing marker, which no fetch delivers,
// so a caught-up input from transactional producers would look lagging
// forever. The task stops waiting when its queue is full or more
// than TaskQueue records wait (enforced processing). MaxTaskIdle < 0 turns
// the ordering off (input_task.go): records are processed in the order
// they are fetched, a batch at a time.
//
// The decisions are a plain function of this state (decide), unit-tested
// without a broker; input_task.go does the waiting and processing.
type inputAlign struct {
	inputs []*inputQueue // one per stream input, in topology order
	idle   time.Duration // MaxTaskIdle
	limit  int           // TaskQueue
	// until is the deadline of the wait decide asked for last (zero:
	// none, wait for records).
	until time.Time
}

// inputQueue is one input's fetched records not yet processed.
type inputQueue struct {
	topic string
	recs  []*kgo.Record // offset order
	// until is when the idle wait for this caught-up input ends (zero: not
	// started); kept until its records arrive or it is known to lag.
	until time.Time
}

// add queues a fetched batch of one of the inputs.
func (a *inputAlign) add(p kgo.FetchTopicPartition) {
	for _, q := range a.inputs {
		if q.topic != p.Topic {
			continue
		}
		if len(p.Records) > 0 {
			q.recs = append(q.recs, p.Records...)
			q.until = time.Time{}
		}
	}
}

// waiting returns the number of records waiting.
func (a *inputAlign) waiting() int {
	n := 0
	for _, q := range a.inputs {
		n += len(q.recs)
	}
	return n
}

// decide says what the task does next at now, with its queue full or not:
// process the head record of input i (stepProcess), wait for records
// until a.until (stepWait), or nothing (stepApply: no record waits).
func (a *inputAlign) decide(now time.Time, queueFull bool) (step alignStep, input int) {
	a.until = time.Time{}
	first := -1
	for i, q := range a.inputs {
		if len(q.recs) > 0 && (first < 0 || q.recs[0].Timestamp.Before(a.inputs[first].recs[0].Timestamp)) {
			first = i
		}
	}
	if first < 0 {
		return stepApply, 0
	}
	if queueFull || a.waiting() > a.limit {
		return stepProcess, first
	}
	if a.idle > 0 {
		for _, q := range a.inputs {
			if len(q.recs) > 0 {
				continue
			}
			if q.until.IsZero() {
				q.until = now.Add(a.idle)
			}
			if now.Before(q.until) && (a.until.IsZero() || q.until.Before(a.until)) {
				a.until = q.until
			}
		}
	}
	if !a.until.IsZero() {
		return stepWait, 0
	}
	return stepProcess, first
}

// pop removes the head record of input i and returns it as a batch of one.
func (a *inputAlign) pop(i int) []*kgo.Record {
	q := a.inputs[i]
	head := q.recs[:1:1]
	q.recs = q.recs[1:]
	if len(q.recs) == 0 {
		q.recs = nil // let the batch's array go
	}
	return head
}
