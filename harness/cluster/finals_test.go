package cluster

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// win is the definition of the finals tests: one-second windows, 200 ms
// of grace.
var win = Tumbling{Size: 1000, Grace: 200}

// produced is an input with every case of Expect: records within grace,
// one exactly at end + grace (late), windows closed and still open at the
// end, two partitions with stream times of their own.
var produced = []Record{
	{Key: "a", Partition: 0, Offset: 0, Timestamp: time.UnixMilli(100)},
	{Key: "a", Partition: 0, Offset: 1, Timestamp: time.UnixMilli(900)},
	{Key: "b", Partition: 0, Offset: 2, Timestamp: time.UnixMilli(1100)},
	{Key: "a", Partition: 0, Offset: 3, Timestamp: time.UnixMilli(950)},  // out of order, within grace
	{Key: "b", Partition: 0, Offset: 4, Timestamp: time.UnixMilli(1200)}, // stream time at end + grace of [0,1000)
	{Key: "a", Partition: 0, Offset: 5, Timestamp: time.UnixMilli(999)},  // late
	{Key: "a", Partition: 0, Offset: 6, Timestamp: time.UnixMilli(2500)},
	// Partition 1 is listed after a later offset of itself: Expect goes
	// by offset.
	{Key: "c", Partition: 1, Offset: 1, Timestamp: time.UnixMilli(7000)},
	{Key: "c", Partition: 1, Offset: 0, Timestamp: time.UnixMilli(5000)},
}

func TestExpectCountsEachPartitionsRecordsInTimeAndDropsLateOnes(t *testing.T) {
	d := win.Expect(produced)
	want := Due{
		Finals: map[WindowKey]int64{{"a", 0}: 3, {"b", 1000}: 2, {"c", 5000}: 1},
		Open:   map[WindowKey]bool{{"a", 2000}: true, {"c", 7000}: true},
		Late:   1,
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("Expect:\n got %+v\nwant %+v", d, want)
	}
}

// result is an output record of a final count.
func result(key string, start, count int64) Record {
	return Record{Key: key, Value: fmt.Sprintf(`{"start":%d,"end":%d,"value":%d}`, start, start+win.Size, count)}
}

func TestCheckFindsEveryFaultOfTheFinalResults(t *testing.T) {
	exact := []Record{result("a", 0, 3), result("b", 1000, 2), result("c", 5000, 1)}
	for _, tc := range []struct {
		name string
		out  []Record
		want Finals // Faults not compared
	}{
		{"every final once", exact, Finals{Due: 3, Seen: 3}},
		{"a final missing", exact[:2], Finals{Due: 3, Seen: 2, Missing: 1}},
		{"a final twice", append([]Record{result("a", 0, 3)}, exact...), Finals{Due: 3, Seen: 3, Duplicated: 1}},
		{"a wrong count", []Record{exact[0], exact[1], result("c", 5000, 2)}, Finals{Due: 3, Seen: 3, WrongCount: 1}},
		{"a result of a window still open", append(exact, result("a", 2000, 1)), Finals{Due: 3, Seen: 3, Early: 1}},
		{"a result of a window no record reached in time", append(exact, result("a", 1000, 1)), Finals{Due: 3, Seen: 3, PastGrace: 1}},
		{"a record that is no window result", append(exact, Record{Key: "a", Value: "7"}), Finals{Due: 3, Seen: 3, Garbage: 1}},
		{"a result of another window size", append(exact, Record{Key: "a", Value: `{"start":0,"end":2000,"value":3}`}), Finals{Due: 3, Seen: 3, Garbage: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := win.Check(win.Expect(produced), tc.out)
			if ok := reflect.DeepEqual(tc.want, Finals{Due: 3, Seen: 3}); got.OK() != ok {
				t.Errorf("OK() = %v, want %v", got.OK(), ok)
			}
			if n := len(got.Faults); (n == 0) != got.OK() {
				t.Errorf("%d faults listed, OK() = %v", n, got.OK())
			}
			got.Faults = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
