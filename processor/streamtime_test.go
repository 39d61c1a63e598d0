package processor_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
)

// at is epoch millisecond ms as a time.
func at(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// pipeAt pipes key and value to topic's partition 0, stamped ms.
func pipeAt(t *testing.T, d *processor.TestDriver, topic, key, value string, ms int64) {
	t.Helper()
	if err := d.PipeRecord(&kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value), Timestamp: at(ms)}); err != nil {
		t.Fatal(err)
	}
}

func TestStreamTimeIsTheLargestTimestampSeenAndNeverGoesBack(t *testing.T) {
	topo := processor.New("st")
	var seen []int64
	processor.NewInput(topo, "in", codec.String(), codec.String(), func(ctx *processor.Context, _, _ string) error {
		seen = append(seen, ctx.StreamTime().UnixMilli())
		return nil
	})
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := d.StreamTime(0); !st.IsZero() {
		t.Fatalf("stream time before any record: %v, want the zero Time", st)
	}
	for _, ms := range []int64{10, 30, 20, 30, 31} {
		pipeAt(t, d, "in", "k", "v", ms)
	}
	want := []int64{10, 30, 30, 30, 31}
	if len(seen) != len(want) {
		t.Fatalf("handler saw %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("handler saw stream times %v, want %v", seen, want)
		}
	}
	if st := d.StreamTime(0); !st.Equal(at(31)) {
		t.Fatalf("driver's stream time %v, want %v", st, at(31))
	}
}

func TestTimestampExtractorSetsTheRecordsTimeAndItsOutputs(t *testing.T) {
	topo := processor.New("ext")
	out := processor.NewOutput(topo, "out", codec.String(), codec.String())
	var stamps []time.Time
	fromValue := processor.WithTimestamp(func(r *kgo.Record) (time.Time, error) {
		ms, err := strconv.ParseInt(string(r.Value), 10, 64)
		return time.UnixMilli(ms), err
	})
	processor.NewInput(topo, "in", codec.String(), codec.String(), func(ctx *processor.Context, k, v string) error {
		stamps = append(stamps, ctx.Timestamp())
		return out.Emit(ctx, k, v)
	}, fromValue)
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pipeAt(t, d, "in", "k", "5000", 1) // the record's own timestamp (1) is ignored
	if len(stamps) != 1 || !stamps[0].Equal(at(5000)) {
		t.Fatalf("handler saw timestamps %v, want [%v]", stamps, at(5000))
	}
	if got := d.Emitted("out")[0].Timestamp; !got.Equal(at(5000)) {
		t.Fatalf("output stamped %v, want the extracted %v", got, at(5000))
	}
	if st := d.StreamTime(0); !st.Equal(at(5000)) {
		t.Fatalf("stream time %v, want the extracted %v", st, at(5000))
	}
}

func TestRecordsWithoutAValidTimestampFollowTheErrorPolicy(t *testing.T) {
	build := func(policy processor.ErrorPolicy) (*processor.TestDriver, *int) {
		topo := processor.New("badts")
		handled := new(int)
		processor.NewInput(topo, "in", codec.String(), codec.String(), func(*processor.Context, string, string) error {
			*handled++
			return nil
		}, processor.WithTimestamp(func(r *kgo.Record) (time.Time, error) {
			if string(r.Value) == "garbage" {
				return time.Time{}, errors.New("no time in it")
			}
			return r.Timestamp, nil
		}))
		d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{ErrorPolicy: policy})
		if err != nil {
			t.Fatal(err)
		}
		return d, handled
	}
	t.Run("dead-lettered with stage timestamp: a failed extractor or a negative time", func(t *testing.T) {
		d, handled := build(processor.PolicyDeadLetter)
		pipeAt(t, d, "in", "a", "garbage", 10)
		pipeAt(t, d, "in", "b", "fine", -5)
		pipeAt(t, d, "in", "c", "fine", 20)
		if *handled != 1 {
			t.Fatalf("handler called %d times, want once (the valid record)", *handled)
		}
		dl := d.DeadLetters()
		if len(dl) != 2 {
			t.Fatalf("%d dead letters, want 2", len(dl))
		}
		for _, r := range dl {
			if stage := header(r, processor.HeaderDLQStage); stage != processor.StageTimestamp {
				t.Fatalf("dead letter %q has stage %q, want %q", r.Key, stage, processor.StageTimestamp)
			}
		}
		if st := d.StreamTime(0); !st.Equal(at(20)) {
			t.Fatalf("stream time %v: invalid records must not move it", st)
		}
	})
	t.Run("error policy fail returns a PoisonError of stage timestamp", func(t *testing.T) {
		d, _ := build(processor.PolicyFail)
		err := d.PipeRecord(&kgo.Record{Topic: "in", Key: []byte("a"), Value: []byte("garbage"), Timestamp: at(1)})
		var pe *processor.PoisonError
		if !errors.As(err, &pe) || pe.Stage != processor.StageTimestamp {
			t.Fatalf("err = %v, want a PoisonError of stage %s", err, processor.StageTimestamp)
		}
	})
}

// header returns the value of r's last header named key.
func header(r *kgo.Record, key string) string {
	v := ""
	for _, h := range r.Headers {
		if h.Key == key {
			v = string(h.Value)
		}
	}
	return v
}
