package builtin

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
)

func TestCountByAFieldCountsPerValueOfTheField(t *testing.T) {
	b, d := driver(t, config.Processor{Type: config.ProcessorCount, OutputTopic: out, GroupByField: "country"})
	for i, v := range []string{`{"country":"FR"}`, `{"country":"DE"}`, `{"country":"FR"}`, `{"country":42}`} {
		pipe(t, d, "order-"+string(rune('a'+i)), []byte(v))
	}
	pipe(t, d, "order-z", nil) // a tombstone is not counted
	if fr, de, n := get(t, d, b.count, "FR"), get(t, d, b.count, "DE"), get(t, d, b.count, "42"); fr != 2 || de != 1 || n != 1 {
		t.Errorf("counts FR=%d DE=%d 42=%d, want 2, 1 and 1", fr, de, n)
	}
	if want := "FR=1 DE=1 FR=2 42=1"; strings.Join(emitted(d), " ") != want {
		t.Errorf("output %q, want %q", emitted(d), want)
	}
	if got := b.RepartitionTopic(); got != "app-count-repartition" {
		t.Errorf("repartition topic %q", got)
	}
	if got := len(d.Emitted("app-count-repartition")); got != 4 {
		t.Errorf("%d records through the repartition topic, want 4", got)
	}
}

func TestSumByAFieldSumsPerValueOfTheField(t *testing.T) {
	b, d := driver(t, config.Processor{Type: config.ProcessorSum, SumField: "cents", GroupByField: "country"})
	for i, v := range []string{`{"country":"FR","cents":150}`, `{"country":"DE","cents":"2.5"}`, `{"country":"FR","cents":-50}`} {
		pipe(t, d, "order-"+string(rune('a'+i)), []byte(v))
	}
	if fr, de := get(t, d, b.sum, "FR"), get(t, d, b.sum, "DE"); fr != "100" || de != "2.5" {
		t.Errorf("sums FR=%s DE=%s, want 100 and 2.5", fr, de)
	}
}

// A record without the field, or whose number does not parse, is
// undecodable at the input: dead-lettered from the input topic, never
// sent.
func TestGroupByDeadLettersRecordsItCannotKey(t *testing.T) {
	_, d := driver(t, config.Processor{Type: config.ProcessorSum, SumField: "cents", GroupByField: "country"})
	for _, v := range []string{`{"cents":1}`, `{"country":true,"cents":1}`, `{"country":"FR","cents":"x"}`, `not json`} {
		pipe(t, d, "k", []byte(v))
	}
	dls := d.DeadLetters()
	if len(dls) != 4 {
		t.Fatalf("%d dead letters, want 4", len(dls))
	}
	for _, dl := range dls {
		if h := headers(dl)[processor.HeaderDLQTopic]; h != in {
			t.Errorf("dead letter from %q, want the input %q", h, in)
		}
	}
	if n := len(d.Emitted("app-sum-repartition")); n != 0 {
		t.Errorf("%d records sent", n)
	}
}

func TestWindowedCountByAFieldKeepsTheRecordsTime(t *testing.T) {
	b, d := driver(t, config.Processor{Type: config.ProcessorCount, GroupByField: "country", TimestampField: "ts",
		Window: config.Window{Type: config.WindowTumbling, Size: 60_000, Retention: 3_600_000}})
	pipe(t, d, "a", []byte(`{"country":"FR","ts":1000}`))
	pipe(t, d, "b", []byte(`{"country":"FR","ts":61000}`))
	pipe(t, d, "c", []byte(`{"country":"DE","ts":62000}`))
	if got, want := windows(t, d, b.winCount), "FR[0,60000]=1 FR[60000,120000]=1 DE[60000,120000]=1"; !sameWords(got, want) {
		t.Errorf("store %s, want %s", got, want)
	}
}

func TestGroupByOnlyForCountAndSum(t *testing.T) {
	_, err := New("app", config.Processor{Type: config.ProcessorLatest, InputTopic: in, GroupByField: "country"})
	if err == nil || !strings.Contains(err.Error(), "processor.group.by.field") {
		t.Errorf("latest with a group-by field: %v", err)
	}
}

// sameWords reports whether a and b hold the same space-separated words,
// in any order.
func sameWords(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// TestTheDocumentedGroupByCountRuns loads the group-by example of
// docs/processors-and-tables.md and runs the built-in it describes.
func TestTheDocumentedGroupByCountRuns(t *testing.T) {
	b := documentedProcessor(t, "../../docs/processors-and-tables.md", "<!-- example: service/builtin's TestTheDocumentedGroupByCountRuns")
	d, err := processor.NewTestDriver(b.Topology(), processor.TestDriverOptions{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []string{"FR", "DE", "FR"} {
		v := `{"country": "` + c + `", "total": 12.5}`
		if err := d.PipeRecord(&kgo.Record{Topic: "orders", Partition: -1, Key: []byte{byte('a' + i)}, Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	if fr, de := get(t, d, b.count, "FR"), get(t, d, b.count, "DE"); fr != 2 || de != 1 {
		t.Errorf("counts FR=%d DE=%d, want 2 and 1", fr, de)
	}
	if got := b.RepartitionTopic(); got != "shop-count-repartition" {
		t.Errorf("repartition topic %q", got)
	}
}
