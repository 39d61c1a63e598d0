package window

import (
	"bytes"
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

func TestKeyEncodingOrder(t *testing.T) {
	less := func(a, b []byte) bool { return bytes.Compare(a, b) < 0 }
	tests := []struct {
		name string
		a, b []byte // a must sort before b
	}{
		{"within a key, an earlier window sorts first", WindowKey([]byte("k"), 5), WindowKey([]byte("k"), 6)},
		{"negative times sort before positive ones", WindowKey([]byte("k"), -1), WindowKey([]byte("k"), 0)},
		{"time order holds across a byte boundary", WindowKey([]byte("k"), 255), WindowKey([]byte("k"), 256)},
		{"a key sorts before its extensions, whatever the time", WindowKey([]byte("a"), math.MaxInt64), WindowKey([]byte("a\x00"), 0)},
		{"a key with a zero byte sorts before a key with a larger byte", WindowKey([]byte("a\x00\xff"), math.MaxInt64), WindowKey([]byte("ab"), math.MinInt64)},
		{"keys sort in their own byte order", WindowKey([]byte("ab"), math.MaxInt64), WindowKey([]byte("b"), 0)},
		{"the empty key sorts first", WindowKey(nil, math.MaxInt64), WindowKey([]byte{0}, 0)},
		{"sessions of a key sort by end", SessionKey([]byte("k"), Window{9, 10}), SessionKey([]byte("k"), Window{0, 11})},
		{"time-first windows sort by start before key", WindowTimeKey(1, []byte("z")), WindowTimeKey(2, []byte("a"))},
		{"time-first windows of one start sort by key", WindowTimeKey(1, []byte("a")), WindowTimeKey(1, []byte("a\x00"))},
		{"time-first sessions sort by end first", SessionTimeKey(Window{5, 9}, []byte("a")), SessionTimeKey(Window{1, 10}, []byte("a"))},
		{"time-first sessions of one end sort by start before key", SessionTimeKey(Window{0, 2}, []byte("e")), SessionTimeKey(Window{2, 2}, []byte("a"))},
		{"time-first sessions of one end and start sort by key", SessionTimeKey(Window{2, 2}, []byte("a")), SessionTimeKey(Window{2, 2}, []byte("c"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !less(tt.a, tt.b) {
				t.Fatalf("%x does not sort before %x", tt.a, tt.b)
			}
		})
	}
}

func TestParseRejectsMalformedKeys(t *testing.T) {
	bad := [][]byte{
		nil,
		[]byte("abc"),                        // no terminator
		{'a', 0},                             // escape cut short
		{'a', 0, 7, 1, 2, 3, 4, 5, 6, 7},     // unknown escape
		{'a', 0, 1, 1, 2, 3},                 // time cut short
		append(WindowKey([]byte("a"), 1), 9), // trailing byte
	}
	for _, b := range bad {
		if _, _, err := ParseWindowKey(b); err == nil {
			t.Errorf("ParseWindowKey(%x) accepted", b)
		}
		if _, _, err := ParseSessionKey(b); err == nil {
			t.Errorf("ParseSessionKey(%x) accepted", b)
		}
	}
}

// TestRangeScansAreExact stores the windows of keys chosen to collide on
// prefixes and checks that each range scan of a sorted keyspace returns
// exactly one key's windows in the time range, oldest first.
func TestRangeScansAreExact(t *testing.T) {
	keys := [][]byte{nil, {0}, {0, 0}, {0, 1}, {0, 0xFF}, []byte("a"), []byte("a\x00"), []byte("a\x00\x01"), []byte("a\x01"), []byte("ab"), {0xFF}, {0xFF, 0xFF}}
	times := []int64{math.MinInt64, -1, 0, 1, 2, 255, 256, 1000, math.MaxInt64 - 1, math.MaxInt64}
	var space [][]byte
	for _, k := range keys {
		for _, ts := range times {
			space = append(space, WindowKey(k, ts))
		}
	}
	slices.SortFunc(space, bytes.Compare)
	scan := func(lo, hi []byte) [][]byte {
		i := sort.Search(len(space), func(i int) bool { return bytes.Compare(space[i], lo) >= 0 })
		j := len(space)
		if hi != nil {
			j = sort.Search(len(space), func(i int) bool { return bytes.Compare(space[i], hi) >= 0 })
		}
		return space[i:max(i, j)]
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		k := keys[r.IntN(len(keys))]
		from, to := times[r.IntN(len(times))], times[r.IntN(len(times))]
		lo, hi := WindowRange(k, from, to)
		var got []int64
		for _, b := range scan(lo, hi) {
			gk, ts, err := ParseWindowKey(b)
			if err != nil || !bytes.Equal(gk, k) {
				t.Fatalf("range of %q [%d,%d] holds %q (%v)", k, from, to, gk, err)
			}
			got = append(got, ts)
		}
		var want []int64
		for _, ts := range times {
			if from <= ts && ts <= to {
				want = append(want, ts)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("range of %q [%d,%d] = %v, want %v", k, from, to, got, want)
		}
	}
	// A key range of every key's windows: [EncodeKey(a), EncodeKey(b)).
	for range 500 {
		a, b := keys[r.IntN(len(keys))], keys[r.IntN(len(keys))]
		var want int
		for _, k := range keys {
			if bytes.Compare(a, k) <= 0 && bytes.Compare(k, b) < 0 {
				want += len(times)
			}
		}
		if got := len(scan(EncodeKey(a), EncodeKey(b))); got != want {
			t.Fatalf("key range [%q,%q) holds %d windows, want %d", a, b, got, want)
		}
	}
}

func FuzzWindowKey(f *testing.F) {
	f.Add([]byte("user-1"), int64(0), []byte("user-1\x00"), int64(-5))
	f.Add([]byte{0, 0xFF, 1}, int64(math.MaxInt64), []byte{0}, int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, a []byte, ta int64, b []byte, tb int64) {
		ka, kb := WindowKey(a, ta), WindowKey(b, tb)
		k, ts, err := ParseWindowKey(ka)
		if err != nil || !bytes.Equal(k, a) || ts != ta {
			t.Fatalf("window key round trip of %q@%d = %q@%d, %v", a, ta, k, ts, err)
		}
		want := cmp.Or(bytes.Compare(a, b), cmp.Compare(ta, tb))
		if got := bytes.Compare(ka, kb); got != want {
			t.Fatalf("order of %q@%d vs %q@%d = %d, want %d", a, ta, b, tb, got, want)
		}
		ts2, k2, err := ParseWindowTimeKey(WindowTimeKey(ta, a))
		if err != nil || !bytes.Equal(k2, a) || ts2 != ta {
			t.Fatalf("window time key round trip of %q@%d = %q@%d, %v", a, ta, k2, ts2, err)
		}
		want = cmp.Or(cmp.Compare(ta, tb), bytes.Compare(a, b))
		if got := bytes.Compare(WindowTimeKey(ta, a), WindowTimeKey(tb, b)); got != want {
			t.Fatalf("time-first order of %q@%d vs %q@%d = %d, want %d", a, ta, b, tb, got, want)
		}
		// Arbitrary bytes never panic the parsers.
		ParseWindowKey(a)
		ParseWindowTimeKey(a)
		ParseSessionKey(a)
		ParseSessionTimeKey(a)
	})
}

func FuzzSessionKey(f *testing.F) {
	f.Add([]byte("user-1"), int64(0), int64(10), []byte("user-1\x00"), int64(3), int64(4))
	f.Fuzz(func(t *testing.T, a []byte, sa, ea int64, b []byte, sb, eb int64) {
		wa, wb := Window{sa, ea}, Window{sb, eb}
		k, w, err := ParseSessionKey(SessionKey(a, wa))
		if err != nil || !bytes.Equal(k, a) || w != wa {
			t.Fatalf("session key round trip of %q%v = %q%v, %v", a, wa, k, w, err)
		}
		w, k, err = ParseSessionTimeKey(SessionTimeKey(wa, a))
		if err != nil || !bytes.Equal(k, a) || w != wa {
			t.Fatalf("session time key round trip of %q%v = %q%v, %v", a, wa, k, w, err)
		}
		want := cmp.Or(bytes.Compare(a, b), cmp.Compare(ea, eb), cmp.Compare(sa, sb))
		if got := bytes.Compare(SessionKey(a, wa), SessionKey(b, wb)); got != want {
			t.Fatalf("order of %q%v vs %q%v = %d, want %d", a, wa, b, wb, got, want)
		}
		want = cmp.Or(cmp.Compare(ea, eb), cmp.Compare(sa, sb), bytes.Compare(a, b))
		if got := bytes.Compare(SessionTimeKey(wa, a), SessionTimeKey(wb, b)); got != want {
			t.Fatalf("time-first order of %q%v vs %q%v = %d, want %d", a, wa, b, wb, got, want)
		}
		lo, hi := SessionRange(a, ea, ea)
		if k := SessionKey(a, wa); bytes.Compare(k, lo) < 0 || bytes.Compare(k, hi) >= 0 {
			t.Fatalf("session %q%v outside its own end range [%x,%x)", a, wa, lo, hi)
		}
	})
}
