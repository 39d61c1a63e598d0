package processor

import (
	"bytes"
	"slices"
	"testing"

	"github.com/rackstream/rackstream/window"
)

// memScan is a scanner over a map of a store's entries.
func memScan(entries map[string][]byte) scanner {
	return func(start, end []byte, fn func(k, v []byte) bool) error {
		keys := make([]string, 0, len(entries))
		for k := range entries {
			if bytes.Compare([]byte(k), start) >= 0 && (end == nil || bytes.Compare([]byte(k), end) < 0) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !fn([]byte(k), entries[k]) {
				break
			}
		}
		return nil
	}
}

func joinEntries(storeTime [2]int64, recs ...StoredWindow) map[string][]byte {
	st := window.NewJoinState()
	st.StoreTime = storeTime
	out := map[string][]byte{string(joinStateKey): joinMeta{state: st}.encode()}
	for _, r := range recs {
		side := window.Left
		if r.Side == "right" {
			side = window.Right
		}
		out[string(prefixed(joinSidePrefix(side), window.JoinRecordKey(r.Key, r.Start, r.Offset)))] = r.Value
		out[string(prefixed(prefixJoinIndex, window.JoinTimeKey(r.Start, side, r.Key, r.Offset)))] = []byte{}
		out[string(prefixed(prefixJoinPending, window.JoinTimeKey(r.Start, side, r.Key, r.Offset)))] = r.Value
	}
	return out
}

func rec(side, key string, ts, offset int64, value string) StoredWindow {
	return StoredWindow{Key: []byte(key), Start: ts, End: ts, Side: side, Offset: offset, Value: []byte(value)}
}

func TestJoinStoreReadsEachSidesRecordsInTimeOrder(t *testing.T) {
	j := &joinStore{retention: 100}
	entries := joinEntries([2]int64{1000, 1000},
		rec("left", "a", 950, 7, "l2"),
		rec("right", "a", 950, 3, "r1"),
		rec("left", "a", 920, 5, "l1"),
		rec("left", "a", 950, 6, "l3"),
		rec("left", "a", 900, 1, "expired"),
		rec("right", "b", 930, 4, "rb"),
		rec("left", "ab", 940, 2, "lab"),
	)
	got, err := j.keyRecords(memScan(entries), []byte("a"), 0, 2000)
	if err != nil {
		t.Fatal(err)
	}
	want := []StoredWindow{rec("left", "a", 920, 5, "l1"), rec("left", "a", 950, 6, "l3"), rec("left", "a", 950, 7, "l2"), rec("right", "a", 950, 3, "r1")}
	if !slices.EqualFunc(got, want, sameRecord) {
		t.Fatalf("key a:\n got %v\nwant %v", got, want)
	}
	got, err = j.keyRecords(memScan(entries), []byte("a"), 921, 949)
	if err != nil || len(got) != 0 {
		t.Fatalf("key a in [921, 949]: %v, %v; want none", got, err)
	}
	got, err = j.allRecords(memScan(entries), 930, 2000)
	if err != nil {
		t.Fatal(err)
	}
	want = []StoredWindow{rec("right", "b", 930, 4, "rb"), rec("left", "ab", 940, 2, "lab"), rec("left", "a", 950, 6, "l3"), rec("left", "a", 950, 7, "l2"), rec("right", "a", 950, 3, "r1")}
	if !slices.EqualFunc(got, want, sameRecord) {
		t.Fatalf("all in [930, 2000]:\n got %v\nwant %v", got, want)
	}
}

func TestJoinStoreHidesOnlyTheExpiredSidesRecords(t *testing.T) {
	j := &joinStore{retention: 100}
	entries := joinEntries([2]int64{1000, 950}, rec("left", "a", 900, 1, "l"), rec("right", "a", 900, 2, "r"))
	got, err := j.keyRecords(memScan(entries), []byte("a"), 0, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if want := []StoredWindow{rec("right", "a", 900, 2, "r")}; !slices.EqualFunc(got, want, sameRecord) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestJoinStoreOfNothingReadsNothing(t *testing.T) {
	j := &joinStore{retention: 100}
	got, err := j.allRecords(memScan(map[string][]byte{}), 0, 2000)
	if err != nil || len(got) != 0 {
		t.Fatalf("got %v, %v; want none", got, err)
	}
}

func TestParseJoinRecordRefusesOtherEntries(t *testing.T) {
	for name, k := range map[string][]byte{
		"empty":     nil,
		"progress":  joinStateKey,
		"pending":   prefixed(prefixJoinPending, window.JoinTimeKey(1, window.Left, []byte("a"), 1)),
		"truncated": prefixed(prefixJoinLeft, window.JoinRecordKey([]byte("a"), 1, 1)[:5]),
	} {
		if _, err := parseJoinRecord(k, nil); err == nil {
			t.Errorf("%s: parsed %x", name, k)
		}
	}
	r, err := parseJoinRecord(prefixed(prefixJoinRight, window.JoinRecordKey([]byte("k"), 42, 9)), []byte("v"))
	if err != nil || !sameRecord(r, rec("right", "k", 42, 9, "v")) {
		t.Fatalf("got %v, %v", r, err)
	}
}

func TestJoinStoreRendersEachSideWithItsCodec(t *testing.T) {
	j := &joinStore{render: [2]func([]byte) (any, error){
		window.Left:  func(b []byte) (any, error) { return "L" + string(b), nil },
		window.Right: func(b []byte) (any, error) { return "R" + string(b), nil },
	}}
	for side, want := range map[string]string{"left": "Lx", "right": "Rx"} {
		if v, err := j.renderSide(side, []byte("x")); err != nil || v != want {
			t.Errorf("%s: %v, %v; want %s", side, v, err, want)
		}
	}
	if _, err := j.renderSide("middle", nil); err == nil {
		t.Error("side middle rendered")
	}
}

func sameRecord(a, b StoredWindow) bool {
	return bytes.Equal(a.Key, b.Key) && a.Start == b.Start && a.End == b.End && a.Side == b.Side && a.Offset == b.Offset && bytes.Equal(a.Value, b.Value)
}
