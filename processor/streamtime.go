package processor

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/window"
)

// Clock is the time a punctuator or a durable timer follows.
type Clock uint8

const (
	// StreamTime is the task's stream time: the largest record timestamp
	// it has seen. It moves only with records.
	StreamTime = Clock(window.StreamClock)
	// WallClock is the instance's clock. It moves without records.
	WallClock = Clock(window.WallClock)
)

func (c Clock) String() string { return window.Clock(c).String() }

// StageTimestamp is the stage of a record without a valid timestamp: its
// input's extractor failed, or the timestamp is negative.
const StageTimestamp = "timestamp"

// TimestampExtractor returns the timestamp of an input record: the time its
// handler sees (Context.Timestamp), its outputs are stamped with, and its
// task's stream time follows. An error, or a time before the epoch, makes
// the record poison (stage StageTimestamp): the error policy decides.
type TimestampExtractor func(r *kgo.Record) (time.Time, error)

// InputOption configures an input.
type InputOption func(*inputSpec)

// WithTimestamp makes the input take its records' timestamps from extract
// instead of the records' own (the producer's or the broker's time).
func WithTimestamp(extract TimestampExtractor) InputOption {
	return func(s *inputSpec) { s.extract = extract }
}

// timestamp returns r's timestamp as the input's extractor says.
func (in *inputSpec) timestamp(r *kgo.Record) (time.Time, error) {
	if in.extract == nil && r.Timestamp.UnixMilli() >= 0 {
		return r.Timestamp, nil // the usual case, without the checks below
	}
	return in.extracted(r)
}

func (in *inputSpec) extracted(r *kgo.Record) (time.Time, error) {
	ts := r.Timestamp
	if in.extract != nil {
		var err error
		if ts, err = in.extract(r); err != nil {
			return ts, fmt.Errorf("extract timestamp: %w", err)
		}
	}
	if ts.UnixMilli() < 0 {
		return ts, fmt.Errorf("timestamp %d ms is before the epoch", ts.UnixMilli())
	}
	return ts, nil
}

// timeStoreName is the store that holds a task's stream time and durable
// timers, declared by the first use of either (useTime).
const timeStoreName = "__time"

// streamTimeKey is the time store's key of the stream time; the timers'
// keys begin with other bytes (package window's layout).
var streamTimeKey = []byte{'s'}

// useTime declares the time store, once: a regular store of the topology,
// so that the task's stream time and timers are changelogged, restored and
// tailed by standbys with its other stores, and written in its commits.
func (t *Topology) useTime() *storeSpec {
	if t.timeStore == nil {
		t.timeStore = NewStore(t, timeStoreName, codec.Bytes(), codec.Bytes()).spec
	}
	return t.timeStore
}

// KeepStreamTime makes the tasks of t keep their stream time with their
// state, so that a task continues from it on any instance it moves to. A
// punctuator on stream time and a timer handler do so without it.
func KeepStreamTime(t *Topology) { t.useTime() }

// StreamTime returns the task's stream time: the largest timestamp among
// the records it has handled (this one included), never going back. It
// is the zero Time before the task's first record. With the time store
// (KeepStreamTime, a stream-time punctuator, a timer handler) it moves
// with the task to any instance; without, a new owner starts from its
// first record.
func (c *Context) StreamTime() time.Time {
	st := c.tt.st.Time()
	if st == window.NoTimestamp {
		return time.Time{}
	}
	return time.UnixMilli(st).UTC()
}

// taskTime is a task's time: its stream time and when its punctuators and
// timers are due next. It is the task goroutine's, except pub.
type taskTime struct {
	st window.StreamTime
	// pub is st for readers on other goroutines (metrics, status).
	pub atomic.Int64
	// loaded says the persisted stream time and the timers' next due
	// times were read (loadTime); dirty that st moved since it was last
	// staged for the time store.
	loaded, dirty bool
	// timerNext is, per clock, no later than the due time of its earliest
	// timer (math.MaxInt64: none); punctNext, per punctuator, the time it
	// fires next.
	timerNext [3]int64
	punctNext []int64
	// streamDue is the earliest stream time at which anything is due.
	streamDue int64
}

func newTaskTime() *taskTime {
	tt := &taskTime{streamDue: math.MaxInt64}
	tt.pub.Store(window.NoTimestamp)
	for i := range tt.timerNext {
		tt.timerNext[i] = math.MaxInt64
	}
	return tt
}

// observe takes the timestamp of a decoded record into stream time.
func (tt *taskTime) observe(ms int64) {
	if ms > tt.st.Time() {
		tt.pub.Store(tt.st.Observe(ms))
		tt.dirty = true
	}
}

// wallDue returns the earliest wall time at which anything is due.
func (tt *taskTime) wallDue(topo *Topology) int64 {
	due := tt.timerNext[WallClock]
	for i, p := range topo.punctuators {
		if p.clock == WallClock {
			due = min(due, tt.punctNext[i])
		}
	}
	return due
}

// setStreamDue recomputes streamDue.
func (tt *taskTime) setStreamDue(topo *Topology) {
	due := tt.timerNext[StreamTime]
	for i, p := range topo.punctuators {
		if p.clock == StreamTime {
			due = min(due, tt.punctNext[i])
		}
	}
	tt.streamDue = due
}

// loadTime reads the task's persisted stream time and the due times of its
// earliest timers, and starts its punctuators' schedules at wall time now,
// once per task.
func (p *recordProcessor) loadTime(task int32) error {
	tt := p.tt
	if tt.loaded {
		return nil
	}
	now := p.wallNow().UnixMilli()
	tt.punctNext = make([]int64, len(p.topo.punctuators))
	for i, ps := range p.topo.punctuators {
		if ps.clock == WallClock {
			tt.punctNext[i] = now + ps.interval
		} // stream time: aligned to 0, so the first record punctuates
	}
	if s := p.topo.timeStore; s != nil {
		b, found, err := p.c.be.get(task, s, streamTimeKey)
		if err != nil {
			return fmt.Errorf("task %d: read stream time: %w", task, err)
		}
		if found {
			if len(b) != 8 {
				return fmt.Errorf("task %d: stream time %x: want 8 bytes", task, b)
			}
			tt.st = window.RestoreStreamTime(int64(binary.BigEndian.Uint64(b)))
			tt.pub.Store(tt.st.Time())
		}
		for _, c := range []Clock{StreamTime, WallClock} {
			if tt.timerNext[c], err = p.firstDue(task, c); err != nil {
				return err
			}
		}
	}
	tt.setStreamDue(p.topo)
	tt.loaded = true
	return nil
}

// streamTimeWrite is the staged write of the task's stream time.
func (p *recordProcessor) streamTimeWrite() write {
	mark := len(p.c.arena)
	p.c.arena = binary.BigEndian.AppendUint64(p.c.arena, uint64(p.tt.st.Time()))
	return write{store: p.topo.timeStore, key: streamTimeKey, value: p.c.arena[mark:len(p.c.arena):len(p.c.arena)]}
}

// keepsTime reports whether the task's stream time moved and is to be
// staged with the next writes.
func (p *recordProcessor) keepsTime() bool { return p.tt.dirty && p.topo.timeStore != nil }
