package processor

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// take processes one batch popped from the task's queue: an input's batch
// goes through the record path (after the at-most-once commit ahead, when
// that is the guarantee). With co-partitioned tables (table.go), a table's
// batch waits in the task until the input records need it, and an input's
// batch is processed record by record, each after the table records of its
// time (table_align.go). It reports false when the task must end.
func (t *task) take(p kgo.FetchTopicPartition) bool {
	if !t.env.topo.hasTables() {
		if t.alignsInputs() { // input_task.go
			return t.takeInputs(p)
		}
		return t.takeOne(p)
	}
	a := t.tableAlign()
	if t.env.topo.tableOf(p.Topic) != nil {
		return t.queueTable(a, p) && t.tablesAhead(a)
	}
	if !t.pullTables(a) {
		return false
	}
	t.env.taken(len(p.Records))
	if t.env.ahead != nil && !t.env.ahead(t, p.Records) {
		return false
	}
	a.inputTaken(p)
	recs := p.Records
	for len(recs) > 0 {
		ts := recs[0].Timestamp
		switch step, i := a.decide(ts, t.env.now(), t.q.isPaused()); step {
		case stepApply:
			if !t.applyRun(a, i, a.headRun(i, ts)) {
				return false
			}
		case stepWait:
			if !t.waitTables(a) {
				return false
			}
		default:
			if !t.work(recs[:1]) {
				return false
			}
			recs = recs[1:]
		}
	}
	return t.tablesAhead(a)
}

// tablesAhead deals with the table records waiting when the task took a
// table batch: with an input batch queued, they wait for it; else they are
// applied once the inputs are not known to lag and MaxTaskIdle passed.
func (t *task) tablesAhead(a *tableAlign) bool {
	isInput := func(topic string) bool { return t.env.topo.tableOf(topic) == nil }
	for !t.q.has(isInput) {
		step := a.decideAhead(t.env.now())
		if step == stepWait && t.q.isPaused() {
			step = stepApply // the fetches it would wait for are paused: enforced
		}
		switch step {
		case stepApply:
			for i := range a.tables {
				if !t.applyRun(a, i, a.tables[i].recs) {
					return false
				}
			}
			return true
		case stepWait:
			if !t.waitTables(a) {
				return false
			}
		default:
			return true
		}
	}
	return true
}

// tableAlign returns the task's alignment state, made at its first batch
// (after its stores were restored: the tables' positions are theirs).
func (t *task) tableAlign() *tableAlign {
	if t.align != nil {
		return t.align
	}
	a := &tableAlign{idle: t.env.opts.MaxTaskIdle, limit: t.env.opts.taskQueue}
	for _, s := range t.env.topo.stores {
		if !s.table {
			continue
		}
		q := &tableQueue{spec: s, hwm: -1}
		t.mu.Lock()
		if db := t.stores[s.index]; db != nil {
			q.next = db.Checkpoint()
			q.restored = q.next
			if lag := db.Lag(); lag >= 0 {
				q.hwm = q.next + lag
			}
		}
		t.mu.Unlock()
		a.tables = append(a.tables, q)
	}
	t.align = a
	return a
}

// queueTable takes a table's batch into the task's waiting records.
func (t *task) queueTable(a *tableAlign, p kgo.FetchTopicPartition) bool {
	t.env.taken(len(p.Records))
	if t.env.ahead != nil && !t.env.ahead(t, p.Records) {
		return false
	}
	for _, q := range a.tables {
		if q.spec.changelog == p.Topic {
			q.add(p)
		}
	}
	return true
}

// pullTables takes the table batches queued behind the current one.
func (t *task) pullTables(a *tableAlign) bool {
	for _, tb := range t.q.takeIf(func(topic string) bool { return t.env.topo.tableOf(topic) != nil }) {
		if !t.queueTable(a, tb) {
			return false
		}
	}
	return true
}

// applyRun applies recs, the head of table i's waiting records.
func (t *task) applyRun(a *tableAlign, i int, recs []*kgo.Record) bool {
	if len(recs) == 0 {
		return true
	}
	if !t.applyTable(a.tables[i].spec, recs) {
		return false
	}
	a.applied(i, len(recs))
	return true
}

// waitTables waits for a batch to reach the task's queue (or the idle
// deadline, or the task's end) and takes the table batches queued.
func (t *task) waitTables(a *tableAlign) bool {
	// The table batches taken from the queue may have brought it below
	// the mark where its partitions resume: the records waited for are
	// fetched only then.
	if t.ctx.Err() != nil {
		return false
	}
	t.q.resume(t.env.opts.taskQueue, func() { t.env.fetch.ResumeFetchPartitions(t.env.partitions(t.id)) })
	var timeout <-chan time.Time
	if !a.until.IsZero() {
		timer := time.NewTimer(a.until.Sub(t.env.now()))
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-t.ctx.Done():
		return false
	case <-t.q.ready:
	case <-timeout:
	}
	return t.pullTables(a)
}

// takeOne processes one input batch of a topology without tables.
func (t *task) takeOne(p kgo.FetchTopicPartition) bool {
	t.env.taken(len(p.Records))
	if t.env.ahead != nil && !t.env.ahead(t, p.Records) {
		return false
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

// has reports whether a batch of a topic match reports true for is queued.
func (q *batchQueue) has(match func(topic string) bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, b := range q.batches {
		if match(b.Topic) {
			return true
		}
	}
	return false
}

// isPaused reports whether the queue paused its task's partitions (it is
// full).
func (q *batchQueue) isPaused() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.paused
}
