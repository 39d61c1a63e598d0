package processor

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/window"
)

func TestWindowMetaRoundTripsWithItsCloseMarks(t *testing.T) {
	m := windowMeta{streamTime: 42, lastClose: 30, storeTime: 40, marks: []closeMark{{"in", 7, 20}, {"other", 3, 25}}}
	got, err := decodeMeta(m.encode())
	if err != nil || !got.equal(m) {
		t.Fatalf("decode(encode(%+v)) = %+v, %v", m, got, err)
	}
	if _, err := decodeMeta(m.encode()[:30]); err == nil {
		t.Fatal("a truncated close mark decoded")
	}
}

func TestAReplayedRecordRewindsTheLastCloseToItsOldestUncommittedMark(t *testing.T) {
	at := func(c map[string]int64) func(string) int64 {
		return func(topic string) int64 {
			if o, ok := c[topic]; ok {
				return o
			}
			return -1
		}
	}
	for _, tc := range []struct {
		name      string
		topic     string
		offset    int64
		committed map[string]int64
		close     int64
		marks     int
	}{
		{"a new record keeps the marks not yet committed", "in", 12, map[string]int64{"in": 8}, 50, 2},
		{"a committed mark is dropped", "in", 12, map[string]int64{"in": 9}, 50, 1},
		{"a record processed again rewinds to the oldest mark", "in", 9, nil, 20, 0},
		{"so does the record of a mark", "in", 10, nil, 20, 0},
		{"a record of another topic only prunes", "other", 1, map[string]int64{"in": 11}, 50, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := windowMeta{streamTime: 60, lastClose: 50, storeTime: 60, marks: []closeMark{{"in", 8, 20}, {"in", 10, 40}}}
			m.replayed(tc.topic, tc.offset, at(tc.committed))
			if m.lastClose != tc.close || len(m.marks) != tc.marks {
				t.Fatalf("lastClose %d with %d marks, want %d with %d", m.lastClose, len(m.marks), tc.close, tc.marks)
			}
		})
	}
}

func TestExpiryDropsOnlySegmentsTheStoreTimeLeftBehind(t *testing.T) {
	l := windowLayout{kind: kindTime, segs: window.NewSegments(60_000)}
	keys := map[string][]byte{}
	for _, w := range []struct {
		key   string
		start int64
	}{{"a", 0}, {"b", 59_000}, {"c", 60_000}, {"d", 150_000}} {
		win := window.Window{Start: w.start, End: w.start + 1000}
		keys[string(l.timeKey([]byte(w.key), win))] = []byte{}
	}
	scan := func(start, end []byte, fn func(k, v []byte) bool) error {
		for k := range keys {
			if k >= string(start) && (end == nil || k < string(end)) && !fn([]byte(k), keys[k]) {
				break
			}
		}
		return nil
	}
	got, err := l.expiredKeys(scan, 1000, 100_000, 150_000)
	if err != nil {
		t.Fatal(err)
	}
	// Store time 150,000 and retention 60,000: segment 1 (60,000-119,999)
	// still holds a visible time (90,001); segment 0 is gone.
	if len(got) != 4 {
		t.Fatalf("expired %d keys, want a's and b's data and index keys", len(got))
	}
	if again, _ := l.expiredKeys(scan, 1000, 150_000, 151_000); len(again) != 0 {
		t.Fatalf("expired %d keys again with no new segment expired", len(again))
	}
}

func TestExpiryDeletesExpiredWindowsFromTheStoreItself(t *testing.T) {
	topo := New("windows")
	agg := NewWindowedAggregation(topo, "counts", window.Tumbling(60_000), codec.String(), codec.Int64(), Count[string, string]())
	in := NewInput(topo, "events", codec.String(), codec.String(), agg.Handler(nil))
	d, err := NewTestDriver(topo, TestDriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, ts := range []int64{1, 60_001, 120_001, 400_000} {
		r := &kgo.Record{Topic: in.Topic(), Partition: -1, Key: []byte{'a' + byte(i)}, Value: []byte("x"), Timestamp: time.UnixMilli(ts)}
		if err := d.PipeRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	// Store time 360,000 (the last window's start), retention 60,000 in
	// segments of 60,000: segments 0 to 4 expired, with a's, b's and c's
	// windows, data and index keys alike.
	var windows []string
	for k := range d.stores[0][agg.spec.index] {
		if k[0] != prefixMeta {
			windows = append(windows, fmt.Sprintf("%c%x", k[0], k[1:]))
		}
	}
	if len(windows) != 2 {
		t.Fatalf("store keys %v, want d's window and its index entry", windows)
	}
}
