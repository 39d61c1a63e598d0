package kstreamsref

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/rackstream/rackstream/window"
)

// RunCore runs a scenario through Rackstream's pure core, package window,
// and answers in the reference's [Result] shape, so that the two compare
// field by field. Each partition is a task: its own [window.StreamTime]
// and in-memory store, its records in input order. After each record the
// aggregation's ops are applied to the store and its emits appended to the
// output; under [Final], FinalsDue is asked after every record and the
// windows it names are emitted from the store in the store's final-result
// order, as window's package documentation prescribes. DroppedRecords
// counts one per window a record was too late for ([window.Result.Late]),
// as Kafka's dropped-records-total does.
//
// The store keeps every window: RunCore models no retention, so it answers
// Kafka's only for scenarios whose retention keeps every window to the end,
// as the generated ones do. EmitIntervalMs is ignored (it is 0 in a
// deterministic run).
func RunCore(s Scenario) (*Result, error) {
	res := &Result{Name: s.Name, Partitions: make([]PartitionResult, s.Partitions)}
	for p := range s.Partitions {
		c, err := newCoreTask(s)
		if err != nil {
			return nil, fmt.Errorf("core: scenario %s: %w", s.Name, err)
		}
		for i, r := range s.PartitionRecords(p) {
			if err := c.process(r); err != nil {
				return nil, fmt.Errorf("core: scenario %s partition %d record %d (%s@%d): %w", s.Name, p, i, r.Key, r.Timestamp, err)
			}
		}
		res.Partitions[p] = c.result(p)
	}
	return res, nil
}

// coreTask is one partition's task: stream time, the store, the last close
// time of final results, and what it produced.
type coreTask struct {
	session bool
	emit    window.Emit
	st      window.StreamTime
	last    int64
	wins    window.MemWindows[int64]
	sess    window.MemSessions[int64]
	// process folds one record into the store and returns the ops.
	aggregate func(t *coreTask, r Record, st int64) (window.Result[int64], error)
	due       func(lastClose, st int64) (window.Finals, bool)
	out       []Output
	dropped   int64
}

func newCoreTask(s Scenario) (*coreTask, error) {
	c := &coreTask{last: window.NoTimestamp, emit: window.EmitOnUpdate}
	switch s.Emit {
	case Update:
	case Final:
		c.emit = window.EmitOnClose
	default:
		return nil, fmt.Errorf("emit %q: want update or final", s.Emit)
	}
	if s.Aggregation != Count && s.Aggregation != Sum {
		return nil, fmt.Errorf("aggregation %q: want count or sum", s.Aggregation)
	}
	agg := func(r Record) window.Aggregator[int64] {
		add := r.Value
		if s.Aggregation == Count {
			add = 1
		}
		return window.Aggregator[int64]{
			Init:  func() int64 { return 0 },
			Add:   func(a int64) int64 { return a + add },
			Merge: func(a, b int64) int64 { return a + b },
		}
	}
	w := s.Window
	var def interface{ Validate() error }
	switch w.Type {
	case Tumbling, Hopping:
		adv := w.SizeMs
		if w.Type == Hopping {
			adv = w.AdvanceMs
		}
		d := window.Hopping(w.SizeMs, adv).WithGrace(w.GraceMs)
		def, c.due = d, d.FinalsDue
		c.aggregate = func(t *coreTask, r Record, st int64) (window.Result[int64], error) {
			return window.TimeAggregation[int64]{Windows: d, Agg: agg(r), Emit: t.emit}.Process(&t.wins, []byte(r.Key), r.Timestamp, st)
		}
	case Sliding:
		d := window.Sliding(w.TimeDifferenceMs).WithGrace(w.GraceMs)
		def, c.due = d, d.FinalsDue
		c.aggregate = func(t *coreTask, r Record, st int64) (window.Result[int64], error) {
			return window.SlidingAggregation[int64]{Windows: d, Agg: agg(r), Emit: t.emit}.Process(&t.wins, []byte(r.Key), r.Timestamp, st)
		}
	case Session:
		d := window.Session(w.GapMs).WithGrace(w.GraceMs)
		def, c.due, c.session = d, d.FinalsDue, true
		c.aggregate = func(t *coreTask, r Record, st int64) (window.Result[int64], error) {
			return window.SessionAggregation[int64]{Windows: d, Agg: agg(r), Emit: t.emit}.Process(&t.sess, []byte(r.Key), r.Timestamp, st)
		}
	default:
		return nil, fmt.Errorf("window type %q: want tumbling, hopping, sliding or session", w.Type)
	}
	if err := def.Validate(); err != nil {
		return nil, fmt.Errorf("window %+v: %w", w, err)
	}
	return c, nil
}

func (c *coreTask) process(r Record) error {
	st := c.st.Observe(r.Timestamp)
	res, err := c.aggregate(c, r, st)
	if err != nil {
		return err
	}
	key := []byte(r.Key)
	if c.session {
		err = c.sess.Apply(key, res.Ops)
	} else {
		err = c.wins.Apply(key, res.Ops)
	}
	if err != nil {
		return err
	}
	for _, op := range res.Ops {
		if op.Kind != window.OpEmit {
			continue
		}
		o := Output{Key: r.Key, Start: op.Window.Start, End: op.Window.End, Timestamp: op.Timestamp}
		if !op.Tombstone {
			o.Value = &op.Value
		}
		c.out = append(c.out, o)
	}
	c.dropped += int64(len(res.Late))
	if c.emit != window.EmitOnClose {
		return nil
	}
	f, ok := c.due(c.last, st)
	if !ok {
		return nil
	}
	var finals []window.Keyed[int64]
	if c.session {
		finals = c.sess.Finals(f)
	} else {
		finals = c.wins.Finals(f)
	}
	for _, k := range finals {
		ts := k.Timestamp
		if c.session {
			ts = k.Window.End
		}
		v := k.Value
		c.out = append(c.out, Output{Key: string(k.Key), Start: k.Window.Start, End: k.Window.End, Value: &v, Timestamp: ts})
	}
	c.last = f.Close
	return nil
}

// result is the partition's output, its store sorted as the reference sorts
// it (key bytes, start, end), and its drop count.
func (c *coreTask) result(p int32) PartitionResult {
	var all []window.Keyed[int64]
	if c.session {
		all = c.sess.All()
	} else {
		all = c.wins.All()
	}
	store := make([]StoredWindow, len(all))
	for i, k := range all {
		store[i] = StoredWindow{Key: string(k.Key), Start: k.Window.Start, End: k.Window.End, Value: k.Value}
	}
	slices.SortFunc(store, func(a, b StoredWindow) int {
		if c := bytes.Compare([]byte(a.Key), []byte(b.Key)); c != 0 {
			return c
		}
		if a.Start != b.Start {
			return int(a.Start - b.Start)
		}
		return int(a.End - b.End)
	})
	return PartitionResult{Partition: p, Output: c.out, Store: store, DroppedRecords: c.dropped}
}
