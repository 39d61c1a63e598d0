package tags

import (
	"bytes"
	"encoding"
	"errors"
	"strings"
	"testing"
)

var (
	_ encoding.BinaryAppender    = Set{}
	_ encoding.BinaryMarshaler   = Set{}
	_ encoding.BinaryUnmarshaler = (*Set)(nil)
)

func TestEncodingGoldenBytes(t *testing.T) {
	tests := []struct {
		name string
		set  Set
		want []byte
	}{
		{"the empty set is one zero byte", Set{}, []byte{0}},
		{
			"tags are written in key order",
			MustSet("zone", "a", "cluster", "k1"),
			[]byte{2, 7, 'c', 'l', 'u', 's', 't', 'e', 'r', 2, 'k', '1', 4, 'z', 'o', 'n', 'e', 1, 'a'},
		},
		{
			"lengths are in bytes",
			MustSet("ä", "€"),
			[]byte{1, 2, 0xc3, 0xa4, 3, 0xe2, 0x82, 0xac},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.set.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("MarshalBinary = % x, want % x", got, tt.want)
			}
			var back Set
			if err := back.UnmarshalBinary(got); err != nil {
				t.Fatal(err)
			}
			if !back.Equal(tt.set) {
				t.Errorf("round trip: got %v, want %v", back, tt.set)
			}
		})
	}
}

func TestAppendBinaryKeepsThePrefixAndDecodeReturnsTheRest(t *testing.T) {
	s := MustSet("zone", "eu-central-1a", "cluster", "k8s-cluster1")
	b, _ := s.AppendBinary([]byte("head"))
	b = append(b, "tail"...)
	if !bytes.HasPrefix(b, []byte("head")) {
		t.Fatalf("prefix lost: %q", b)
	}
	got, rest, err := Decode(b[4:])
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(s) || string(rest) != "tail" {
		t.Errorf("Decode = %v, rest %q", got, rest)
	}
	// The decoded strings must not alias the input buffer.
	for i := range b {
		b[i] = 0
	}
	if got.Value("zone") != "eu-central-1a" {
		t.Errorf("decoded set changed with its input buffer: %v", got)
	}
}

func TestDecodeRejectsMalformedInput(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	enc := func(parts ...string) []byte {
		b := []byte{byte(len(parts) / 2)}
		for _, p := range parts {
			b = append(b, byte(len(p)))
			b = append(b, p...)
		}
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty input", nil, "empty input"},
		{"count beyond five", []byte{6}, "tag count 6 at offset 0 exceeds the maximum of 5"},
		{"count of 255", []byte{255, 1, 'a', 1, 'b'}, "tag count 255"},
		{"truncated before a key length", []byte{1}, "truncated at offset 1: want the length of tag 0's key"},
		{"truncated key", []byte{1, 4, 'z', 'o'}, "tag 0's key needs 4 bytes, 2 remain"},
		{"truncated before a value length", []byte{1, 1, 'z'}, "want the length of tag 0's value"},
		{"truncated value", []byte{1, 1, 'z', 3, 'a'}, "tag 0's value needs 3 bytes, 1 remain"},
		{"empty key", []byte{1, 0, 1, 'a'}, "tag 0 has an empty key"},
		{"empty value", []byte{1, 1, 'z', 0}, "tag 0 has an empty value"},
		{"key length beyond 80 bytes", []byte{1, 81}, "key length 81 at offset 1 exceeds 80 bytes"},
		{"value length beyond 120 bytes", []byte{1, 1, 'z', 121}, "value length 121 at offset 3 exceeds 120 bytes"},
		{"key of 21 characters", enc(long(21), "a"), "tag 0 key at offset 2 has 21 characters, more than 20"},
		{"value of 31 characters", enc("z", long(31)), "tag 0 value at offset 4 has 31 characters, more than 30"},
		{"invalid UTF-8", enc("z\xff", "a"), "tag 0 key at offset 2 is not valid UTF-8"},
		{"keys out of order", enc("zone", "a", "cluster", "b"), `tag 1 key "cluster" at offset 8 does not sort after "zone"`},
		{"repeated key", enc("zone", "a", "zone", "b"), `tag 1 key "zone" at offset 8 does not sort after "zone"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Decode(tt.in)
			if err == nil {
				t.Fatalf("Decode(% x) succeeded", tt.in)
			}
			if !errors.Is(err, ErrDecode) {
				t.Errorf("error %v does not wrap ErrDecode", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode(% x) error = %q, want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestUnmarshalBinaryRejectsTrailingBytes(t *testing.T) {
	var s Set
	err := s.UnmarshalBinary([]byte{0, 0})
	if err == nil || !strings.Contains(err.Error(), "1 trailing bytes") {
		t.Errorf("UnmarshalBinary with a trailing byte: err = %v", err)
	}
}

func TestEncodingRoundTripsEveryLimit(t *testing.T) {
	s := MustSet(
		strings.Repeat("🙂", 20), strings.Repeat("🙂", 30), // 80 and 120 bytes: the byte limits
		"a", "1", "b", "2", "c", "3", "d", "4",
	)
	b, _ := s.MarshalBinary()
	var back Set
	if err := back.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(s) {
		t.Errorf("round trip changed the set: %v", back)
	}
}

// FuzzDecode feeds arbitrary bytes to Decode: it must never panic, and
// whatever it accepts must be a valid set whose encoding is exactly the bytes
// it consumed (the encoding is canonical).
func FuzzDecode(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{2, 7, 'c', 'l', 'u', 's', 't', 'e', 'r', 2, 'k', '1', 4, 'z', 'o', 'n', 'e', 1, 'a'})
	f.Add([]byte{1, 2, 0xc3, 0xa4, 3, 0xe2, 0x82, 0xac, 9})
	f.Add([]byte{6})
	f.Add([]byte{1, 81})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, rest, err := Decode(b)
		if err != nil {
			return
		}
		if errs := Check(s.Tags(), nil); errs != nil {
			t.Fatalf("Decode accepted an invalid set %v: %v", s, errs)
		}
		enc, _ := s.MarshalBinary()
		consumed := b[:len(b)-len(rest)]
		if !bytes.Equal(enc, consumed) {
			t.Fatalf("non-canonical input accepted: read % x, re-encoded % x", consumed, enc)
		}
	})
}

// FuzzRoundTrip builds sets from arbitrary strings: every set NewSet accepts
// must decode back to itself.
func FuzzRoundTrip(f *testing.F) {
	f.Add("zone", "eu-central-1a", "cluster", "k8s-cluster1")
	f.Add("ä", "€", "", "")
	f.Add("a", strings.Repeat("🙂", 30), "b", "x")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		ts := []Tag{{k1, v1}}
		if k2 != "" || v2 != "" {
			ts = append(ts, Tag{k2, v2})
		}
		s, err := NewSet(ts...)
		if err != nil {
			return
		}
		b, _ := s.MarshalBinary()
		got, rest, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode of our own encoding of %v failed: %v", s, err)
		}
		if len(rest) != 0 || !got.Equal(s) {
			t.Fatalf("round trip: got %v rest %q, want %v", got, rest, s)
		}
	})
}
