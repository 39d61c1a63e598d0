package window

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// joinIn is one input record of a join test: side 'L' or 'R', key, time,
// and a value that names it in the results.
type joinIn struct {
	side byte
	key  string
	ts   int64
	val  string
}

func onL(key string, ts int64, val string) joinIn { return joinIn{'L', key, ts, val} }
func onR(key string, ts int64, val string) joinIn { return joinIn{'R', key, ts, val} }

// runJoin processes in through a StreamJoin over a MemJoin and returns the
// results as "key:left|right@ts", "-" for a missing side.
func runJoin(t *testing.T, j StreamJoin[string], in []joinIn) []string {
	t.Helper()
	out, _ := runJoinState(t, j, in)
	return out
}

func runJoinState(t *testing.T, j StreamJoin[string], in []joinIn) ([]string, *MemJoin[string]) {
	t.Helper()
	var store MemJoin[string]
	s := NewJoinState()
	var out []string
	for i, r := range in {
		side := Left
		if r.side == 'R' {
			side = Right
		}
		res, err := j.Process(s, &store, Buffered[string]{Side: side, Key: []byte(r.key), Timestamp: r.ts, Seq: int64(i), Value: r.val})
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if err := store.Apply(res.Ops); err != nil {
			t.Fatal(err)
		}
		s = res.State
		for _, op := range res.Ops {
			if op.Kind == JoinEmit {
				out = append(out, formatJoined(op))
			}
		}
	}
	return out, &store
}

func formatJoined(op JoinOp[string]) string {
	l, r := "-", "-"
	if op.HasLeft {
		l = op.Left
	}
	if op.HasRight {
		r = op.Right
	}
	return fmt.Sprintf("%s:%s|%s@%d", op.Key, l, r, op.Timestamp)
}

// The join's contract, one behaviour per case. Windows are 10 ms before
// and after unless a case says otherwise.
func TestStreamJoinSpecification(t *testing.T) {
	sym := JoinTimeDifference(10)
	cases := []struct {
		name string
		kind JoinKind
		w    JoinWindows
		in   []joinIn
		want []string
	}{
		{"inner: records of one key within the window meet, timestamped with the later", InnerJoin, sym,
			[]joinIn{onL("a", 100, "l1"), onR("a", 105, "r1")}, []string{"a:l1|r1@105"}},
		{"inner: the window's edges are inclusive", InnerJoin, sym,
			[]joinIn{onL("a", 100, "l1"), onR("a", 110, "r1"), onR("a", 90, "r2")}, []string{"a:l1|r1@110", "a:l1|r2@100"}},
		{"inner: records further apart than the window do not meet", InnerJoin, sym,
			[]joinIn{onL("a", 100, "l1"), onR("a", 111, "r1")}, nil},
		{"inner: other keys never meet", InnerJoin, sym,
			[]joinIn{onL("a", 100, "l1"), onR("b", 100, "r1")}, nil},
		{"inner: a record meets every partner in its window, oldest first", InnerJoin, sym,
			[]joinIn{onR("a", 104, "r2"), onR("a", 95, "r1"), onR("a", 104, "r3"), onL("a", 100, "l1")},
			[]string{"a:l1|r1@100", "a:l1|r2@104", "a:l1|r3@104"}},
		{"inner: before bounds how far a left record reaches back, after how far forward", InnerJoin,
			JoinWindows{Before: 2, After: 5},
			[]joinIn{onL("a", 100, "l1"), onR("a", 97, "r1"), onR("a", 98, "r2"), onR("a", 105, "r3"), onR("a", 106, "r4")},
			[]string{"a:l1|r2@100", "a:l1|r3@105"}},
		{"inner: a right record reaches back by after and forward by before", InnerJoin,
			JoinWindows{Before: 2, After: 5},
			[]joinIn{onR("a", 100, "r1"), onL("a", 94, "l1"), onL("a", 95, "l2"), onL("a", 102, "l3"), onL("a", 103, "l4")},
			[]string{"a:l2|r1@100", "a:l3|r1@102"}},
		{"inner: a late record still meets what its partner's store keeps", InnerJoin, sym,
			[]joinIn{onR("a", 100, "r1"), onL("b", 500, "l0"), onL("a", 95, "l1")}, []string{"a:l1|r1@100"}},
		{"inner: a record its partner's store has expired is not met", InnerJoin, JoinTimeDifference(10).WithGrace(5),
			// The right store's time is 200; it keeps records after 200-25.
			[]joinIn{onR("a", 175, "r1"), onR("a", 200, "r2"), onL("a", 180, "l1")}, nil},

		{"left: a matched left record is never emitted alone", LeftJoin, sym,
			[]joinIn{onL("a", 100, "l1"), onR("a", 105, "r1"), onL("z", 1000, "close")}, []string{"a:l1|r1@105"}},
		{"left: an unmatched left record waits for its window and grace to pass", LeftJoin, sym.WithGrace(5),
			[]joinIn{onL("a", 100, "l1"), onL("z", 115, "z1"), onL("z", 116, "z2")}, []string{"a:l1|-@100"}},
		{"left: a partner arriving within the window prevents the lone result", LeftJoin, sym,
			[]joinIn{onL("a", 100, "l1"), onL("z", 105, "z1"), onR("a", 108, "r1"), onL("z", 200, "z2")},
			[]string{"a:l1|r1@108", "z:z1|-@105"}},
		{"left: unmatched right records are never emitted", LeftJoin, sym,
			[]joinIn{onR("a", 100, "r1"), onL("z", 1000, "close")}, nil},
		{"left: a left record that lags behind its own window is emitted alone at once", LeftJoin, sym.WithGrace(50),
			[]joinIn{onL("z", 200, "z1"), onL("a", 100, "l1")}, []string{"a:l1|-@100"}},
		{"left: a record behind stream time does not scan; the next newest record does", LeftJoin, sym,
			[]joinIn{onL("a", 100, "l1"), onL("z", 109, "z1"), onL("b", 105, "l2"), onL("z", 200, "z2")},
			[]string{"a:l1|-@100", "b:l2|-@105", "z:z1|-@109"}},
		{"left: lone results come by timestamp then key, before the record's own results", LeftJoin, sym,
			[]joinIn{onL("b", 100, "l1"), onL("a", 100, "l2"), onL("a", 101, "l3"), onR("c", 105, "r0"), onL("c", 115, "l4")},
			[]string{"a:l2|-@100", "b:l1|-@100", "a:l3|-@101", "c:l4|r0@115"}},
		{"left: two unmatched records of one key and time are both emitted", LeftJoin, sym,
			[]joinIn{onL("a", 100, "l1"), onL("a", 100, "l2"), onL("z", 200, "z")}, []string{"a:l1|-@100", "a:l2|-@100"}},
		{"left: a match unpends every record of its key and time", LeftJoin, sym,
			[]joinIn{onL("a", 100, "l1"), onL("a", 100, "l2"), onR("a", 100, "r1"), onL("z", 200, "z")},
			[]string{"a:l1|r1@100", "a:l2|r1@100"}},
		{"left: after a scan keeps two open records, the head time gates the next scan", LeftJoin, sym,
			// The scan at 112 emits x1 and leaves the hint at 108, the last
			// record it saw, so 116 does not scan though a's window has
			// closed: a comes after the pair of 116, with b, at 119.
			[]joinIn{onL("x", 100, "x1"), onL("a", 105, "l1"), onL("b", 108, "l2"), onL("z", 112, "z1"),
				onR("c", 116, "r1"), onL("c", 116, "l3"), onL("z", 119, "z2")},
			[]string{"x:x1|-@100", "c:l3|r1@116", "a:l1|-@105", "b:l2|-@108"}},

		{"outer: unmatched records of both sides are emitted alone, right first at one time", OuterJoin, sym,
			[]joinIn{onL("a", 100, "l1"), onR("a", 100, "r0"), onL("b", 100, "l2"), onR("c", 100, "r1"), onL("z", 200, "z")},
			[]string{"a:l1|r0@100", "c:-|r1@100", "b:l2|-@100"}},
		{"outer: a right record's window closes after before plus grace", OuterJoin, JoinWindows{Before: 3, After: 20},
			[]joinIn{onR("a", 100, "r1"), onR("z", 104, "z1")}, []string{"a:-|r1@100"}},
		{"outer: a matched right record is not emitted alone", OuterJoin, sym,
			[]joinIn{onR("a", 100, "r1"), onL("a", 102, "l1"), onL("z", 200, "z")}, []string{"a:l1|r1@102"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := runJoin(t, StreamJoin[string]{Windows: c.w, Kind: c.kind}, c.in)
			got = slices.DeleteFunc(got, func(s string) bool { return strings.HasPrefix(s, "z:") && !slices.Contains(c.want, s) })
			if !slices.Equal(got, c.want) {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestJoinWindowsValidate(t *testing.T) {
	if err := JoinTimeDifference(0).Validate(); err != nil {
		t.Errorf("a zero window (equal timestamps) is valid: %v", err)
	}
	err := JoinWindows{Before: -1, After: 5, Grace: -2}.Validate()
	for _, f := range []string{"before.ms", "grace.ms"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("error %v does not name %s", err, f)
		}
	}
	if got := (JoinWindows{Before: 2, After: 5, Grace: 3}).Retention(); got != 10 {
		t.Errorf("retention %d, want before+after+grace = 10", got)
	}
}

func TestJoinStateEncodingRoundTrips(t *testing.T) {
	s := JoinState{StreamTime: 5, MinPending: NoPending, StoreTime: [2]int64{NoTimestamp, 1 << 40}}
	got, err := DecodeJoinState(EncodeJoinState(s))
	if err != nil || got != s {
		t.Fatalf("got %+v, %v; want %+v", got, err, s)
	}
	if _, err := DecodeJoinState([]byte{1}); err == nil {
		t.Fatal("a truncated state decoded")
	}
}

func TestJoinKeysRoundTripAndOrder(t *testing.T) {
	k := JoinRecordKey([]byte("a\x00b"), 7, 3)
	key, ts, seq, err := ParseJoinRecordKey(k)
	if err != nil || string(key) != "a\x00b" || ts != 7 || seq != 3 {
		t.Fatalf("record key: %q %d %d %v", key, ts, seq, err)
	}
	tk := JoinTimeKey(9, Left, []byte("k"), 4)
	ts, side, key, seq, err := ParseJoinTimeKey(tk)
	if err != nil || ts != 9 || side != Left || string(key) != "k" || seq != 4 {
		t.Fatalf("time key: %d %v %q %d %v", ts, side, key, seq, err)
	}
	// Right before Left at one time; one key's records share a prefix.
	r := JoinTimeKey(9, Right, []byte("z"), 0)
	if string(r) >= string(tk) {
		t.Error("a right record does not sort before a left one of the same time")
	}
	p := JoinTimePrefix(9, Left, []byte("k"))
	if !strings.HasPrefix(string(tk), string(p)) || strings.HasPrefix(string(JoinTimeKey(9, Left, []byte("k\x00"), 0)), string(p)) {
		t.Error("the prefix of a key's records also covers another key")
	}
}
