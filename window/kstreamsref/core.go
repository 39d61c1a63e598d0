package kstreamsref

import (
	"fmt"

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
// The store applies the scenario's retention (Kafka's default when 0) as a
// segmented store does, by [window.Segments]: its store time is the largest
// segment time written (a window's start, a session's end); a write whose
// segment is not Kept is skipped; the aggregation's reads see the windows
// Live at the store time; final results are read LiveForFinals (time and
// sliding windows) or Kept (sessions). The record's writes come before the
// final results are read, as in Kafka. The final store is what Kafka's
// queries return: the Live windows, or under emit-final, whose time and
// sliding windows live in a time-ordered store, the LiveForFinals ones.
// EmitIntervalMs is ignored: Rackstream has no emit throttle.
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
	// seg is the store's retention and storeTime its own time: the
	// largest segment time written, NoTimestamp before the first write.
	seg       window.Segments
	storeTime int64
	// aggregate folds one record into the store's view and returns the
	// ops; due is the definition's FinalsDue.
	aggregate func(t *coreTask, r Record, st int64) (window.Result[int64], error)
	due       func(lastClose, st int64) (window.Finals, bool)
	out       []Output
	dropped   int64
}

func newCoreTask(s Scenario) (*coreTask, error) {
	c := &coreTask{last: window.NoTimestamp, storeTime: window.NoTimestamp, emit: window.EmitOnUpdate}
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
	var def interface {
		Validate() error
		MinRetention() int64
	}
	switch w.Type {
	case Tumbling, Hopping:
		adv := w.SizeMs
		if w.Type == Hopping {
			adv = w.AdvanceMs
		}
		d := window.Hopping(w.SizeMs, adv).WithGrace(w.GraceMs)
		def, c.due = d, d.FinalsDue
		c.aggregate = func(t *coreTask, r Record, st int64) (window.Result[int64], error) {
			return window.TimeAggregation[int64]{Windows: d, Agg: agg(r), Emit: t.emit}.Process(liveWindows{t}, []byte(r.Key), r.Timestamp, st)
		}
	case Sliding:
		d := window.Sliding(w.TimeDifferenceMs).WithGrace(w.GraceMs)
		def, c.due = d, d.FinalsDue
		c.aggregate = func(t *coreTask, r Record, st int64) (window.Result[int64], error) {
			return window.SlidingAggregation[int64]{Windows: d, Agg: agg(r), Emit: t.emit}.Process(liveWindows{t}, []byte(r.Key), r.Timestamp, st)
		}
	case Session:
		d := window.Session(w.GapMs).WithGrace(w.GraceMs)
		def, c.due, c.session = d, d.FinalsDue, true
		c.aggregate = func(t *coreTask, r Record, st int64) (window.Result[int64], error) {
			return window.SessionAggregation[int64]{Windows: d, Agg: agg(r), Emit: t.emit}.Process(liveSessions{t}, []byte(r.Key), r.Timestamp, st)
		}
	default:
		return nil, fmt.Errorf("window type %q: want tumbling, hopping, sliding or session", w.Type)
	}
	if err := def.Validate(); err != nil {
		return nil, fmt.Errorf("window %+v: %w", w, err)
	}
	retention := w.RetentionMs
	if retention == 0 {
		retention = def.MinRetention()
	}
	if err := window.ValidateRetention(retention, def.MinRetention()); err != nil {
		return nil, fmt.Errorf("window %+v: %w", w, err)
	}
	c.seg = window.NewSegments(retention)
	return c, nil
}

// segmentTime is the time a window's segment and liveness go by: a
// session's end, another window's start.
func (c *coreTask) segmentTime(w window.Window) int64 {
	if c.session {
		return w.End
	}
	return w.Start
}

// live keeps the windows of ks that are visible at the store's time, by
// the rule live (Segments.Live, LiveForFinals or Kept).
func (c *coreTask) live(ks []window.Keyed[int64], live func(t, now int64) bool) []window.Keyed[int64] {
	var out []window.Keyed[int64]
	for _, k := range ks {
		if live(c.segmentTime(k.Window), c.storeTime) {
			out = append(out, k)
		}
	}
	return out
}

// liveWindows is the aggregation's view of the window store: the windows
// live at the store's time.
type liveWindows struct{ c *coreTask }

func (v liveWindows) Windows(key []byte, from, to int64) ([]window.Entry[int64], error) {
	es, err := v.c.wins.Windows(key, from, to)
	return v.c.liveEntries(es), err
}

// liveSessions is the aggregation's view of the session store: the
// sessions live at the store's time.
type liveSessions struct{ c *coreTask }

func (v liveSessions) Sessions(key []byte, earliestEnd, latestStart int64) ([]window.Entry[int64], error) {
	es, err := v.c.sess.Sessions(key, earliestEnd, latestStart)
	return v.c.liveEntries(es), err
}

func (c *coreTask) liveEntries(es []window.Entry[int64]) []window.Entry[int64] {
	var out []window.Entry[int64]
	for _, e := range es {
		if c.seg.Live(c.segmentTime(e.Window), c.storeTime) {
			out = append(out, e)
		}
	}
	return out
}

// apply writes ops to the store one by one: each write moves the store's
// time first, and a window whose segment is not kept at it is not written.
func (c *coreTask) apply(key []byte, ops []window.Op[int64]) error {
	for i, op := range ops {
		if op.Kind != window.OpPut && op.Kind != window.OpDelete {
			continue
		}
		t := c.segmentTime(op.Window)
		c.storeTime = max(c.storeTime, t)
		if op.Kind == window.OpPut && !c.seg.Kept(t, c.storeTime) {
			continue
		}
		var err error
		if c.session {
			err = c.sess.Apply(key, ops[i:i+1])
		} else {
			err = c.wins.Apply(key, ops[i:i+1])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *coreTask) process(r Record) error {
	st := c.st.Observe(r.Timestamp)
	res, err := c.aggregate(c, r, st)
	if err != nil {
		return err
	}
	if err := c.apply([]byte(r.Key), res.Ops); err != nil {
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
	live := c.seg.LiveForFinals
	if c.session {
		live = c.seg.Kept
	}
	for _, k := range c.live(finals, live) {
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
	live := c.seg.Live
	if c.emit == window.EmitOnClose && !c.session {
		live = c.seg.LiveForFinals
	}
	var store []StoredWindow
	for _, k := range c.live(all, live) {
		store = append(store, StoredWindow{Key: string(k.Key), Start: k.Window.Start, End: k.Window.End, Value: k.Value})
	}
	sortStore(store)
	return PartitionResult{Partition: p, Output: c.out, Store: store, DroppedRecords: c.dropped}
}
