package processor_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
)

func noop[K, V any](*processor.Context, K, V) error { return nil }

func TestValidateReportsEveryDeclarationMistake(t *testing.T) {
	topo := processor.New("app")
	processor.NewInput(topo, "in", codec.String(), codec.String(), noop[string, string])
	processor.NewInput(topo, "in", codec.String(), codec.String(), noop[string, string])
	processor.NewInput(topo, "bad topic!", codec.String(), codec.String(), noop[string, string])
	processor.NewInput[string, string](topo, "nohandler", codec.String(), codec.String(), nil)
	processor.NewStore(topo, "s", codec.String(), codec.String())
	processor.NewStore(topo, "s", codec.String(), codec.String())
	processor.NewStore(topo, "other", codec.String(), codec.String(), processor.WithChangelog("app-s-changelog"))
	processor.NewStore(topo, "../x", codec.String(), codec.String())
	processor.NewOutput(topo, "app-s-changelog", codec.String(), codec.String())
	processor.NewOutput(topo, "out", codec.String(), codec.String())
	processor.NewOutput(topo, "out", codec.String(), codec.String())

	err := topo.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`topology app:`,
		`input "in" declared twice`,
		`input "bad topic!": "bad topic!" contains characters other than`,
		`input "nohandler": key codec, value codec and handler are required`,
		`store "s" declared twice`,
		`store "other": changelog "app-s-changelog" is already another store's`,
		`store "../x": a name is letters, digits`,
		`output "out" declared twice`,
		`output "app-s-changelog" is store "s"'s changelog`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
	if _, derr := processor.NewTestDriver(topo, processor.TestDriverOptions{}); derr == nil {
		t.Error("NewTestDriver accepted an invalid topology")
	}
}

func TestValidateRequiresAnInputAndAValidApplicationID(t *testing.T) {
	err := processor.New("").Validate()
	if err == nil || !strings.Contains(err.Error(), "application id: empty name") || !strings.Contains(err.Error(), "no input topic declared") {
		t.Errorf("got %v", err)
	}
}

func TestTopologyDescribesItsTopicsAndStores(t *testing.T) {
	topo := processor.New("app")
	processor.NewInput(topo, "a", codec.String(), codec.String(), noop[string, string])
	processor.NewInput(topo, "b", codec.String(), codec.Int64(), noop[string, int64])
	processor.NewStore(topo, "counts", codec.String(), codec.Int64())
	processor.NewStore(topo, "adopted", codec.String(), codec.JSON[map[string]int](), processor.WithChangelog("legacy-table"))
	processor.NewOutput(topo, "out", codec.String(), codec.Int64())
	if err := topo.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(topo.InputTopics(), topo.OutputTopics(), topo.ChangelogTopics()); got != "[a b] [out] [app-counts-changelog legacy-table]" {
		t.Errorf("topics: %s", got)
	}
	stores := topo.Stores()
	if v, err := stores[0].Render([]byte("42")); err != nil || v != int64(42) {
		t.Errorf("counts renders 42 as %#v, %v", v, err)
	}
	if v, err := stores[1].Render([]byte(`{"x":1}`)); err != nil || fmt.Sprint(v) != "map[x:1]" {
		t.Errorf("adopted renders as %#v, %v", v, err)
	}
}

func TestHandlerSeesTheRecordAndItsOwnWrites(t *testing.T) {
	topo := processor.New("app")
	s := processor.NewStore(topo, "s", codec.String(), codec.String())
	var seen []string
	in := processor.NewInput(topo, "in", codec.String(), codec.String(), func(ctx *processor.Context, k, v string) error {
		h, _ := ctx.Header("h")
		seen = append(seen, fmt.Sprintf("%s/%d@%d ts=%d h=%s key=%q value=%q raw=%q tomb=%v",
			ctx.Topic(), ctx.Partition(), ctx.Offset(), ctx.Timestamp().UnixMilli(), h, k, v, ctx.Value(), ctx.Tombstone()))
		if err := s.Put(ctx, k, v+"!"); err != nil {
			return err
		}
		got, found, err := s.Get(ctx, k)
		seen = append(seen, fmt.Sprintf("read own write: %q %v %v", got, found, err))
		if err := s.Delete(ctx, k); err != nil {
			return err
		}
		_, found, _ = s.Get(ctx, k)
		seen = append(seen, fmt.Sprintf("after delete: found=%v", found))
		return s.Put(ctx, k, "final")
	})
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.UnixMilli(1700000000000)
	if err := d.PipeRecord(&kgo.Record{Topic: "in", Partition: 2, Key: []byte("k"), Value: []byte("v"), Timestamp: ts,
		Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("1")}, {Key: "h", Value: []byte("2")}}}); err != nil {
		t.Fatal(err)
	}
	if err := d.PipeRecord(&kgo.Record{Topic: "in", Partition: 2, Key: []byte("k"), Timestamp: ts}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`in/2@0 ts=1700000000000 h=2 key="k" value="v" raw="v" tomb=false`,
		`read own write: "v!" true <nil>`,
		`after delete: found=false`,
		`in/2@1 ts=1700000000000 h= key="k" value="" raw="" tomb=true`,
		`read own write: "!" true <nil>`,
		`after delete: found=false`,
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("handler saw:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	_ = in
}

// A failing handler's writes and emits are discarded on each attempt; after
// the retries the record is dead-lettered, and the next record proceeds.
func TestFailingHandlerIsRetriedThenDeadLetteredWithoutItsWrites(t *testing.T) {
	topo := processor.New("app")
	s := processor.NewStore(topo, "s", codec.String(), codec.Int64())
	out := processor.NewOutput(topo, "out", codec.String(), codec.Int64())
	calls := map[string]int{}
	in := processor.NewInput(topo, "in", codec.String(), codec.Int64(), func(ctx *processor.Context, k string, v int64) error {
		calls[k]++
		if err := s.Put(ctx, k, v); err != nil {
			return err
		}
		if err := out.Emit(ctx, k, v); err != nil {
			return err
		}
		if k == "bad" {
			return fmt.Errorf("attempt %d failed", ctx.Attempt())
		}
		return nil
	})
	d, _ := processor.NewTestDriver(topo, processor.TestDriverOptions{Retry: processor.Retry{Attempts: 4}})
	for _, k := range []string{"ok1", "bad", "ok2"} {
		if err := processor.Pipe(d, in, k, 7); err != nil {
			t.Fatal(err)
		}
	}
	if calls["bad"] != 4 || calls["ok1"] != 1 || calls["ok2"] != 1 {
		t.Errorf("handler calls %v: want 4 for bad, 1 for the others", calls)
	}
	if _, found, _ := processor.Lookup(d, s, "bad"); found {
		t.Error("the failed record's store write was applied")
	}
	emitted, _ := processor.ReadOutput(d, out)
	if fmt.Sprint(emitted) != "[{ok1 7 false} {ok2 7 false}]" {
		t.Errorf("emitted %v: the failed record's emits must be dropped", emitted)
	}
	dls := d.DeadLetters()
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	h := headers(dls[0])
	if h[processor.HeaderDLQStage] != "handler" || h[processor.HeaderDLQAttempts] != "4" ||
		h[processor.HeaderDLQError] != "attempt 3 failed" || h[processor.HeaderDLQOffset] != "1" || h[processor.HeaderDLQTopic] != "in" {
		t.Errorf("dead letter headers %v", h)
	}
	if string(dls[0].Key) != "bad" || string(dls[0].Value) != "7" || dls[0].Topic != "app-dlq" {
		t.Errorf("dead letter %s %q=%q: want the original bytes in app-dlq", dls[0].Topic, dls[0].Key, dls[0].Value)
	}
}

func headers(r *kgo.Record) map[string]string {
	m := map[string]string{}
	for _, h := range r.Headers {
		m[h.Key] = string(h.Value)
	}
	return m
}

func TestPoisonRecordsFollowTheErrorPolicy(t *testing.T) {
	build := func() (*processor.Topology, *int) {
		topo := processor.New("app")
		calls := new(int)
		processor.NewInput(topo, "in", codec.Int64(), codec.JSON[map[string]int](), func(ctx *processor.Context, k int64, v map[string]int) error {
			*calls++
			switch v["do"] {
			case 1:
				return processor.Permanent(errors.New("permanent failure"))
			case 2:
				panic("boom")
			}
			return nil
		})
		return topo, calls
	}
	poison := []struct {
		name, key, value, stage, errText string
	}{
		{"undecodable key", "x1", `{}`, "decode-key", `decode int64 from "x1"`},
		{"undecodable value", "1", `{`, "decode-value", `decode JSON "{"`},
		{"permanent handler error", "2", `{"do":1}`, "handler", "permanent failure"},
		{"handler panic", "3", `{"do":2}`, "handler", "handler panicked: boom"},
	}
	for _, p := range poison {
		t.Run("dlq/"+p.name, func(t *testing.T) {
			topo, calls := build()
			d, _ := processor.NewTestDriver(topo, processor.TestDriverOptions{})
			if err := d.PipeRecord(&kgo.Record{Topic: "in", Key: []byte(p.key), Value: []byte(p.value)}); err != nil {
				t.Fatal(err)
			}
			if *calls > 1 {
				t.Errorf("handler called %d times: decode errors, permanent errors and panics are not retried", *calls)
			}
			dls := d.DeadLetters()
			if len(dls) != 1 {
				t.Fatalf("%d dead letters", len(dls))
			}
			h := headers(dls[0])
			if h[processor.HeaderDLQStage] != p.stage || !strings.Contains(h[processor.HeaderDLQError], p.errText) {
				t.Errorf("headers %v: want stage %s and error containing %q", h, p.stage, p.errText)
			}
		})
		t.Run("skip/"+p.name, func(t *testing.T) {
			topo, _ := build()
			d, _ := processor.NewTestDriver(topo, processor.TestDriverOptions{ErrorPolicy: processor.PolicySkip})
			if err := d.PipeRecord(&kgo.Record{Topic: "in", Key: []byte(p.key), Value: []byte(p.value)}); err != nil {
				t.Fatal(err)
			}
			if len(d.DeadLetters()) != 0 {
				t.Error("skip dead-lettered the record")
			}
		})
		t.Run("fail/"+p.name, func(t *testing.T) {
			topo, _ := build()
			d, _ := processor.NewTestDriver(topo, processor.TestDriverOptions{ErrorPolicy: processor.PolicyFail})
			err := d.PipeRecord(&kgo.Record{Topic: "in", Key: []byte(p.key), Value: []byte(p.value)})
			var pe *processor.PoisonError
			if !errors.As(err, &pe) || pe.Stage != p.stage || pe.Topic != "in" || pe.Offset != 0 {
				t.Fatalf("got %v, want a PoisonError at in/0@0 stage %s", err, p.stage)
			}
			if !strings.Contains(err.Error(), "poison record in/0@0 ("+p.stage+")") {
				t.Errorf("error %q does not say where", err)
			}
		})
	}
}

func TestParseErrorPolicy(t *testing.T) {
	for in, want := range map[string]processor.ErrorPolicy{"": "dlq", "dlq": "dlq", "skip": "skip", "continue": "skip", "fail": "fail"} {
		if got, err := processor.ParseErrorPolicy(in); err != nil || got != want {
			t.Errorf("ParseErrorPolicy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := processor.ParseErrorPolicy("ignore"); err == nil || !strings.Contains(err.Error(), `"ignore"`) {
		t.Errorf("ParseErrorPolicy(ignore): %v", err)
	}
}

func TestEmitsArePartitionedByTheConfiguredPartitioner(t *testing.T) {
	topo := processor.New("app")
	out := processor.NewOutput(topo, "out", codec.String(), codec.String())
	in := processor.NewInput(topo, "in", codec.String(), codec.String(), func(ctx *processor.Context, k, v string) error {
		return out.Emit(ctx, v, k) // re-keyed
	})
	for _, p := range []partition.Partitioner{partition.Murmur2(), partition.FNV1a(), partition.CRC32()} {
		d, _ := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 12, Partitioner: p})
		for i := 0; i < 100; i++ {
			_ = processor.Pipe(d, in, "k", fmt.Sprint("user-", i))
		}
		for _, r := range d.Emitted("out") {
			if want := p.Partition(r.Key, 12); r.Partition != want {
				t.Errorf("%s: %q emitted to partition %d, want %d", p.Name(), r.Key, r.Partition, want)
			}
		}
	}
}

func TestStoreFromAnotherTopologyIsAnError(t *testing.T) {
	other := processor.New("other")
	foreign := processor.NewStore(other, "s", codec.String(), codec.String())
	topo := processor.New("app")
	var gotErr error
	in := processor.NewInput(topo, "in", codec.String(), codec.String(), func(ctx *processor.Context, k, v string) error {
		gotErr = foreign.Put(ctx, k, v)
		return gotErr
	})
	d, _ := processor.NewTestDriver(topo, processor.TestDriverOptions{})
	_ = processor.Pipe(d, in, "k", "v")
	if gotErr == nil || !strings.Contains(gotErr.Error(), "store s belongs to topology other, not to app") {
		t.Errorf("got %v", gotErr)
	}
}
