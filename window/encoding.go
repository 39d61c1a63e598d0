package window

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Store keys. A user key is escaped so that it is prefix-free and keeps its
// byte order: every 0x00 becomes 0x00 0xFF and the key ends with 0x00 0x01.
// Then no escaped key is a prefix of another, and escaped keys compare as
// the keys do. Times are 8 bytes big-endian with the sign bit flipped, so
// byte order is time order. Together:
//
//   - all windows of one key lie in one contiguous range, whatever the
//     lengths of other keys ("a" and "a\x00b" do not interleave);
//   - within a key, windows sort by time, so a time range of one key is one
//     range scan (WindowRange, SessionRange);
//   - keys sort in their own byte order, so a key range [from, to) of every
//     key's windows is the range [EncodeKey(from), EncodeKey(to)).
//
// Length-prefixing would also separate keys but would sort them by length
// first, breaking key-range scans; escaping costs one byte per 0x00 in the
// key plus two.
//
// The time-first layouts (WindowTimeKey, SessionTimeKey) order windows of
// every key by time, then key (sessions by end, then start, then key): the
// order in which final results are emitted.

const timeLen = 8

// maxTime is the largest encodable time.
const maxTime int64 = math.MaxInt64

// EncodeKey returns key escaped: the prefix of every window and session
// key of key.
func EncodeKey(key []byte) []byte { return appendKey(make([]byte, 0, len(key)+2), key) }

func appendKey(dst, key []byte) []byte {
	for _, c := range key {
		if c == 0 {
			dst = append(dst, 0, 0xFF)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, 0, 1)
}

var errTruncated = errors.New("truncated")

// readKey decodes an escaped key at the start of b and returns it with the
// bytes after it.
func readKey(b []byte) (key, rest []byte, err error) {
	key = make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			key = append(key, b[i])
			continue
		}
		if i+1 >= len(b) {
			return nil, nil, errTruncated
		}
		switch b[i+1] {
		case 0xFF:
			key = append(key, 0)
			i++
		case 1:
			return key, b[i+2:], nil
		default:
			return nil, nil, fmt.Errorf("bad escape 0x00 0x%02x at %d", b[i+1], i)
		}
	}
	return nil, nil, errTruncated
}

func appendTime(dst []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(t)^(1<<63))
}

func readTime(b []byte) (int64, []byte, error) {
	if len(b) < timeLen {
		return 0, nil, errTruncated
	}
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)), b[timeLen:], nil
}

// after returns the exclusive upper bound of the keys prefix|t' with
// t' <= t: prefix|t+1, or past every key that starts with prefix when t is
// the largest time (nil when prefix is empty: no bound).
func after(prefix []byte, t int64) []byte {
	if t < math.MaxInt64 {
		return appendTime(append([]byte(nil), prefix...), t+1)
	}
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] < 0xFF {
			out := append([]byte(nil), prefix[:i+1]...)
			out[i]++
			return out
		}
	}
	return nil
}

// WindowKey is the store key of key's window starting at start.
func WindowKey(key []byte, start int64) []byte {
	return appendTime(appendKey(make([]byte, 0, len(key)+2+timeLen), key), start)
}

// ParseWindowKey decodes a WindowKey.
func ParseWindowKey(b []byte) (key []byte, start int64, err error) {
	key, rest, err := readKey(b)
	if err == nil {
		start, rest, err = readTime(rest)
	}
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d trailing bytes", len(rest))
	}
	if err != nil {
		return nil, 0, fmt.Errorf("window key %x: %w", b, err)
	}
	return key, start, nil
}

// WindowRange returns the range [lo, hi) of the keys of key's windows that
// start in [from, to]. It is empty when from > to.
func WindowRange(key []byte, from, to int64) (lo, hi []byte) {
	p := EncodeKey(key)
	return appendTime(p[:len(p):len(p)], from), after(p, to)
}

// WindowTimeKey is the time-first index key of key's window starting at
// start: windows of every key by start, then key.
func WindowTimeKey(start int64, key []byte) []byte {
	return appendKey(appendTime(make([]byte, 0, len(key)+2+timeLen), start), key)
}

// ParseWindowTimeKey decodes a WindowTimeKey.
func ParseWindowTimeKey(b []byte) (start int64, key []byte, err error) {
	start, rest, err := readTime(b)
	if err == nil {
		key, rest, err = readKey(rest)
	}
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d trailing bytes", len(rest))
	}
	if err != nil {
		return 0, nil, fmt.Errorf("window time key %x: %w", b, err)
	}
	return start, key, nil
}

// WindowTimeRange returns the range [lo, hi) of the time-first keys of
// every key's windows starting in [from, to]; hi is nil for no bound.
func WindowTimeRange(from, to int64) (lo, hi []byte) {
	return appendTime(nil, from), after(nil, to)
}

// SessionKey is the store key of key's session s: key, then End, then
// Start. End comes first because both a record's merge candidates (the
// sessions ending at or after ts-Gap) and the final results (sessions by
// end) are ranges of ends; sessions of a key never overlap, so they sort by
// start too.
func SessionKey(key []byte, s Window) []byte {
	b := appendKey(make([]byte, 0, len(key)+2+2*timeLen), key)
	return appendTime(appendTime(b, s.End), s.Start)
}

// ParseSessionKey decodes a SessionKey.
func ParseSessionKey(b []byte) (key []byte, s Window, err error) {
	key, rest, err := readKey(b)
	if err == nil {
		s.End, rest, err = readTime(rest)
	}
	if err == nil {
		s.Start, rest, err = readTime(rest)
	}
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d trailing bytes", len(rest))
	}
	if err != nil {
		return nil, Window{}, fmt.Errorf("session key %x: %w", b, err)
	}
	return key, s, nil
}

// SessionRange returns the range [lo, hi) of the keys of key's sessions
// that end in [from, to].
func SessionRange(key []byte, from, to int64) (lo, hi []byte) {
	p := EncodeKey(key)
	return appendTime(p[:len(p):len(p)], from), after(p, to)
}

// SessionTimeKey is the time-first index key of key's session s: End,
// Start, key; sessions of every key by end, then start, then key, the order
// of Kafka Streams' time-ordered session store.
func SessionTimeKey(s Window, key []byte) []byte {
	b := appendTime(appendTime(make([]byte, 0, len(key)+2+2*timeLen), s.End), s.Start)
	return appendKey(b, key)
}

// ParseSessionTimeKey decodes a SessionTimeKey.
func ParseSessionTimeKey(b []byte) (s Window, key []byte, err error) {
	var rest []byte
	s.End, rest, err = readTime(b)
	if err == nil {
		s.Start, rest, err = readTime(rest)
	}
	if err == nil {
		key, rest, err = readKey(rest)
	}
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d trailing bytes", len(rest))
	}
	if err != nil {
		return Window{}, nil, fmt.Errorf("session time key %x: %w", b, err)
	}
	return s, key, nil
}

// SessionTimeRange returns the range [lo, hi) of the time-first keys of
// every key's sessions ending in [from, to]; hi is nil for no bound.
func SessionTimeRange(from, to int64) (lo, hi []byte) {
	return appendTime(nil, from), after(nil, to)
}
