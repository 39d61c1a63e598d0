package window

// NoTimestamp is the stream time of a task that has seen no record, and the
// last close time of an aggregation that has emitted no final result: -1,
// as Kafka's ConsumerRecord.NO_TIMESTAMP.
const NoTimestamp int64 = -1

// StreamTime is a task's stream time as Kafka Streams defines it: the
// largest record timestamp seen, never going back. The zero value has seen
// nothing and reads NoTimestamp.
type StreamTime struct {
	max  int64
	seen bool
}

// RestoreStreamTime returns the tracker of a task whose stream time was t
// (as persisted with its state). NoTimestamp restores an empty tracker.
func RestoreStreamTime(t int64) StreamTime {
	if t == NoTimestamp {
		return StreamTime{}
	}
	return StreamTime{max: t, seen: true}
}

// Observe takes a record timestamp into account and returns the stream time
// after it. An older timestamp leaves stream time where it is.
func (s *StreamTime) Observe(ts int64) int64 {
	if !s.seen || ts > s.max {
		s.max, s.seen = ts, true
	}
	return s.max
}

// Time is the stream time: the largest timestamp observed, or NoTimestamp.
func (s StreamTime) Time() int64 {
	if !s.seen {
		return NoTimestamp
	}
	return s.max
}
