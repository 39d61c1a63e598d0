package builtin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
)

const (
	in  = "events"
	out = "updates"
)

// driver builds the built-in processor p and a TestDriver over it.
func driver(t *testing.T, p config.Processor) (*Processor, *processor.TestDriver) {
	t.Helper()
	if p.InputTopic == "" {
		p.InputTopic = in
	}
	b, err := New("app", p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := processor.NewTestDriver(b.Topology(), processor.TestDriverOptions{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	return b, d
}

// get looks key up in s, the way a query of the key's task would.
func get[V any](t *testing.T, d *processor.TestDriver, s *processor.Store[[]byte, V], key string) V {
	t.Helper()
	v, _, err := processor.Lookup(d, s, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func has[V any](d *processor.TestDriver, s *processor.Store[[]byte, V], key string) bool {
	_, found, _ := processor.Lookup(d, s, []byte(key))
	return found
}

func pipe(t *testing.T, d *processor.TestDriver, key string, value []byte) {
	t.Helper()
	if err := d.PipeRecord(&kgo.Record{Topic: in, Partition: -1, Key: []byte(key), Value: value}); err != nil {
		t.Fatal(err)
	}
}

// emitted returns the output's records as key=value strings ("key=<nil>"
// for a tombstone).
func emitted(d *processor.TestDriver) []string {
	var s []string
	for _, r := range d.Emitted(out) {
		v := "<nil>"
		if r.Value != nil {
			v = string(r.Value)
		}
		s = append(s, string(r.Key)+"="+v)
	}
	return s
}

func TestLatestKeepsTheLastValuePerKeyAndTombstonesDelete(t *testing.T) {
	b, d := driver(t, config.Processor{Type: config.ProcessorLatest, OutputTopic: out})
	pipe(t, d, "a", []byte("1"))
	pipe(t, d, "b", []byte(`{"x": 2}`))
	pipe(t, d, "a", []byte("3"))
	pipe(t, d, "b", nil)
	if a := get(t, d, b.latest, "a"); string(a) != "3" || has(d, b.latest, "b") {
		t.Errorf("store a=%q, b present %v; want a=3 and b deleted", a, has(d, b.latest, "b"))
	}
	if want := []string{"a=1", `b={"x": 2}`, "a=3", "b=<nil>"}; strings.Join(emitted(d), " ") != strings.Join(want, " ") {
		t.Errorf("output %q, want %q", emitted(d), want)
	}
	if b.Store() != "latest" {
		t.Errorf("store name %q", b.Store())
	}
}

func TestCountCountsRecordsPerKeyAndIgnoresTombstones(t *testing.T) {
	b, d := driver(t, config.Processor{Type: config.ProcessorCount, OutputTopic: out})
	for _, k := range []string{"a", "b", "a", "a"} {
		pipe(t, d, k, []byte("x"))
	}
	pipe(t, d, "a", nil)
	pipe(t, d, "c", []byte{}) // an empty value is a record, not a tombstone
	if a, bb, c := get(t, d, b.count, "a"), get(t, d, b.count, "b"), get(t, d, b.count, "c"); a != 3 || bb != 1 || c != 1 {
		t.Errorf("counts a=%d b=%d c=%d, want a=3 b=1 c=1", a, bb, c)
	}
	if want := "a=1 b=1 a=2 a=3 c=1"; strings.Join(emitted(d), " ") != want {
		t.Errorf("output %q, want %q", emitted(d), want)
	}
}

func TestCountWithoutOutputEmitsNothing(t *testing.T) {
	_, d := driver(t, config.Processor{Type: config.ProcessorCount})
	pipe(t, d, "a", []byte("x"))
	if len(d.Emitted(out)) != 0 {
		t.Errorf("emitted %v without an output topic", emitted(d))
	}
}

func TestSumAddsDecimalValuesExactly(t *testing.T) {
	b, d := driver(t, config.Processor{Type: config.ProcessorSum, OutputTopic: out})
	for _, v := range []string{"0.1", "0.2", "-0.3", "10", " 5 ", "1e2", "+.5"} {
		pipe(t, d, "a", []byte(v))
	}
	pipe(t, d, "a", nil) // ignored
	if a := get(t, d, b.sum, "a"); a != "115.5" {
		t.Errorf("sum %q, want 115.5 (exact: 0.1+0.2-0.3 is 0)", a)
	}
	if want := "a=0.1 a=0.3 a=0.0 a=10.0 a=15.0 a=115.0 a=115.5"; strings.Join(emitted(d), " ") != want {
		t.Errorf("output %q, want %q", emitted(d), want)
	}
}

func TestSumReadsANamedJSONField(t *testing.T) {
	b, d := driver(t, config.Processor{Type: config.ProcessorSum, SumField: "amount"})
	pipe(t, d, "a", []byte(`{"amount": 2.5, "other": 1}`))
	pipe(t, d, "a", []byte(`{"amount": "4"}`))
	pipe(t, d, "b", []byte(`{"amount": -1}`))
	if a, bb := get(t, d, b.sum, "a"), get(t, d, b.sum, "b"); a != "6.5" || bb != "-1" {
		t.Errorf("sums a=%s b=%s, want a=6.5 b=-1", a, bb)
	}
}

func TestSumSendsValuesThatAreNotNumbersToTheDeadLetterTopic(t *testing.T) {
	for _, tc := range []struct {
		name, field, value, want string
	}{
		{"text", "", "twelve", "not a decimal number"},
		{"fraction syntax", "", "1/3", "not a decimal number"},
		{"huge exponent", "", "1e999999999", "exponent"},
		{"too long", "", strings.Repeat("9", 101), "at most 100"},
		{"not JSON", "amount", "12", "not a JSON object"},
		{"missing field", "amount", `{"amt": 1}`, `no field "amount"`},
		{"field not a number", "amount", `{"amount": true}`, `field "amount"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, d := driver(t, config.Processor{Type: config.ProcessorSum, SumField: tc.field})
			pipe(t, d, "a", []byte(tc.value))
			pipe(t, d, "a", []byte(numberFor(tc.field, "2")))
			dl := d.DeadLetters()
			if len(dl) != 1 {
				t.Fatalf("%d dead letters, want 1", len(dl))
			}
			h := headers(dl[0])
			if h[processor.HeaderDLQStage] != processor.StageDecodeValue || !strings.Contains(h[processor.HeaderDLQError], tc.want) {
				t.Errorf("dead-letter headers %v, want stage %s and an error with %q", h, processor.StageDecodeValue, tc.want)
			}
			if a := get(t, d, b.sum, "a"); a != "2" {
				t.Errorf("sum %q after the poison record, want 2 (the partition goes on)", a)
			}
		})
	}
}

func numberFor(field, n string) string {
	if field == "" {
		return n
	}
	return `{"` + field + `": ` + n + `}`
}

func TestValuesRenderAsJSONTextOrBase64(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{[]byte(`{"a": [1, 2]}`), `{"a":[1,2]}`},
		{[]byte("42"), `42`},
		{[]byte("hello"), `"hello"`},
		{[]byte{0xff, 0x00}, `"/wA="`},
		{[]byte{}, `""`},
	} {
		b, err := json.Marshal(Value(tc.in))
		if err != nil || string(b) != tc.want {
			t.Errorf("%q renders as %s (%v), want %s", tc.in, b, err, tc.want)
		}
	}
	if b, _ := json.Marshal(Decimal("-1.50")); string(b) != "-1.50" {
		t.Errorf("decimal renders as %s", b)
	}
}

func TestNewRejectsMissingOrUnknownSettings(t *testing.T) {
	for _, tc := range []struct {
		p    config.Processor
		want string
	}{
		{config.Processor{Type: config.ProcessorCount}, "processor.input.topic"},
		{config.Processor{InputTopic: in}, "processor.type"},
		{config.Processor{Type: "median", InputTopic: in}, `unknown processor.type "median"`},
		{config.Processor{Type: config.ProcessorCount, InputTopic: in, OutputTopic: in}, "consume its own updates"},
		{config.Processor{Type: config.ProcessorCount, InputTopic: in, ChangelogTopic: in}, "changelog"},
	} {
		_, err := New("app", tc.p)
		switch {
		case err == nil || !strings.Contains(err.Error(), tc.want):
			t.Errorf("%+v: error %v, want one with %q", tc.p, err, tc.want)
		}
	}
}

func TestChangelogTopicIsConfigurable(t *testing.T) {
	b, err := New("app", config.Processor{Type: config.ProcessorLatest, InputTopic: in, ChangelogTopic: "goka-table"})
	if err != nil {
		t.Fatal(err)
	}
	if cl := b.Topology().ChangelogTopics(); len(cl) != 1 || cl[0] != "goka-table" {
		t.Errorf("changelogs %v", cl)
	}
	b, _ = New("app", config.Processor{Type: config.ProcessorLatest, InputTopic: in})
	if cl := b.Topology().ChangelogTopics(); cl[0] != "app-latest-changelog" {
		t.Errorf("default changelog %v", cl)
	}
}

// headers returns r's headers by key.
func headers(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	return h
}
