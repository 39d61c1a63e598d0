package processor_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/window"
)

// windowedCount is a topology counting the records of each key in def's
// windows, emitting to "counts".
type windowedCount struct {
	d   *processor.TestDriver
	in  *processor.Input[string, string]
	out *processor.Output[string, processor.WindowValue[int64]]
	agg *processor.WindowedAggregation[string, string, int64]
}

func newWindowedCount[W window.TimeWindows | window.SlidingWindows | window.SessionWindows](t *testing.T, def W, policy processor.ErrorPolicy, opts ...processor.WindowOption) *windowedCount {
	t.Helper()
	topo := processor.New("windows")
	w := &windowedCount{}
	w.agg = processor.NewWindowedAggregation(topo, "counts-store", def, codec.String(), codec.Int64(), processor.Count[string, string](), opts...)
	w.out = processor.NewWindowedOutput[string, int64](topo, "counts", codec.String())
	w.in = processor.NewInput(topo, "events", codec.String(), codec.String(), w.agg.Handler(w.out))
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{ErrorPolicy: policy})
	if err != nil {
		t.Fatal(err)
	}
	w.d = d
	return w
}

// pipe sends a record of key at ts ms.
func (w *windowedCount) pipe(t *testing.T, key string, ts int64) {
	t.Helper()
	err := w.d.PipeRecord(&kgo.Record{Topic: "events", Partition: -1, Key: []byte(key), Value: []byte("x"), Timestamp: time.UnixMilli(ts)})
	if err != nil {
		t.Fatal(err)
	}
}

// results renders the output so far, one "key [start,end]=n" (or
// "key [start,end] retracted") per record.
func (w *windowedCount) results(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, r := range w.d.Emitted("counts") {
		if r.Value == nil {
			var start, end string
			for _, h := range r.Headers {
				switch h.Key {
				case processor.HeaderWindowStart:
					start = string(h.Value)
				case processor.HeaderWindowEnd:
					end = string(h.Value)
				}
			}
			out = append(out, fmt.Sprintf("%s [%s,%s] retracted", r.Key, start, end))
			continue
		}
		v, err := codec.JSON[processor.WindowValue[int64]]().Decode(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s [%d,%d]=%d", r.Key, v.Start, v.End, v.Value))
	}
	return out
}

func wantResults(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("results:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestTumblingCountEmitsEveryUpdateWithTheWindowInTheValue(t *testing.T) {
	w := newWindowedCount(t, window.Tumbling(10), processor.PolicyDeadLetter)
	w.pipe(t, "a", 1)
	w.pipe(t, "a", 9)
	w.pipe(t, "b", 5)
	w.pipe(t, "a", 12)
	w.pipe(t, "a", 3) // out of order, stream time 12 < end 10 + grace 0? closed: 10 <= 12
	wantResults(t, w.results(t),
		"a [0,10]=1", "a [0,10]=2", "b [0,10]=1", "a [10,20]=1")
	if dl := w.d.DeadLetters(); len(dl) != 1 || headerOf(dl[0], processor.HeaderDLQStage) != processor.StageLate {
		t.Fatalf("dead letters %v, want the late record with stage late", dl)
	}
}

func TestTumblingCountWithGraceTakesOutOfOrderRecordsUntilGracePasses(t *testing.T) {
	w := newWindowedCount(t, window.Tumbling(10).WithGrace(5), processor.PolicySkip)
	w.pipe(t, "a", 1)
	w.pipe(t, "a", 12)
	w.pipe(t, "a", 3)  // stream time 12 < 10+5: the window [0,10) is open
	w.pipe(t, "a", 15) // closes [0,10)
	w.pipe(t, "a", 4)  // late: dropped, not dead-lettered under skip
	wantResults(t, w.results(t),
		"a [0,10]=1", "a [10,20]=1", "a [0,10]=2", "a [10,20]=2")
	if dl := w.d.DeadLetters(); len(dl) != 0 {
		t.Fatalf("dead letters under skip: %v", dl)
	}
}

func TestTumblingCountEmitFinalEmitsEachWindowOnceWhenStreamTimePassesEndPlusGrace(t *testing.T) {
	w := newWindowedCount(t, window.Tumbling(10).WithGrace(5), processor.PolicyDeadLetter, processor.EmitFinal(), processor.WindowRetention(time.Minute))
	w.pipe(t, "b", 2)
	w.pipe(t, "a", 1)
	w.pipe(t, "a", 12)
	w.pipe(t, "a", 3)  // within grace
	w.pipe(t, "a", 14) // stream time 14: [0,10) closes at 15
	wantResults(t, w.results(t))
	w.pipe(t, "c", 15) // closes [0,10): a then b, by key
	wantResults(t, w.results(t), "a [0,10]=2", "b [0,10]=1")
	w.pipe(t, "a", 4) // late
	w.pipe(t, "c", 40)
	wantResults(t, w.results(t), "a [0,10]=2", "b [0,10]=1", "a [10,20]=2", "c [10,20]=1")
	if len(w.d.DeadLetters()) != 1 {
		t.Fatalf("dead letters %d, want the late record", len(w.d.DeadLetters()))
	}
}

func TestHoppingCountUpdatesEveryWindowOfARecord(t *testing.T) {
	w := newWindowedCount(t, window.Hopping(10, 5), processor.PolicyDeadLetter)
	w.pipe(t, "a", 7)
	w.pipe(t, "a", 12)
	wantResults(t, w.results(t),
		"a [0,10]=1", "a [5,15]=1",
		"a [5,15]=2", "a [10,20]=1")
}

func TestHoppingCountEmitFinalEmitsByStartThenKey(t *testing.T) {
	w := newWindowedCount(t, window.Hopping(10, 5), processor.PolicyDeadLetter, processor.EmitFinal(), processor.WindowRetention(time.Minute))
	w.pipe(t, "b", 7)
	w.pipe(t, "a", 8)
	w.pipe(t, "a", 30)
	wantResults(t, w.results(t), "a [0,10]=1", "b [0,10]=1", "a [5,15]=1", "b [5,15]=1")
}

func TestSlidingCountKeepsAWindowPerRecordBoundary(t *testing.T) {
	w := newWindowedCount(t, window.Sliding(10), processor.PolicyDeadLetter)
	w.pipe(t, "a", 20)
	w.pipe(t, "a", 25)
	wantResults(t, w.results(t),
		"a [10,20]=1",
		"a [21,31]=1", "a [15,25]=2")
}

func TestSlidingCountEmitFinalAfterTheWindowEndPlusGrace(t *testing.T) {
	w := newWindowedCount(t, window.Sliding(10).WithGrace(2), processor.PolicyDeadLetter, processor.EmitFinal(), processor.WindowRetention(time.Minute))
	w.pipe(t, "a", 20)
	w.pipe(t, "a", 25)
	w.pipe(t, "a", 27) // [10,20] closes once stream time > 20 + 2
	wantResults(t, w.results(t), "a [10,20]=1")
	w.pipe(t, "a", 32) // and [15,25] once it is > 27, [17,27] > 29
	wantResults(t, w.results(t), "a [10,20]=1", "a [15,25]=2", "a [17,27]=3")
	w.pipe(t, "z", 100)
	wantResults(t, w.results(t), "a [10,20]=1", "a [15,25]=2", "a [17,27]=3", "a [21,31]=2", "a [22,32]=3", "a [26,36]=2", "a [28,38]=1")
}

func TestSessionCountMergesSessionsAndRetractsTheMergedOnes(t *testing.T) {
	w := newWindowedCount(t, window.Session(5).WithGrace(10), processor.PolicyDeadLetter)
	w.pipe(t, "a", 10)
	w.pipe(t, "a", 20)
	w.pipe(t, "a", 15) // within 5 of both: one session [10,20]
	wantResults(t, w.results(t),
		"a [10,10]=1",
		"a [20,20]=1",
		"a [10,10] retracted", "a [20,20] retracted", "a [10,20]=3")
}

func TestSessionCountEmitFinalEmitsTheMergedSessionOnly(t *testing.T) {
	w := newWindowedCount(t, window.Session(5).WithGrace(10), processor.PolicyDeadLetter, processor.EmitFinal())
	w.pipe(t, "a", 10)
	w.pipe(t, "a", 20)
	w.pipe(t, "a", 15)
	w.pipe(t, "b", 35)
	wantResults(t, w.results(t))
	w.pipe(t, "b", 36) // stream time 36 > 20 + 5 + 10: [10,20] is final
	wantResults(t, w.results(t), "a [10,20]=3")
	w.pipe(t, "a", 12) // late: its session closed
	if len(w.d.DeadLetters()) != 1 {
		t.Fatalf("dead letters %d, want the late record", len(w.d.DeadLetters()))
	}
}

func TestWindowedReduceAndAggregate(t *testing.T) {
	topo := processor.New("windows")
	longest := processor.NewWindowedAggregation(topo, "longest", window.Tumbling(10), codec.String(), codec.String(),
		processor.Reduce[string](func(agg, v string) string {
			if len(v) > len(agg) {
				return v
			}
			return agg
		}))
	lengths := processor.NewWindowedAggregation(topo, "lengths", window.Session(5), codec.String(), codec.Int64(),
		processor.Aggregator[string, string, int64]{
			Init:  func() int64 { return 0 },
			Add:   func(_ string, v string, n int64) int64 { return n + int64(len(v)) },
			Merge: func(_ string, a, b int64) int64 { return a + b },
		})
	outL := processor.NewWindowedOutput[string, string](topo, "longest", codec.String())
	outN := processor.NewWindowedOutput[string, int64](topo, "lengths", codec.String())
	hl, hn := longest.Handler(outL), lengths.Handler(outN)
	in := processor.NewInput(topo, "words", codec.String(), codec.String(), func(ctx *processor.Context, k, v string) error {
		if err := hl(ctx, k, v); err != nil {
			return err
		}
		return hn(ctx, k, v)
	})
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, word := range []string{"a", "ccc", "bb"} {
		if err := d.PipeRecord(&kgo.Record{Topic: in.Topic(), Partition: -1, Key: []byte("k"), Value: []byte(word), Timestamp: time.UnixMilli(int64(i))}); err != nil {
			t.Fatal(err)
		}
	}
	gotL, _ := processor.ReadOutput(d, outL)
	gotN, _ := processor.ReadOutput(d, outN)
	if last := gotL[len(gotL)-1].Value; last.Value != "ccc" || last.Start != 0 || last.End != 10 {
		t.Fatalf("longest word: %+v", last)
	}
	if last := gotN[len(gotN)-1].Value; last.Value != 6 || last.Start != 0 || last.End != 2 {
		t.Fatalf("session length: %+v", last)
	}
}

func TestWindowedAggregationRejectsARetentionShorterThanWindowPlusGrace(t *testing.T) {
	topo := processor.New("windows")
	agg := processor.NewWindowedAggregation(topo, "counts", window.Tumbling(60_000).WithGrace(1000), codec.String(), codec.Int64(),
		processor.Count[string, string](), processor.WindowRetention(time.Second))
	processor.NewInput(topo, "events", codec.String(), codec.String(), agg.Handler(nil))
	err := topo.Validate()
	if err == nil || !strings.Contains(err.Error(), "retention.ms") || !strings.Contains(err.Error(), "61000") {
		t.Fatalf("Validate: %v, want the retention named with its minimum", err)
	}
}

func TestWindowsPastRetentionAreExpiredFromTheStore(t *testing.T) {
	w := newWindowedCount(t, window.Tumbling(60_000), processor.PolicyDeadLetter)
	w.pipe(t, "a", 1)
	w.pipe(t, "b", 60_001)
	w.pipe(t, "c", 400_000) // store time far past a's and b's segments
	keys := windowStoreKeys(t, w)
	for _, k := range []string{"a", "b"} {
		if keys[k] {
			t.Errorf("key %s's expired window is still stored", k)
		}
	}
	if !keys["c"] {
		t.Errorf("key c's live window is missing")
	}
}

// windowStoreKeys returns the keys with a window in the store.
func windowStoreKeys(t *testing.T, w *windowedCount) map[string]bool {
	t.Helper()
	ws, err := processor.ReadWindows(w.d, w.agg)
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string]bool)
	for _, r := range ws {
		got[r.Key] = true
	}
	return got
}

func headerOf(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func TestHoppingRecordLateForSomeWindowsStillUpdatesTheOthers(t *testing.T) {
	w := newWindowedCount(t, window.Hopping(10, 5), processor.PolicyDeadLetter)
	w.pipe(t, "a", 12)
	w.pipe(t, "a", 7) // [0,10) closed at stream time 12, [5,15) open
	wantResults(t, w.results(t),
		"a [5,15]=1", "a [10,20]=1",
		"a [5,15]=2")
	if len(w.d.DeadLetters()) != 0 {
		t.Fatal("a record that updated a window was dead-lettered")
	}
}

func TestSlidingRecordPastGraceIsDroppedAndOneWithinGraceCounts(t *testing.T) {
	w := newWindowedCount(t, window.Sliding(10).WithGrace(15), processor.PolicyDeadLetter)
	w.pipe(t, "a", 30)
	w.pipe(t, "a", 16) // its window [6,16] closes once stream time > 31
	w.pipe(t, "a", 4)  // [4,14] closed at 30 > 29: late
	wantResults(t, w.results(t),
		"a [20,30]=1",
		"a [6,16]=1")
	if len(w.d.DeadLetters()) != 1 {
		t.Fatalf("dead letters %d, want the late record", len(w.d.DeadLetters()))
	}
}

func TestSessionOutOfOrderRecordWithinGraceExtendsItsSession(t *testing.T) {
	w := newWindowedCount(t, window.Session(5).WithGrace(10), processor.PolicyDeadLetter)
	w.pipe(t, "a", 10)
	w.pipe(t, "a", 24) // a new session; [10,10] closes once stream time > 25
	w.pipe(t, "a", 8)  // out of order, within gap of [10,10]: joins it
	w.pipe(t, "a", 26) // joins [24,24]; [8,10] has closed
	w.pipe(t, "a", 9)  // late: dropped
	wantResults(t, w.results(t),
		"a [10,10]=1",
		"a [24,24]=1",
		"a [10,10] retracted", "a [8,10]=2",
		"a [24,24] retracted", "a [24,26]=2")
	if len(w.d.DeadLetters()) != 1 {
		t.Fatalf("dead letters %d, want the late record", len(w.d.DeadLetters()))
	}
}

// HandlerFunc hands results over as Windowed keys, here to an output keyed
// by key and window as Kafka Streams' windowed serdes key them.
func TestHandlerFuncEmitsWindowedKeysThroughTheWindowedKeyCodec(t *testing.T) {
	topo := processor.New("windows")
	agg := processor.NewWindowedAggregation(topo, "counts", window.Tumbling(10), codec.String(), codec.Int64(), processor.Count[string, string]())
	out := processor.NewOutput(topo, "counts", processor.WindowedKey(codec.String()), codec.Int64(), processor.AsStream())
	in := processor.NewInput(topo, "events", codec.String(), codec.String(),
		agg.HandlerFunc(func(ctx *processor.Context, w processor.Windowed[string], n int64, _ bool) error {
			return out.Emit(ctx, w, n)
		}))
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []int64{3, 14} {
		if err := d.PipeRecord(&kgo.Record{Topic: in.Topic(), Partition: -1, Key: []byte("k\x00ey"), Value: []byte("x"), Timestamp: time.UnixMilli(ts)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := processor.ReadOutput(d, out)
	if err != nil {
		t.Fatal(err)
	}
	want := []processor.Windowed[string]{
		{Key: "k\x00ey", Start: time.UnixMilli(0).UTC(), End: time.UnixMilli(10).UTC()},
		{Key: "k\x00ey", Start: time.UnixMilli(10).UTC(), End: time.UnixMilli(20).UTC()},
	}
	if len(got) != 2 || got[0].Key != want[0] || got[1].Key != want[1] || got[1].Value != 1 {
		t.Fatalf("emitted %+v, want %+v", got, want)
	}
	if _, err := processor.WindowedKey(codec.String()).Decode([]byte("short")); err == nil {
		t.Fatal("a windowed key shorter than its window decoded")
	}
}

// The TestDriver counts, per task, the windows records came too late for
// (rackstream_window_late_records_total), and ReadWindows names the task
// holding each window.
func TestDriverCountsLateWindowsPerTaskAndReadWindowsNamesTheTask(t *testing.T) {
	topo := processor.New("windows")
	agg := processor.NewWindowedAggregation(topo, "counts", window.Hopping(10, 5), codec.String(), codec.Int64(), processor.Count[string, string]())
	in := processor.NewInput(topo, "events", codec.String(), codec.String(), agg.Handler(nil))
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 2, ErrorPolicy: processor.PolicySkip})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		p   int32
		key string
		ts  int64
	}{
		{0, "a", 12},
		{0, "a", 7}, // late for [0,10), counted in [5,15)
		{0, "a", 1}, // late for [0,10), its only window
		{1, "b", 30},
		{1, "b", 2}, // late for [0,10): stream time is the task's
	} {
		if err := d.PipeRecord(&kgo.Record{Topic: in.Topic(), Partition: r.p, Key: []byte(r.key), Value: []byte("x"), Timestamp: time.UnixMilli(r.ts)}); err != nil {
			t.Fatal(err)
		}
	}
	if p0, p1 := processor.LateRecords(d, agg, 0), processor.LateRecords(d, agg, 1); p0 != 2 || p1 != 1 {
		t.Errorf("late windows %d in task 0 and %d in task 1, want 2 and 1", p0, p1)
	}
	ws, err := processor.ReadWindows(d, agg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, fmt.Sprintf("task %d: %s [%d,%d]=%d", w.Partition, w.Key, w.Start.UnixMilli(), w.End.UnixMilli(), w.Value))
	}
	wantResults(t, got,
		"task 0: a [5,15]=2", "task 0: a [10,20]=1",
		"task 1: b [25,35]=1", "task 1: b [30,40]=1")
}
