package processor

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// batchQueue holds a task's fetched batches in order. Pushing never
// blocks, since the poll loop must hand over every batch before it allows a
// rebalance. Its length is bounded by pausing the task's partitions
// instead. The pause decision is taken under the same lock as the length
// it depends on, so a pause is always followed by a resume: the task still
// has the queued batches to work through.
type batchQueue struct {
	// mu guards batches, records, closed and paused.
	mu      sync.Mutex
	batches []kgo.FetchTopicPartition
	records int
	closed  bool
	paused  bool          // the task's partitions are paused: too many records queued
	ready   chan struct{} // signalled (capacity 1) on push
}

// push appends p and reports false when the queue is closed (its task has
// ended) and p was not taken. When more than limit records are queued now,
// it calls pause (under the lock, so that a resume cannot overtake it).
func (q *batchQueue) push(p kgo.FetchTopicPartition, limit int, pause func()) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.batches = append(q.batches, p)
	q.records += len(p.Records)
	if !q.paused && q.records > limit {
		q.paused = true
		pause()
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// resume calls resume (under the lock) when push paused the task's
// partitions and the task has worked through half of limit since.
func (q *batchQueue) resume(limit int, resume func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.paused && q.records <= limit/2 {
		q.paused = false
		resume()
	}
}

// close empties the queue for good and returns the records it dropped.
func (q *batchQueue) close() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.records
	q.closed, q.batches, q.records = true, nil, 0
	return n
}

// pop removes the oldest batch.
func (q *batchQueue) pop() (p kgo.FetchTopicPartition, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.batches) == 0 {
		return p, false
	}
	p = q.batches[0]
	q.batches[0] = kgo.FetchTopicPartition{}
	q.batches = q.batches[1:]
	q.records -= len(p.Records)
	return p, true
}
