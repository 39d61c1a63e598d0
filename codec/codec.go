// Package codec turns keys and values into bytes and back, typed.
//
// A Codec[T] is what a topology declares for each input topic's key and
// value, each store's values and each output: the handler then sees T, never
// []byte, and a record whose bytes do not decode is a poison record for the
// runtime to dead-letter, not a panic in user code.
//
// Goka processors port over with their codecs: FromGoka wraps any goka
// codec (anything with goka.Codec's method set) as a Codec[T].
package codec

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Codec encodes values of type T to bytes and decodes them back.
// Implementations must be safe for concurrent use: tasks share them.
type Codec[T any] interface {
	Encode(v T) ([]byte, error)
	Decode(b []byte) (T, error)
}

// Appender is implemented by codecs that can encode into a caller's buffer:
// the processor encodes keys and values into a per-task buffer this way,
// sparing an allocation per value on its hot path.
type Appender[T any] interface {
	AppendEncode(dst []byte, v T) ([]byte, error)
}

// AppendFunc returns c's AppendEncode when c is an Appender, else a
// function that appends what c.Encode returns.
func AppendFunc[T any](c Codec[T]) func(dst []byte, v T) ([]byte, error) {
	if a, ok := c.(Appender[T]); ok {
		return a.AppendEncode
	}
	return func(dst []byte, v T) ([]byte, error) {
		b, err := c.Encode(v)
		return append(dst, b...), err
	}
}

// String returns the codec of UTF-8 strings: the bytes as they are.
// Decoding does not validate UTF-8: Kafka keys are bytes, and a key must
// round-trip exactly to keep its partition.
func String() Codec[string] { return stringCodec{} }

type stringCodec struct{}

func (stringCodec) Encode(v string) ([]byte, error) { return []byte(v), nil }
func (stringCodec) Decode(b []byte) (string, error) { return string(b), nil }
func (stringCodec) AppendEncode(dst []byte, v string) ([]byte, error) {
	return append(dst, v...), nil
}

// Bytes returns the identity codec. Decode returns b itself, not a copy: the
// runtime hands it buffers the handler may keep.
func Bytes() Codec[[]byte] { return bytesCodec{} }

type bytesCodec struct{}

func (bytesCodec) Encode(v []byte) ([]byte, error) { return v, nil }
func (bytesCodec) Decode(b []byte) ([]byte, error) { return b, nil }
func (bytesCodec) AppendEncode(dst []byte, v []byte) ([]byte, error) {
	return append(dst, v...), nil
}

// Int64 returns the codec of int64 as a decimal string ("42", "-7"): the
// format kcat, the console producer and `rackstream produce` users type, and
// what the built-in count and sum processors store.
func Int64() Codec[int64] { return int64Codec{} }

type int64Codec struct{}

func (int64Codec) Encode(v int64) ([]byte, error) { return strconv.AppendInt(nil, v, 10), nil }
func (int64Codec) AppendEncode(dst []byte, v int64) ([]byte, error) {
	return strconv.AppendInt(dst, v, 10), nil
}

func (int64Codec) Decode(b []byte) (int64, error) {
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("decode int64 from %s: not a decimal integer", quoteTrunc(b))
	}
	return v, nil
}

// JSON returns the codec of T as JSON (encoding/json). Decoding rejects
// trailing data after the JSON value.
func JSON[T any]() Codec[T] { return jsonCodec[T]{} }

type jsonCodec[T any] struct{}

func (jsonCodec[T]) Encode(v T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T as JSON: %w", v, err)
	}
	return b, nil
}

func (jsonCodec[T]) Decode(b []byte) (T, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("decode JSON %s into %T: %w", quoteTrunc(b), v, err)
	}
	return v, nil
}

// GokaCodec is the method set of goka.Codec (github.com/lovoo/goka): every
// codec in goka's codec package, and users' own, satisfy it.
type GokaCodec interface {
	Encode(value any) (data []byte, err error)
	Decode(data []byte) (value any, err error)
}

// FromGoka adapts a goka codec whose values are of type T, for example
//
//	codec.FromGoka[string](new(gokacodec.String))
//	codec.FromGoka[int64](new(gokacodec.Int64))
//
// A decoded value that is not a T is an error naming both types. A nil
// value decodes to T's zero value (goka codecs return nil for tombstones).
func FromGoka[T any](c GokaCodec) Codec[T] { return gokaCodec[T]{c} }

type gokaCodec[T any] struct{ c GokaCodec }

func (g gokaCodec[T]) Encode(v T) ([]byte, error) { return g.c.Encode(v) }

func (g gokaCodec[T]) Decode(b []byte) (T, error) {
	var zero T
	v, err := g.c.Decode(b)
	if err != nil {
		return zero, err
	}
	if v == nil {
		return zero, nil
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("goka codec %T decoded a %T, the topology declared %T", g.c, v, zero)
	}
	return t, nil
}

// quoteTrunc quotes b for an error message, cut to 64 bytes: errors end up
// in logs and dead-letter headers, and values can be megabytes.
func quoteTrunc(b []byte) string {
	const max = 64
	if len(b) <= max {
		return strconv.Quote(string(b))
	}
	return strconv.Quote(string(b[:max])) + fmt.Sprintf("... (%d bytes)", len(b))
}
