package builtin

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
)

// pipeAt pipes a record with timestamp ms.
func pipeAt(t *testing.T, d *processor.TestDriver, key string, value []byte, ms int64) {
	t.Helper()
	if err := d.PipeRecord(&kgo.Record{Topic: in, Partition: -1, Key: []byte(key), Value: value, Timestamp: time.UnixMilli(ms)}); err != nil {
		t.Fatal(err)
	}
}

// windows renders a windowed aggregation's store as "key[start,end)=value"
// strings, sorted as ReadWindows returns them.
func windows[V, A any](t *testing.T, d *processor.TestDriver, a *processor.WindowedAggregation[[]byte, V, A]) string {
	t.Helper()
	ws, err := processor.ReadWindows(d, a)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, w := range ws {
		s = append(s, fmt.Sprintf("%s[%d,%d]=%v", w.Key, w.Start.UnixMilli(), w.End.UnixMilli(), w.Value))
	}
	return strings.Join(s, " ")
}

func TestWindowedCountEmitsEachUpdateUnderTheInputKey(t *testing.T) {
	b, d := driver(t, config.Processor{Type: config.ProcessorCount, OutputTopic: out,
		Window: config.Window{Type: config.WindowTumbling, Size: 60_000, Retention: 3_600_000}})
	pipeAt(t, d, "a", []byte("x"), 1_000)
	pipeAt(t, d, "a", []byte("x"), 59_999)
	pipeAt(t, d, "a", []byte("x"), 60_000)
	pipeAt(t, d, "a", nil, 60_001) // a tombstone is not counted
	want := `a={"start":0,"end":60000,"value":1} a={"start":0,"end":60000,"value":2} a={"start":60000,"end":120000,"value":1}`
	if got := strings.Join(emitted(d), " "); got != want {
		t.Errorf("output %s\nwant %s", got, want)
	}
	if got, want := windows(t, d, b.winCount), "a[0,60000]=2 a[60000,120000]=1"; got != want {
		t.Errorf("store %s, want %s", got, want)
	}
	if !b.Windowed() || b.Store() != "count" {
		t.Errorf("Windowed %v, Store %q", b.Windowed(), b.Store())
	}
}

func TestWindowedSumEmitsFinalResultsOnceAfterGrace(t *testing.T) {
	_, d := driver(t, config.Processor{Type: config.ProcessorSum, OutputTopic: out, SumField: "amount",
		Window: config.Window{Type: config.WindowHopping, Size: 10_000, Advance: 5_000, Grace: 1_000, Emit: config.WindowEmitFinal}})
	pipeAt(t, d, "a", []byte(`{"amount": 0.5}`), 6_000) // windows [0,10000) and [5000,15000)
	pipeAt(t, d, "a", []byte(`{"amount": "1.25"}`), 9_000)
	if got := emitted(d); len(got) != 0 {
		t.Fatalf("emitted %v before any window closed", got)
	}
	pipeAt(t, d, "a", []byte(`{"amount": 2}`), 11_000) // closes [0,10000) at 11000
	pipeAt(t, d, "a", []byte(`{"amount": 1}`), 16_000) // closes [5000,15000) at 16000
	want := `a={"start":0,"end":10000,"value":1.75} a={"start":5000,"end":15000,"value":3.75}`
	if got := strings.Join(emitted(d), " "); got != want {
		t.Errorf("output %s\nwant %s", got, want)
	}
}

func TestWindowedCountMergesSessions(t *testing.T) {
	b, d := driver(t, config.Processor{Type: config.ProcessorCount,
		Window: config.Window{Type: config.WindowSession, Gap: 1_000, Grace: 10_000}})
	pipeAt(t, d, "a", []byte("x"), 0)
	pipeAt(t, d, "a", []byte("x"), 2_000)
	if got, want := windows(t, d, b.winCount), "a[0,0]=1 a[2000,2000]=1"; got != want {
		t.Errorf("store %s, want %s", got, want)
	}
	pipeAt(t, d, "a", []byte("x"), 1_000) // within the gap of both
	if got, want := windows(t, d, b.winCount), "a[0,2000]=3"; got != want {
		t.Errorf("store %s, want %s", got, want)
	}
}

func TestSlidingCountKeepsItsWindows(t *testing.T) {
	b, d := driver(t, config.Processor{Type: config.ProcessorCount, Window: config.Window{Type: config.WindowSliding, Size: 1_000}})
	pipeAt(t, d, "a", []byte("x"), 5_000)
	if got, want := windows(t, d, b.winCount), "a[4000,5000]=1"; got != want {
		t.Errorf("store %s, want %s", got, want)
	}
}

func TestTimestampFieldGivesTheRecordTime(t *testing.T) {
	b, d := driver(t, config.Processor{Type: config.ProcessorCount, TimestampField: "ts",
		Window: config.Window{Type: config.WindowTumbling, Size: 60_000, Retention: 3_600_000}})
	pipeAt(t, d, "a", []byte(`{"ts": 120000}`), 1)
	pipeAt(t, d, "a", []byte(`{"ts": "180000"}`), 1)
	pipeAt(t, d, "a", []byte(`{"ts": "1970-01-01T00:04:00.5Z"}`), 1)
	if got, want := windows(t, d, b.winCount), "a[120000,180000]=1 a[180000,240000]=1 a[240000,300000]=1"; got != want {
		t.Errorf("store %s, want %s", got, want)
	}
}

func TestARecordWithoutItsTimestampFieldIsDeadLettered(t *testing.T) {
	for _, value := range []string{`{"other": 1}`, `not json`, `{"ts": true}`, `{"ts": "yesterday"}`} {
		t.Run(value, func(t *testing.T) {
			b, d := driver(t, config.Processor{Type: config.ProcessorLatest, TimestampField: "ts"})
			pipe(t, d, "a", []byte(value))
			pipe(t, d, "b", []byte(`{"ts": 1}`))
			dl := d.DeadLetters()
			if len(dl) != 1 {
				t.Fatalf("%d dead letters, want 1", len(dl))
			}
			h := headers(dl[0])
			if h[processor.HeaderDLQStage] != "timestamp" || !strings.Contains(h[processor.HeaderDLQError], "ts") {
				t.Errorf("dead-letter headers %v, want stage timestamp naming the field", h)
			}
			if has(d, b.latest, "a") || !has(d, b.latest, "b") {
				t.Error("the record without a time was stored, or the next one was not")
			}
		})
	}
}

// TestTheDocumentedWindowedCountRuns loads the properties example of
// docs/time-and-windows.md and runs the built-in it describes.
func TestTheDocumentedWindowedCountRuns(t *testing.T) {
	b := documentedProcessor(t, "../../docs/time-and-windows.md", "<!-- example: service/builtin's TestTheDocumentedWindowedCountRuns")
	d, err := processor.NewTestDriver(b.Topology(), processor.TestDriverOptions{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []string{"1000", "59000", "65000", "70000"} { // 70000 closes [0, 60000) after its grace
		if err := d.PipeRecord(&kgo.Record{Topic: "clicks", Partition: 0, Key: []byte("u1"), Value: []byte(`{"ts": ` + ts + `}`)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range d.Emitted("clicks-per-minute") {
		got = append(got, string(r.Key)+"="+string(r.Value))
	}
	if want := `u1={"start":0,"end":60000,"value":2}`; strings.Join(got, " ") != want {
		t.Errorf("final results %q, want %s", got, want)
	}
}
