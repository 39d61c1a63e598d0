package window

import (
	"errors"
	"fmt"
)

// MaxDuration bounds every size, advance, time difference, gap, grace and
// retention: about 8,900 years in milliseconds. With durations and
// timestamps under their bounds no window arithmetic overflows.
const MaxDuration int64 = 1 << 48

// MaxTimestamp bounds the record timestamps the arithmetic accepts; a real
// epoch-millisecond clock is far below it.
const MaxTimestamp int64 = 1 << 60

// ErrTimestamp is the error of an aggregation given a record timestamp
// outside [0, MaxTimestamp]. Kafka Streams drops records with a negative
// timestamp before any processor sees them; the caller does the same.
var ErrTimestamp = errors.New("record timestamp outside [0, MaxTimestamp]")

func checkTimestamp(ts int64) error {
	if ts < 0 || ts > MaxTimestamp {
		return fmt.Errorf("timestamp %d: %w", ts, ErrTimestamp)
	}
	return nil
}

// minSegmentInterval is the smallest segment interval, as in Kafka Streams.
const minSegmentInterval int64 = 60_000

// FieldError is a window definition that cannot be used, with the setting at
// fault named as the built-ins spell it after "processor.window.", e.g.
// "advance.ms".
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// TimeWindows are fixed-size windows aligned to the epoch, Kafka Streams'
// TimeWindows: tumbling when Advance equals Size, hopping when it is
// smaller. A window is [start, start+Size), end exclusive, and every start is
// a multiple of Advance.
type TimeWindows struct {
	// Size is the window length in milliseconds.
	Size int64
	// Advance is the distance between consecutive window starts.
	Advance int64
	// Grace is how long after a window's end it still accepts records.
	Grace int64
}

// Tumbling returns back-to-back windows of size ms with no grace.
func Tumbling(size int64) TimeWindows { return TimeWindows{Size: size, Advance: size} }

// Hopping returns windows of size ms starting every advance ms, with no
// grace.
func Hopping(size, advance int64) TimeWindows {
	return TimeWindows{Size: size, Advance: advance}
}

// WithGrace returns w with a grace period of grace ms.
func (w TimeWindows) WithGrace(grace int64) TimeWindows { w.Grace = grace; return w }

// Validate reports every fault of w at once, each a *FieldError.
func (w TimeWindows) Validate() error {
	sizeErr := checkPositive("size.ms", w.Size)
	var advErr error
	// Advance is checked against a valid size only: a tumbling window's
	// advance is its size, and one fault is reported once.
	if sizeErr == nil && (w.Advance <= 0 || w.Advance > w.Size) {
		advErr = fieldErr("advance.ms", "must be > 0 and <= size.ms (%d), got %d", w.Size, w.Advance)
	}
	return errors.Join(sizeErr, advErr, checkNonNegative("grace.ms", w.Grace))
}

// MinRetention is the shortest retention w's store may have: Size + Grace,
// as Kafka Streams requires. It is also Kafka Streams' default.
func (w TimeWindows) MinRetention() int64 { return w.Size + w.Grace }

// SlidingWindows are Kafka Streams' SlidingWindows: a window is
// [start, start+TimeDifference], both ends inclusive, and only windows that
// begin or end at a record (or one ms after one) exist. Two records fall in
// a common window when their timestamps differ by at most TimeDifference.
type SlidingWindows struct {
	// TimeDifference is the largest distance, in milliseconds, between two
	// records of one window.
	TimeDifference int64
	// Grace is how long after a window's end it still accepts records.
	Grace int64
}

// Sliding returns sliding windows of timeDifference ms with no grace.
func Sliding(timeDifference int64) SlidingWindows {
	return SlidingWindows{TimeDifference: timeDifference}
}

// WithGrace returns w with a grace period of grace ms.
func (w SlidingWindows) WithGrace(grace int64) SlidingWindows { w.Grace = grace; return w }

// Validate reports every fault of w at once, each a *FieldError.
// TimeDifference must be positive: Kafka Streams accepts 0 when the windows
// are defined and then fails on the first record, since a window's end must
// lie after its start.
func (w SlidingWindows) Validate() error {
	return errors.Join(checkPositive("size.ms", w.TimeDifference), checkNonNegative("grace.ms", w.Grace))
}

// MinRetention is the shortest retention w's store may have:
// 2*TimeDifference + Grace, as Kafka Streams requires (the aggregation reads
// windows up to two time differences back). It is also Kafka Streams'
// default.
func (w SlidingWindows) MinRetention() int64 { return 2*w.TimeDifference + w.Grace }

// SessionWindows are Kafka Streams' SessionWindows: a session of a key is
// [first, last] record timestamp, both inclusive, and it grows while records
// arrive no more than Gap ms apart. A record within Gap of several sessions
// merges them into one.
type SessionWindows struct {
	// Gap is the inactivity gap in milliseconds.
	Gap int64
	// Grace is how long after a session's end plus Gap it still accepts
	// records.
	Grace int64
}

// Session returns session windows with an inactivity gap of gap ms and no
// grace.
func Session(gap int64) SessionWindows { return SessionWindows{Gap: gap} }

// WithGrace returns w with a grace period of grace ms.
func (w SessionWindows) WithGrace(grace int64) SessionWindows { w.Grace = grace; return w }

// Validate reports every fault of w at once, each a *FieldError.
func (w SessionWindows) Validate() error {
	return errors.Join(checkPositive("gap.ms", w.Gap), checkNonNegative("grace.ms", w.Grace))
}

// MinRetention is the shortest retention w's store may have: Gap + Grace, as
// Kafka Streams requires. It is also Kafka Streams' default.
func (w SessionWindows) MinRetention() int64 { return w.Gap + w.Grace }

// ValidateRetention checks that a store keeping windows for retention ms
// holds every window that can still change: retention >= minRetention (a
// definition's MinRetention).
func ValidateRetention(retention, minRetention int64) error {
	if err := checkPositive("retention.ms", retention); err != nil {
		return err
	}
	if retention < minRetention {
		return fieldErr("retention.ms", "must be >= %d (the window length plus grace), got %d", minRetention, retention)
	}
	return nil
}

func checkPositive(field string, v int64) error {
	if v <= 0 || v > MaxDuration {
		return fieldErr(field, "must be > 0 and <= %d ms, got %d", MaxDuration, v)
	}
	return nil
}

func checkNonNegative(field string, v int64) error {
	if v < 0 || v > MaxDuration {
		return fieldErr(field, "must be >= 0 and <= %d ms, got %d", MaxDuration, v)
	}
	return nil
}
