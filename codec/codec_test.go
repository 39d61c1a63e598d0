package codec_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	gokacodec "github.com/lovoo/goka/codec"

	"github.com/rackstream/rackstream/codec"
)

func roundTrip[T any](t *testing.T, c codec.Codec[T], v T, wantBytes string) {
	t.Helper()
	b, err := c.Encode(v)
	if err != nil {
		t.Fatalf("Encode(%v): %v", v, err)
	}
	if string(b) != wantBytes {
		t.Errorf("Encode(%v) = %q, want %q", v, b, wantBytes)
	}
	got, err := c.Decode(b)
	if err != nil {
		t.Fatalf("Decode(%q): %v", b, err)
	}
	if !reflect.DeepEqual(got, v) {
		t.Errorf("Decode(Encode(%v)) = %v", v, got)
	}
}

type event struct {
	User  string `json:"user"`
	Count int    `json:"count"`
}

func TestCodecsRoundTripToTheirWireFormat(t *testing.T) {
	roundTrip(t, codec.String(), "héllo", "héllo")
	roundTrip(t, codec.String(), "", "")
	roundTrip(t, codec.Bytes(), []byte{0, 0xff, 'x'}, "\x00\xffx")
	roundTrip(t, codec.Int64(), int64(-9223372036854775808), "-9223372036854775808")
	roundTrip(t, codec.Int64(), int64(42), "42")
	roundTrip(t, codec.JSON[event](), event{"ann", 3}, `{"user":"ann","count":3}`)
	roundTrip(t, codec.JSON[map[string]int](), map[string]int{"a": 1}, `{"a":1}`)
}

func TestStringKeepsInvalidUTF8Bytes(t *testing.T) {
	in := []byte{0xc3, 0x28, 0xff}
	s, _ := codec.String().Decode(in)
	out, _ := codec.String().Encode(s)
	if !bytes.Equal(in, out) {
		t.Errorf("round trip of invalid UTF-8 changed %x to %x: the key would move partition", in, out)
	}
}

func TestDecodeErrorsSayWhatWasWrong(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  func() error
		want []string
	}{
		{"int64 not a number", func() error { _, err := codec.Int64().Decode([]byte("12a")); return err }, []string{`"12a"`, "decimal"}},
		{"int64 empty", func() error { _, err := codec.Int64().Decode(nil); return err }, []string{`""`}},
		{"json garbage", func() error { _, err := codec.JSON[event]().Decode([]byte("{nope")); return err }, []string{`"{nope"`, "codec_test.event"}},
		{"json trailing data", func() error { _, err := codec.JSON[event]().Decode([]byte(`{} x`)); return err }, []string{"codec_test.event"}},
		{"json long value cut", func() error {
			_, err := codec.JSON[event]().Decode([]byte("[" + strings.Repeat("x", 1000)))
			return err
		}, []string{"(1001 bytes)"}},
		{"goka wrong type", func() error { _, err := codec.FromGoka[int64](new(gokacodec.String)).Decode([]byte("x")); return err }, []string{"decoded a string", "declared int64"}},
		{"goka decode error", func() error { _, err := codec.FromGoka[int64](new(gokacodec.Int64)).Decode([]byte("x")); return err }, []string{"x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestFromGokaPortsGokaCodecs(t *testing.T) {
	roundTrip(t, codec.FromGoka[string](new(gokacodec.String)), "v", "v")
	roundTrip(t, codec.FromGoka[int64](new(gokacodec.Int64)), int64(-5), "-5")
	roundTrip(t, codec.FromGoka[[]byte](new(gokacodec.Bytes)), []byte("raw"), "raw")
	// goka's Int64 codec and ours share the decimal format, so a goka
	// table's values read with either.
	b, _ := new(gokacodec.Int64).Encode(int64(77))
	if v, err := codec.Int64().Decode(b); err != nil || v != 77 {
		t.Errorf("codec.Int64 reading goka's Int64 bytes %q: %v, %v", b, v, err)
	}
	// A tombstone (nil) decodes to the zero value.
	if v, err := codec.FromGoka[string](nilDecoder{}).Decode(nil); err != nil || v != "" {
		t.Errorf("nil from a goka codec: %q, %v; want the zero value", v, err)
	}
}

type nilDecoder struct{}

func (nilDecoder) Encode(any) ([]byte, error) { return nil, nil }
func (nilDecoder) Decode([]byte) (any, error) { return nil, nil }

func BenchmarkInt64Decode(b *testing.B) {
	c := codec.Int64()
	in := []byte("1234567890")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := c.Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}
