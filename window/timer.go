package window

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Clock is the time a durable timer waits for.
type Clock uint8

const (
	// StreamClock timers fire when the task's stream time reaches Due.
	StreamClock Clock = 1
	// WallClock timers fire when the wall clock reaches Due.
	WallClock Clock = 2
)

func (c Clock) String() string {
	switch c {
	case StreamClock:
		return "stream"
	case WallClock:
		return "wall"
	}
	return fmt.Sprintf("clock(%d)", uint8(c))
}

// Timer is a durable per-key timer: at most one per clock and key, so
// setting a timer replaces the key's earlier one on that clock.
type Timer struct {
	Clock Clock
	Due   int64
	Key   []byte
}

// A timer store holds two kinds of entries, under two prefixes:
//
//   - the queue: queuePrefix, clock, due, key -> empty. Each clock's timers
//     are one contiguous range in due order, so the due timers at time now
//     are one range scan from the start (DueRange). Clock comes before due
//     because stream time and wall-clock time advance separately.
//   - the index: indexPrefix, clock, key -> due. It finds a key's queued
//     timer to replace or cancel it.
const (
	queuePrefix byte = 'q'
	indexPrefix byte = 'i'
)

// TimerKey is the queue key of t.
func TimerKey(t Timer) []byte {
	b := make([]byte, 0, 2+timeLen+len(t.Key))
	b = appendTime(append(b, queuePrefix, byte(t.Clock)), t.Due)
	return append(b, t.Key...)
}

// ParseTimerKey decodes a TimerKey.
func ParseTimerKey(b []byte) (Timer, error) {
	if len(b) < 2+timeLen || b[0] != queuePrefix || (Clock(b[1]) != StreamClock && Clock(b[1]) != WallClock) {
		return Timer{}, fmt.Errorf("timer key %x: not a queue key", b)
	}
	due, rest, _ := readTime(b[2:])
	return Timer{Clock: Clock(b[1]), Due: due, Key: bytes.Clone(rest)}, nil
}

// TimerIndexKey is the index key of clock c's timer for key.
func TimerIndexKey(c Clock, key []byte) []byte {
	return append([]byte{indexPrefix, byte(c)}, key...)
}

// DueRange returns the range [lo, hi) of the queue keys of clock c's timers
// due at time now (Due <= now), in due order. A wall-clock timer that came
// due while its task had no owner is in this range when the task resumes,
// and fires then, once.
func DueRange(c Clock, now int64) (lo, hi []byte) {
	p := []byte{queuePrefix, byte(c)}
	return p, after(p, now)
}

// DueAt reports whether t is due at stream time st and wall time wall.
func (t Timer) DueAt(st, wall int64) bool {
	if t.Clock == WallClock {
		return t.Due <= wall
	}
	return t.Due <= st
}

// Write is one write to a timer store.
type Write struct {
	Key, Value []byte
	Delete     bool
}

// TimerReader reads a timer store's index.
type TimerReader interface {
	// TimerDue returns the Due of clock c's timer for key, if one is set.
	TimerDue(c Clock, key []byte) (due int64, ok bool, err error)
}

// SetTimer returns the writes that set t, replacing the key's earlier timer
// on t's clock; none when that timer is already due at t.Due.
func SetTimer(r TimerReader, t Timer) ([]Write, error) {
	old, ok, err := r.TimerDue(t.Clock, t.Key)
	if err != nil {
		return nil, fmt.Errorf("set %s timer of %q: %w", t.Clock, t.Key, err)
	}
	if ok && old == t.Due {
		return nil, nil
	}
	var ws []Write
	if ok {
		ws = append(ws, Write{Key: TimerKey(Timer{t.Clock, old, t.Key}), Delete: true})
	}
	return append(ws,
		Write{Key: TimerKey(t), Value: []byte{}},
		Write{Key: TimerIndexKey(t.Clock, t.Key), Value: appendTime(nil, t.Due)},
	), nil
}

// CancelTimer returns the writes that cancel clock c's timer for key; none
// when it has none.
func CancelTimer(r TimerReader, c Clock, key []byte) ([]Write, error) {
	old, ok, err := r.TimerDue(c, key)
	if err != nil {
		return nil, fmt.Errorf("cancel %s timer of %q: %w", c, key, err)
	}
	if !ok {
		return nil, nil
	}
	return FireTimer(Timer{Clock: c, Due: old, Key: key}), nil
}

// FireTimer returns the writes that remove a due timer t. The caller
// applies them before it runs t's handler, in the same commit as the
// handler's writes, so a handler may set the key's next timer and a timer
// fires once per commit (again only if that commit is lost).
func FireTimer(t Timer) []Write {
	return []Write{
		{Key: TimerKey(t), Delete: true},
		{Key: TimerIndexKey(t.Clock, t.Key), Delete: true},
	}
}

// ParseTimerDue decodes the value of an index entry.
func ParseTimerDue(v []byte) (int64, error) {
	if len(v) != timeLen {
		return 0, fmt.Errorf("timer index value %x: want %d bytes", v, timeLen)
	}
	return int64(binary.BigEndian.Uint64(v) ^ (1 << 63)), nil
}
