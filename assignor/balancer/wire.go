package balancer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/rackstream/rackstream/tags"
)

// Wire versions. Both formats (Subscription and AssignmentData) share them.
const (
	// Version1 is the first format.
	Version1 uint8 = 1
	// Version2 adds each member's build string.
	Version2 uint8 = 2
	// Version3 adds the assignment's probe triggers: the member's replica
	// tasks whose catch-up lets the plan progress. The subscription's
	// layout is version 2's.
	Version3 uint8 = 3
	// Version4 adds to the placement the assignment settings the leader
	// planned with (assignor.Settings). The subscription's layout is
	// version 2's.
	Version4 uint8 = 4
	// Version5 adds to the subscription the byte rates of the member's
	// active tasks, and to the placement the plan's expected cross-zone
	// traffic.
	Version5 uint8 = 5
	// LatestVersion is the newest version this build writes and reads.
	LatestVersion = Version5
	// MinVersion is the oldest version this build reads.
	MinVersion = Version1
	// maxFutureVersion is the highest version byte taken for a newer
	// release's data: anything above is garbage, not the future.
	maxFutureVersion = 32
)

// Bounds the decoders enforce, so that hostile lengths cannot make them
// allocate or loop beyond what the input could hold.
const (
	maxIDBytes       = 255
	maxEndpointBytes = 1024
	maxBuildBytes    = 255
	maxTopicBytes    = 249 // Kafka's topic name limit
	maxCapacity      = 1 << 16
	// maxTask bounds task ids (partition slots): no topic has a million
	// partitions.
	maxTask = 1 << 20
	// maxQualityBytes bounds the quality document.
	maxQualityBytes = 64 << 20
	// maxRate bounds a byte rate: a petabyte per second.
	maxRate = 1 << 50
)

// ErrDecode is wrapped by every error the decoders return.
var ErrDecode = errors.New("decode rackstream wire data")

// enc appends the primitive encodings. Integers are (u)varints as in
// encoding/binary; strings and byte fields are a uvarint length followed by
// the bytes; a task list is a uvarint count followed by the ascending tasks
// as gaps: the first task, then each task minus its predecessor minus one
// (so that a strictly ascending list is the only one that can be written).
type enc struct{ b []byte }

func (e *enc) u8(v uint8)       { e.b = append(e.b, v) }
func (e *enc) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) bytes(p []byte)   { e.uvarint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *enc) u32(v uint32)     { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *enc) tags(s tags.Set)  { e.b, _ = s.AppendBinary(e.b) }

func (e *enc) tasks(ts []int32) {
	e.uvarint(uint64(len(ts)))
	prev := int32(-1)
	for _, t := range ts {
		e.uvarint(uint64(t - prev - 1))
		prev = t
	}
}

// dec reads what enc writes. The first error sticks: later reads return zero
// values, and err names the field and byte offset where decoding failed.
type dec struct {
	b   []byte
	off int
	err error
	msg string // "subscription" or "assignment", for errors
}

func (d *dec) fail(field, format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s field %s at byte %d: %s", ErrDecode, d.msg, field, d.off, fmt.Sprintf(format, args...))
	}
}

func (d *dec) remaining() int { return len(d.b) - d.off }

func (d *dec) u8(field string) uint8 {
	if d.err != nil {
		return 0
	}
	if d.remaining() < 1 {
		d.fail(field, "truncated")
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *dec) u32(field string) uint32 {
	if d.err != nil {
		return 0
	}
	if d.remaining() < 4 {
		d.fail(field, "truncated")
		return 0
	}
	v := binary.BigEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *dec) uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 || (n > 1 && d.b[d.off+n-1] == 0) {
		d.fail(field, "truncated, overlong or non-minimal varint")
		return 0
	}
	d.off += n
	return v
}

func (d *dec) varint(field string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 || (n > 1 && d.b[d.off+n-1] == 0) {
		d.fail(field, "truncated, overlong or non-minimal varint")
		return 0
	}
	d.off += n
	return v
}

// uvarintIn reads a uvarint that must be in [lo, hi].
func (d *dec) uvarintIn(field string, lo, hi uint64) uint64 {
	start := d.off
	v := d.uvarint(field)
	if d.err == nil && (v < lo || v > hi) {
		d.off = start
		d.fail(field, "value %d outside [%d, %d]", v, lo, hi)
		return 0
	}
	return v
}

// int32v reads a varint that must fit in [lo, hi].
func (d *dec) int32v(field string, lo, hi int64) int32 {
	start := d.off
	v := d.varint(field)
	if d.err == nil && (v < lo || v > hi) {
		d.off = start
		d.fail(field, "value %d outside [%d, %d]", v, lo, hi)
		return 0
	}
	return int32(v)
}

// count reads a uvarint that must be at most max and, since every element
// takes at least minBytes, fit in what remains.
func (d *dec) count(field string, max, minBytes int) int {
	start := d.off
	v := d.uvarint(field)
	if d.err != nil {
		return 0
	}
	if v > uint64(max) || v*uint64(minBytes) > uint64(d.remaining()) {
		d.off = start
		d.fail(field, "count %d exceeds the limit %d or the %d bytes left", v, max, d.remaining())
		return 0
	}
	return int(v)
}

func (d *dec) raw(field string, max int) []byte {
	n := d.count(field, max, 1)
	if d.err != nil {
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *dec) str(field string, max int, nonEmpty bool) string {
	start := d.off
	p := d.raw(field, max)
	if d.err != nil {
		return ""
	}
	if nonEmpty && len(p) == 0 {
		d.off = start
		d.fail(field, "empty")
		return ""
	}
	if !utf8.Valid(p) {
		d.off = start
		d.fail(field, "not valid UTF-8")
		return ""
	}
	return string(p)
}

func (d *dec) tags(field string) tags.Set {
	if d.err != nil {
		return tags.Set{}
	}
	s, rest, err := tags.Decode(d.b[d.off:])
	if err != nil {
		d.fail(field, "%v", err)
		return tags.Set{}
	}
	d.off = len(d.b) - len(rest)
	return s
}

// tasks reads a task list: strictly ascending, each below maxTask.
func (d *dec) tasks(field string) []int32 {
	n := d.count(field, maxTask, 1)
	if d.err != nil || n == 0 {
		return nil
	}
	out := make([]int32, n)
	next := uint64(0)
	for i := range out {
		gap := d.uvarint(field)
		if d.err != nil {
			return nil
		}
		if gap > maxTask || next+gap >= maxTask {
			d.fail(field, "task id beyond %d", maxTask)
			return nil
		}
		t := next + gap
		out[i] = int32(t)
		next = t + 1
	}
	return out
}

// end fails on trailing bytes: every version's layout is exact.
func (d *dec) end() {
	if d.err == nil && d.remaining() != 0 {
		d.fail("end", "%d trailing bytes", d.remaining())
	}
}

// offsetv reads a non-negative int64 varint.
func (d *dec) offsetv(field string) int64 {
	start := d.off
	v := d.varint(field)
	if d.err == nil && (v < 0 || v == math.MaxInt64) {
		d.off = start
		d.fail(field, "offset %d out of range", v)
		return 0
	}
	return v
}
