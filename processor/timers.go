package processor

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/state"
	"github.com/rackstream/rackstream/window"
)

// TimerHandler is called once for each durable timer of its Timers that
// comes due, with the timer's key and due time, on the task's goroutine
// with its stores and outputs, between two records. Its writes and emits
// take effect together with the timer's removal when it returns nil, as a
// handler's do; it may set the key's next timer.
type TimerHandler[K any] func(ctx *Context, key K, due time.Time) error

// Timers are durable per-key timers with one handler (OnTimer). A key has at
// most one timer per clock: setting it again replaces it.
type Timers[K any] struct {
	topo *Topology
	spec *timerSpec
	key  codec.Codec[K]
}

// timerSpec is a declared timer handler.
type timerSpec struct {
	name string
	// fire decodes a timer's key and calls the handler.
	fire func(c *Context, key []byte, due time.Time) (stage string, err error)
}

// OnTimer declares durable per-key timers named name, with keys encoded by
// key, and the handler of those that come due. A handler sets and cancels
// them (Set, Cancel). They live in the task's time store with its other
// state: changelogged, restored, tailed by standbys and written in its
// commits. So a timer set before a crash fires on the task's new owner. A
// wall-clock timer that came due while the task had no owner fires once
// the task resumes.
//
// A stream-time timer fires after the record that moves stream time to or
// past its due time; a wall-clock timer when the instance's clock passes
// it, between two records. Due timers fire in due order, then key order.
// Each fire is applied with its handler's writes and emits, so a timer
// fires at least once under at-least-once (again if the task moves before
// its commit), and exactly once under exactly-once.
//
// A handler that fails is retried as a record's handler is; past the
// retries the error policy fail stops the task, and dlq and skip log the
// failure and drop the timer.
func OnTimer[K any](t *Topology, name string, key codec.Codec[K], h TimerHandler[K]) *Timers[K] {
	spec := &timerSpec{name: name}
	spec.fire = func(c *Context, kb []byte, due time.Time) (string, error) {
		k, err := key.Decode(kb)
		if err != nil {
			return StageDecodeKey, fmt.Errorf("timer %s: decode key %q: %w", name, kb, err)
		}
		return StageHandler, h(c, k, due)
	}
	switch {
	case !storeNameRE.MatchString(name):
		t.errs = append(t.errs, fmt.Errorf("timers %q: a name is letters, digits, '.', '_' and '-'", name))
	case key == nil || h == nil:
		t.errs = append(t.errs, fmt.Errorf("timers %q: key codec and handler are required", name))
	case t.timers[name] != nil:
		t.errs = append(t.errs, fmt.Errorf("timers %q declared twice", name))
	default:
		if t.timers == nil {
			t.timers = make(map[string]*timerSpec)
		}
		t.timers[name] = spec
		t.useTime()
	}
	return &Timers[K]{topo: t, spec: spec, key: key}
}

// Set sets key's timer on clock to fire at due, replacing its earlier one
// on that clock, when the calling handler succeeds. A due time already
// reached fires after this record (StreamTime), or after the batch the
// task is working through (WallClock; in a TestDriver, at its next
// AdvanceWallClockTime). The timer belongs to the running task, whichever
// partition key maps to.
func (tm *Timers[K]) Set(ctx *Context, key K, clock Clock, due time.Time) error {
	kb, err := tm.timerKey(ctx, key, clock)
	if err != nil {
		return err
	}
	ms := due.UnixMilli()
	if ms < 0 {
		return fmt.Errorf("timers %s: due time %v is before the epoch", tm.spec.name, due)
	}
	ws, err := window.SetTimer(ctxTimers{ctx, tm.topo}, window.Timer{Clock: window.Clock(clock), Due: ms, Key: kb})
	if err != nil {
		return fmt.Errorf("timers %s: %w", tm.spec.name, err)
	}
	if err := ctx.stageTimer(tm.topo, ws); err != nil {
		return err
	}
	// Lowered even if the handler fails: a due time too early costs one
	// scan that finds nothing.
	if tt := ctx.tt; ms < tt.timerNext[clock] {
		tt.timerNext[clock] = ms
		tt.streamDue = min(tt.streamDue, tt.timerNext[StreamTime])
	}
	return nil
}

// Cancel removes key's timer on clock, if it has one, when the calling
// handler succeeds.
func (tm *Timers[K]) Cancel(ctx *Context, key K, clock Clock) error {
	kb, err := tm.timerKey(ctx, key, clock)
	if err != nil {
		return err
	}
	ws, err := window.CancelTimer(ctxTimers{ctx, tm.topo}, window.Clock(clock), kb)
	if err != nil {
		return fmt.Errorf("timers %s: %w", tm.spec.name, err)
	}
	return ctx.stageTimer(tm.topo, ws)
}

// timerKey is the time store's timer key of key: the handler's name, a 0
// byte (which no name has), and the encoded key.
func (tm *Timers[K]) timerKey(ctx *Context, key K, clock Clock) ([]byte, error) {
	if clock != StreamTime && clock != WallClock {
		return nil, fmt.Errorf("timers %s: clock %v is neither StreamTime nor WallClock", tm.spec.name, clock)
	}
	kb, err := tm.key.Encode(key)
	if err != nil {
		return nil, fmt.Errorf("timers %s: encode key: %w", tm.spec.name, err)
	}
	return append(append([]byte(tm.spec.name), 0), kb...), nil
}

// stageTimer stages the time store writes of a timer change.
func (c *Context) stageTimer(t *Topology, ws []window.Write) error {
	for _, w := range timerWrites(t.timeStore, ws) {
		if err := c.stage(t, w); err != nil {
			return err
		}
	}
	return nil
}

func timerWrites(s *storeSpec, ws []window.Write) []write {
	out := make([]write, len(ws))
	for i, w := range ws {
		out[i] = write{store: s, key: w.Key, value: w.Value, del: w.Delete}
		if !w.Delete && w.Value == nil {
			out[i].value = []byte{}
		}
	}
	return out
}

// ctxTimers reads the timer index of topo's time store as a handler sees
// it, its staged writes included.
type ctxTimers struct {
	c    *Context
	topo *Topology
}

func (r ctxTimers) TimerDue(clock window.Clock, key []byte) (int64, bool, error) {
	b, found, err := r.c.get(r.topo, r.topo.timeStore, window.TimerIndexKey(clock, key))
	if err != nil || !found {
		return 0, false, err
	}
	due, err := window.ParseTimerDue(b)
	return due, err == nil, err
}

// fireTimers fires clock's timers due at now (ms), and notes when the next
// one is due.
func (p *recordProcessor) fireTimers(ctx context.Context, task int32, clock Clock, now int64) error {
	s := p.topo.timeStore
	lo, hi := window.DueRange(window.Clock(clock), now)
	var due []window.Timer
	var perr error
	err := p.c.be.scan(task, s, lo, hi, func(k, _ []byte) bool {
		t, err := window.ParseTimerKey(k)
		if err != nil {
			perr = err
			return false
		}
		due = append(due, t)
		return true
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("task %d: scan %s timers: %w", task, clock, err)
	}
	for _, t := range due {
		// A handler fired before may have cancelled or moved this one.
		cur, ok, err := p.timerDue(task, Clock(t.Clock), t.Key)
		if err != nil {
			return err
		}
		if !ok || cur != t.Due {
			continue
		}
		name, key, _ := bytes.Cut(t.Key, []byte{0})
		pre := timerWrites(s, window.FireTimer(t))
		at := time.UnixMilli(t.Due).UTC()
		spec := p.topo.timers[string(name)]
		if spec == nil {
			p.log.Warn("dropping a timer whose handler the topology no longer declares", "timers", string(name), "key", key, "clock", clock.String())
			if err := p.apply(task, at, pre); err != nil {
				return fmt.Errorf("task %d: drop timer: %w", task, err)
			}
			continue
		}
		fn := func(c *Context) (string, error) { return spec.fire(c, key, at) }
		if err := p.fire(ctx, task, at, "timer "+spec.name, unit{fn: fn, pre: pre}); err != nil {
			return err
		}
	}
	next, err := p.firstDue(task, clock)
	p.tt.timerNext[clock] = next
	return err
}

// timerDue reads the due time of clock's timer for key in the task's time
// store.
func (p *recordProcessor) timerDue(task int32, clock Clock, key []byte) (int64, bool, error) {
	b, found, err := p.c.be.get(task, p.topo.timeStore, window.TimerIndexKey(window.Clock(clock), key))
	if err != nil || !found {
		return 0, false, err
	}
	due, err := window.ParseTimerDue(b)
	return due, err == nil, err
}

// firstDue returns the due time of clock's earliest timer in the task's
// time store, math.MaxInt64 when it has none.
func (p *recordProcessor) firstDue(task int32, clock Clock) (int64, error) {
	lo, hi := window.DueRange(window.Clock(clock), math.MaxInt64)
	next := int64(math.MaxInt64)
	var perr error
	err := p.c.be.scan(task, p.topo.timeStore, lo, hi, func(k, _ []byte) bool {
		t, err := window.ParseTimerKey(k)
		next, perr = t.Due, err
		return false
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return math.MaxInt64, fmt.Errorf("task %d: read %s timers: %w", task, clock, err)
	}
	return next, nil
}

// scan reads a task's store in key order: its record cache's entries not
// yet written through, over the write buffer and LevelDB.
func (b taskBackend) scan(_ int32, s *storeSpec, start, end []byte, fn func(key, value []byte) bool) error {
	t := b.t
	t.closeMu.RLock()
	defer t.closeMu.RUnlock()
	if t.closed.Load() {
		return fmt.Errorf("task %d: scan store %s: %w", t.id, s.name, ErrTaskClosed)
	}
	var over []state.Entry
	if t.cache != nil {
		over = t.cache.dirtyRange(s.index, start, end)
	}
	return t.stores[s.index].ScanOver(start, end, over, fn)
}

// dirtyRange returns target's entries not yet written through with keys in
// [start, end), sorted by key: the writer's own scan, which walks the
// target's keys rather than every slot (collect's way, for readers).
func (c *recordCache) dirtyRange(target int, start, end []byte) []state.Entry {
	if target >= len(c.index) {
		return nil
	}
	var out []state.Entry
	for k, i := range c.index[target] {
		s := &c.slots[i]
		if s.clean || k < string(start) || (end != nil && k >= string(end)) {
			continue
		}
		e := state.Entry{Key: []byte(k), Deleted: s.del}
		if !s.del {
			e.Value = s.value
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b state.Entry) int { return bytes.Compare(a.Key, b.Key) })
	return out
}

func (d *TestDriver) scan(task int32, s *storeSpec, start, end []byte, fn func(key, value []byte) bool) error {
	m := d.task(task)[s.index]
	var keys []string
	for k := range m {
		if k >= string(start) && (end == nil || k < string(end)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !fn([]byte(k), m[k]) {
			break
		}
	}
	return nil
}
