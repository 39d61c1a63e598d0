package builtin

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
)

const tableTopic = "prices"

func setRow(t *testing.T, d *processor.TestDriver, global bool, key string, value []byte) {
	t.Helper()
	r := &kgo.Record{Topic: tableTopic, Partition: -1, Key: []byte(key), Value: value}
	var err error
	if global {
		err = d.PipeGlobalRecord(r)
	} else {
		err = d.PipeTableRecord(r)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestJoinEnrichesRecordsLeftAndInner: a left join emits every record,
// with "table": null where the table has no row (not yet, or deleted by a
// tombstone); an inner join only those it has a row for; stream tombstones
// are skipped by both.
func TestJoinEnrichesRecordsLeftAndInner(t *testing.T) {
	for _, tt := range []struct {
		kind config.JoinType
		want []string
	}{
		{config.JoinLeft, []string{
			`apple={"value":"o1","table":null}`, `apple={"value":{"n":2},"table":{"eur":1}}`,
			`pear={"value":"o3","table":null}`, `apple={"value":"o4","table":1.5}`, `apple={"value":"o5","table":null}`}},
		{config.JoinInner, []string{`apple={"value":{"n":2},"table":{"eur":1}}`, `apple={"value":"o4","table":1.5}`}},
	} {
		t.Run(string(tt.kind), func(t *testing.T) {
			b, d := driver(t, config.Processor{Type: config.ProcessorJoin, Join: tt.kind, TableTopic: tableTopic, OutputTopic: out})
			if b.Store() != tableTopic {
				t.Errorf("Store() = %q, want the table's topic %q", b.Store(), tableTopic)
			}
			pipe(t, d, "apple", []byte("o1"))
			setRow(t, d, false, "apple", []byte(`{"eur": 1}`))
			pipe(t, d, "apple", []byte(`{"n": 2}`))
			pipe(t, d, "pear", []byte("o3"))
			pipe(t, d, "pear", nil) // a stream tombstone: skipped
			setRow(t, d, false, "apple", []byte("1.5"))
			pipe(t, d, "apple", []byte("o4"))
			setRow(t, d, false, "apple", nil)
			pipe(t, d, "apple", []byte("o5"))
			if got := emitted(d); !slices.Equal(got, tt.want) {
				t.Errorf("emitted\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestJoinWithAGlobalTableByAField: a global table looked up by a field of
// the value (a string or a number); a value without the field is a poison
// record (dead-lettered by default).
func TestJoinWithAGlobalTableByAField(t *testing.T) {
	b, d := driver(t, config.Processor{Type: config.ProcessorJoin, Join: config.JoinLeft, TableTopic: tableTopic,
		TableGlobal: true, JoinKeyField: "user", OutputTopic: out})
	if b.Store() != "" {
		t.Errorf("Store() = %q, want none for a global table", b.Store())
	}
	setRow(t, d, true, "ann", []byte("Ann"))
	setRow(t, d, true, "7", []byte("Seven"))
	pipe(t, d, "o1", []byte(`{"user": "ann"}`))
	pipe(t, d, "o2", []byte(`{"user": 7}`))
	pipe(t, d, "o3", []byte(`{"user": "bob"}`))
	pipe(t, d, "o4", []byte(`{"who": "ann"}`))
	pipe(t, d, "o5", []byte(`not json`))
	want := []string{`o1={"value":{"user":"ann"},"table":"Ann"}`, `o2={"value":{"user":7},"table":"Seven"}`, `o3={"value":{"user":"bob"},"table":null}`}
	if got := emitted(d); !slices.Equal(got, want) {
		t.Errorf("emitted\n%q\nwant\n%q", got, want)
	}
	if n := len(d.DeadLetters()); n != 2 {
		t.Errorf("%d dead letters, want 2 (o4 without the field, o5 not JSON)", n)
	}
}

func TestJoinRequiresItsTableAndOutput(t *testing.T) {
	for _, p := range []config.Processor{
		{Type: config.ProcessorJoin, InputTopic: in, OutputTopic: out},
		{Type: config.ProcessorJoin, InputTopic: in, TableTopic: tableTopic},
	} {
		if _, err := New("app", p); err == nil {
			t.Errorf("New(%+v): no error", p)
		}
	}
}
