package window

import (
	"encoding/binary"
	"fmt"
)

// Store keys of a stream-stream join. A side's records are keyed
// (key, timestamp, seq), so one key's records in a time range are one range
// scan, by timestamp then seq, and two records of one key and timestamp
// are both kept. Pending unmatched records are keyed (timestamp, side, key,
// seq) with Right before Left, the order in which Kafka Streams scans them;
// the records of one timestamp, side and key share a prefix
// (JoinTimePrefix), which is how a match unpends them all.

// JoinRecordKey is the store key of a side's record of key at ts.
func JoinRecordKey(key []byte, ts, seq int64) []byte {
	b := appendKey(make([]byte, 0, len(key)+2+2*timeLen), key)
	return appendTime(appendTime(b, ts), seq)
}

// ParseJoinRecordKey decodes a JoinRecordKey.
func ParseJoinRecordKey(b []byte) (key []byte, ts, seq int64, err error) {
	key, rest, err := readKey(b)
	if err == nil {
		ts, rest, err = readTime(rest)
	}
	if err == nil {
		seq, rest, err = readTime(rest)
	}
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d trailing bytes", len(rest))
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("join record key %x: %w", b, err)
	}
	return key, ts, seq, nil
}

// JoinRecordRange returns the range [lo, hi) of the keys of key's records
// with timestamps in [from, to]. It is empty when from > to.
func JoinRecordRange(key []byte, from, to int64) (lo, hi []byte) {
	return WindowRange(key, from, to)
}

// sideByte orders Right before Left, as Kafka Streams' pending store does.
func sideByte(s Side) byte {
	if s == Left {
		return 1
	}
	return 0
}

// JoinTimePrefix is the prefix of the time-first keys of side's records
// of key at ts.
func JoinTimePrefix(ts int64, side Side, key []byte) []byte {
	b := append(appendTime(make([]byte, 0, len(key)+3+2*timeLen), ts), sideByte(side))
	return appendKey(b, key)
}

// JoinTimeKey is the time-first key of side's record of key at ts: by
// timestamp, side (Right first), key, then seq.
func JoinTimeKey(ts int64, side Side, key []byte, seq int64) []byte {
	return appendTime(JoinTimePrefix(ts, side, key), seq)
}

// ParseJoinTimeKey decodes a JoinTimeKey.
func ParseJoinTimeKey(b []byte) (ts int64, side Side, key []byte, seq int64, err error) {
	ts, rest, err := readTime(b)
	if err == nil && len(rest) < 1 {
		err = errTruncated
	}
	if err == nil {
		side = Right
		switch rest[0] {
		case 1:
			side = Left
		case 0:
		default:
			err = fmt.Errorf("bad side byte 0x%02x", rest[0])
		}
	}
	if err == nil {
		key, rest, err = readKey(rest[1:])
	}
	if err == nil {
		seq, rest, err = readTime(rest)
	}
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d trailing bytes", len(rest))
	}
	if err != nil {
		return 0, 0, nil, 0, fmt.Errorf("join time key %x: %w", b, err)
	}
	return ts, side, key, seq, nil
}

// JoinTimeRange returns the range [lo, hi) of the time-first keys with
// timestamps in [from, to]; hi is nil for no bound.
func JoinTimeRange(from, to int64) (lo, hi []byte) {
	return appendTime(nil, from), after(nil, to)
}

// PrefixEnd returns the exclusive upper bound of the keys that start with
// p: nil (no bound) when p is all 0xFF bytes.
func PrefixEnd(p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] < 0xFF {
			out := append([]byte(nil), p[:i+1]...)
			out[i]++
			return out
		}
	}
	return nil
}

// EncodeJoinState encodes a join's progress for its store.
func EncodeJoinState(s JoinState) []byte {
	b := make([]byte, 0, 32)
	for _, v := range []int64{s.StreamTime, s.MinPending, s.StoreTime[Left], s.StoreTime[Right]} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// DecodeJoinState decodes EncodeJoinState's bytes.
func DecodeJoinState(b []byte) (JoinState, error) {
	if len(b) != 32 {
		return JoinState{}, fmt.Errorf("join progress: %d bytes, want 32", len(b))
	}
	u := func(i int) int64 { return int64(binary.BigEndian.Uint64(b[8*i:])) }
	return JoinState{StreamTime: u(0), MinPending: u(1), StoreTime: [2]int64{u(2), u(3)}}, nil
}
