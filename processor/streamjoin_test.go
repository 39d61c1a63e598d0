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

// streamJoinDriver is a topology joining "clicks" (left) with "views" (right),
// emitting to "joined".
type streamJoinDriver struct {
	d    *processor.TestDriver
	join *processor.StreamJoin[string, string, string]
}

func newStreamJoinDriver(t *testing.T, kind window.JoinKind, w window.JoinWindows) *streamJoinDriver {
	t.Helper()
	topo := processor.New("joins")
	j := processor.NewStreamJoin(topo, "clicks-views", kind, w, codec.String(), codec.String(), codec.String())
	out := processor.NewJoinedOutput[string, string, string](topo, "joined", codec.String())
	processor.NewInput(topo, "clicks", codec.String(), codec.String(), j.Left(out))
	processor.NewInput(topo, "views", codec.String(), codec.String(), j.Right(out))
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &streamJoinDriver{d: d, join: j}
}

func (j *streamJoinDriver) pipe(t *testing.T, topic, key, value string, ts int64) {
	t.Helper()
	r := &kgo.Record{Topic: topic, Partition: -1, Key: []byte(key), Timestamp: time.UnixMilli(ts)}
	if value != "" {
		r.Value = []byte(value)
	}
	if err := j.d.PipeRecord(r); err != nil {
		t.Fatal(err)
	}
}

// results renders the output, "key:left|right@ms", "-" for a missing side.
func (j *streamJoinDriver) results(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, r := range j.d.Emitted("joined") {
		v, err := codec.JSON[processor.Joined[string, string]]().Decode(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		side := func(s *string) string {
			if s == nil {
				return "-"
			}
			return *s
		}
		out = append(out, fmt.Sprintf("%s:%s|%s@%d", r.Key, side(v.Left), side(v.Right), r.Timestamp.UnixMilli()))
	}
	return out
}

func TestStreamJoinEmitsPairsAndUnmatchedRecordsOnClose(t *testing.T) {
	cases := []struct {
		name string
		kind window.JoinKind
		want []string
	}{
		{"inner", window.InnerJoin, []string{"u1:c1|v1@1005"}},
		{"left", window.LeftJoin, []string{"u1:c1|v1@1005", "u2:c2|-@1000"}},
		{"outer", window.OuterJoin, []string{"u1:c1|v1@1005", "u2:c2|-@1000", "u3:-|v3@1010"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := newStreamJoinDriver(t, c.kind, window.JoinTimeDifference(10).WithGrace(5))
			j.pipe(t, "clicks", "u1", "c1", 1000)
			j.pipe(t, "clicks", "u2", "c2", 1000)
			j.pipe(t, "views", "u1", "v1", 1005)
			j.pipe(t, "views", "u2", "", 1006) // a tombstone: skipped
			j.pipe(t, "views", "u3", "v3", 1010)
			if got := j.results(t); len(got) != 1 {
				t.Fatalf("before any window closed: %q, want only the pair", got)
			}
			j.pipe(t, "clicks", "closer", "x", 2000)
			got := strings.Join(j.results(t), " ")
			want := strings.Join(c.want, " ")
			if got != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestStreamJoinRejectsOptionsThatMeanNothingForAJoin(t *testing.T) {
	topo := processor.New("joins")
	processor.NewStreamJoin(topo, "j", window.LeftJoin, window.JoinWindows{Before: -1}, codec.String(), codec.String(), codec.String(),
		processor.EmitFinal())
	processor.NewInput(topo, "in", codec.String(), codec.String(), func(*processor.Context, string, string) error { return nil })
	err := topo.Validate()
	for _, want := range []string{`stream join "j"`, "before.ms", "EmitFinal"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
}
