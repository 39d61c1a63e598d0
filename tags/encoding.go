package tags

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Byte limits of the encoding: a character is at most utf8.UTFMax bytes.
const (
	maxKeyBytes   = MaxKeyLen * utf8.UTFMax   // 80
	maxValueBytes = MaxValueLen * utf8.UTFMax // 120
)

// ErrDecode is wrapped by every error [Decode] returns.
var ErrDecode = errors.New("decode client tags")

// AppendBinary appends the canonical encoding of s to b and returns the
// extended buffer. The encoding, byte by byte:
//
//	byte 0        n, the number of tags, 0..5
//	then n times, in ascending byte order of the keys:
//	  1 byte      k, the key's length in bytes, 1..80
//	  k bytes     the key, UTF-8, 1..20 characters
//	  1 byte      v, the value's length in bytes, 1..120
//	  v bytes     the value, UTF-8, 1..30 characters
//
// The set {zone=a, cluster=k1} encodes as
//
//	02 07 'c' 'l' 'u' 's' 't' 'e' 'r' 02 'k' '1' 04 'z' 'o' 'n' 'e' 01 'a'
//
// Every Set has exactly one encoding and [Decode] accepts nothing else, so
// equal sets have equal bytes. The format has no version of its own: it is
// versioned by the message that embeds it. The error is always nil; it is
// there to satisfy encoding.BinaryAppender.
func (s Set) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, byte(len(s.tags)))
	for _, t := range s.tags {
		b = append(b, byte(len(t.Key)))
		b = append(b, t.Key...)
		b = append(b, byte(len(t.Value)))
		b = append(b, t.Value...)
	}
	return b, nil
}

// MarshalBinary returns the encoding of s (see [Set.AppendBinary]).
func (s Set) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, s.encodedLen()))
}

func (s Set) encodedLen() int {
	n := 1
	for _, t := range s.tags {
		n += 2 + len(t.Key) + len(t.Value)
	}
	return n
}

// UnmarshalBinary decodes data, which must hold exactly one encoded set.
func (s *Set) UnmarshalBinary(data []byte) error {
	d, rest, err := Decode(data)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("%w: %d trailing bytes after the tag set", ErrDecode, len(rest))
	}
	*s = d
	return nil
}

// Decode reads one encoded set (see [Set.AppendBinary]) from the front of b
// and returns it with the bytes that follow. It rejects truncated input, a
// count or length beyond the limits, invalid UTF-8, keys out of order or
// repeated, and empty keys or values, with an error that wraps [ErrDecode]
// and says what was wrong at which byte offset. The returned strings do not
// alias b.
func Decode(b []byte) (Set, []byte, error) {
	if len(b) == 0 {
		return Set{}, nil, fmt.Errorf("%w: empty input, want a tag count byte", ErrDecode)
	}
	n := int(b[0])
	if n > MaxTags {
		return Set{}, nil, fmt.Errorf("%w: tag count %d at offset 0 exceeds the maximum of %d", ErrDecode, n, MaxTags)
	}
	off := 1
	var ts []Tag
	if n > 0 {
		ts = make([]Tag, 0, n)
	}
	for i := range n {
		key, next, err := decodeString(b, off, "key", i, maxKeyBytes, MaxKeyLen)
		if err != nil {
			return Set{}, nil, err
		}
		if i > 0 && strings.Compare(ts[i-1].Key, key) >= 0 {
			return Set{}, nil, fmt.Errorf("%w: tag %d key %q at offset %d does not sort after %q (keys must be unique and ascending)", ErrDecode, i, key, off, ts[i-1].Key)
		}
		off = next
		val, next, err := decodeString(b, off, "value", i, maxValueBytes, MaxValueLen)
		if err != nil {
			return Set{}, nil, err
		}
		off = next
		ts = append(ts, Tag{Key: key, Value: val})
	}
	return Set{tags: ts}, b[off:], nil
}

// decodeString reads a length byte and that many bytes of UTF-8 at b[off:].
func decodeString(b []byte, off int, what string, i, maxBytes, maxRunes int) (string, int, error) {
	if off >= len(b) {
		return "", 0, fmt.Errorf("%w: truncated at offset %d: want the length of tag %d's %s", ErrDecode, off, i, what)
	}
	l := int(b[off])
	switch {
	case l == 0:
		return "", 0, fmt.Errorf("%w: tag %d has an empty %s (offset %d)", ErrDecode, i, what, off)
	case l > maxBytes:
		return "", 0, fmt.Errorf("%w: tag %d %s length %d at offset %d exceeds %d bytes", ErrDecode, i, what, l, off, maxBytes)
	}
	off++
	if len(b)-off < l {
		return "", 0, fmt.Errorf("%w: truncated at offset %d: tag %d's %s needs %d bytes, %d remain", ErrDecode, off, i, what, l, len(b)-off)
	}
	raw := b[off : off+l]
	if !utf8.Valid(raw) {
		return "", 0, fmt.Errorf("%w: tag %d %s at offset %d is not valid UTF-8", ErrDecode, i, what, off)
	}
	if c := utf8.RuneCount(raw); c > maxRunes {
		return "", 0, fmt.Errorf("%w: tag %d %s at offset %d has %d characters, more than %d", ErrDecode, i, what, off, c, maxRunes)
	}
	return string(raw), off + l, nil
}
