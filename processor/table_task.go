package processor

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// take processes one batch popped from the task's queue: an input's batch
// goes through the record path (after the at-most-once commit ahead, when
// that is the guarantee). With co-partitioned tables (table.go), a table's
// batch updates its table instead, and an input's batch first applies
// every table batch queued behind it, so that the records see the tables
// as of everything fetched so far. It reports false when the task must
// end.
func (t *task) take(p kgo.FetchTopicPartition) bool {
	if !t.env.topo.hasTables() {
		return t.takeOne(p)
	}
	if t.env.topo.tableOf(p.Topic) == nil {
		for _, tb := range t.q.takeIf(func(topic string) bool { return t.env.topo.tableOf(topic) != nil }) {
			if !t.takeOne(tb) {
				return false
			}
		}
	}
	return t.takeOne(p)
}

// takeOne processes one batch, of an input or a table.
func (t *task) takeOne(p kgo.FetchTopicPartition) bool {
	t.env.taken(len(p.Records))
	if t.env.ahead != nil && !t.env.ahead(t, p.Records) {
		return false
	}
	if s := t.env.topo.tableOf(p.Topic); s != nil {
		return t.applyTable(s, p.Records)
	}
	return t.work(p.Records)
}

// applyTable applies a batch of a table's records to the task's store of
// it, under the same locks as a record's processing (so that a commit
// writes the table's data with the offsets that cover it), and moves the
// table topic's next offset.
func (t *task) applyTable(s *storeSpec, records []*kgo.Record) bool {
	if g := t.env.gate; g != nil {
		g.RLock()
		defer g.RUnlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx.Err() != nil {
		return false
	}
	t.closeMu.RLock()
	defer t.closeMu.RUnlock()
	if t.closed.Load() {
		return false
	}
	db := t.stores[s.index]
	for _, rec := range records {
		if _, err := db.ApplySource(rec.Offset, rec.Key, rec.Value); err != nil {
			t.setErr(fmt.Errorf("task %d: table %s offset %d: %w", t.id, s.name, rec.Offset, err))
			return false
		}
		t.next[rec.Topic] = kgo.EpochOffset{Epoch: rec.LeaderEpoch, Offset: rec.Offset + 1}
	}
	return true
}

// hasTables reports whether t declares co-partitioned tables.
func (t *Topology) hasTables() bool {
	for _, s := range t.stores {
		if s.table {
			return true
		}
	}
	return false
}

// takeIf removes from the queue, in order, the batches of the topics keep
// reports true for, and returns them.
func (q *batchQueue) takeIf(keep func(topic string) bool) []kgo.FetchTopicPartition {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []kgo.FetchTopicPartition
	rest := q.batches[:0]
	for _, b := range q.batches {
		if keep(b.Topic) {
			out = append(out, b)
			q.records -= len(b.Records)
		} else {
			rest = append(rest, b)
		}
	}
	clear(q.batches[len(rest):])
	q.batches = rest
	return out
}
