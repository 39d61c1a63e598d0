package builtin

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
)

const views = "views"

// TestStreamJoinMeetsTwoStreamsWithinTheWindow: in stream mode the join
// emits {"left", "right"} for records of one key at most
// processor.join.window.ms apart; a left join adds each unmatched input
// record alone once its window and grace have passed, an outer join the
// second stream's too; an inner join neither.
func TestStreamJoinMeetsTwoStreamsWithinTheWindow(t *testing.T) {
	for _, tt := range []struct {
		kind config.JoinType
		want []string
	}{
		{config.JoinInner, []string{`u1={"left":"c1","right":{"page":1}}`}},
		{config.JoinLeft, []string{`u1={"left":"c1","right":{"page":1}}`, `u2={"left":"c2","right":null}`}},
		{config.JoinOuter, []string{`u1={"left":"c1","right":{"page":1}}`, `u2={"left":"c2","right":null}`, `u3={"left":null,"right":"v3"}`}},
	} {
		t.Run(string(tt.kind), func(t *testing.T) {
			b, err := New("app", config.Processor{Type: config.ProcessorJoin, Join: tt.kind, InputTopic: in, JoinStream: views,
				JoinWindow: 10, JoinGrace: 5, OutputTopic: out})
			if err != nil {
				t.Fatal(err)
			}
			// One partition: one task's stream time closes every key's windows.
			d, err := processor.NewTestDriver(b.Topology(), processor.TestDriverOptions{Partitions: 1})
			if err != nil {
				t.Fatal(err)
			}
			if b.Store() != "join" {
				t.Errorf("Store() = %q, want join", b.Store())
			}
			at := func(topic, key, value string, ms int64) {
				t.Helper()
				r := &kgo.Record{Topic: topic, Partition: -1, Key: []byte(key), Value: []byte(value), Timestamp: time.UnixMilli(ms)}
				if err := d.PipeRecord(r); err != nil {
					t.Fatal(err)
				}
			}
			at(in, "u1", "c1", 1000)
			at(in, "u2", "c2", 1000)
			at(views, "u1", `{"page": 1}`, 1008)
			at(views, "u3", "v3", 1020) // u2's window closes at 1015
			at(views, "u9", "x", 1100)  // closes every window of the others
			got := slices.DeleteFunc(emitted(d), func(s string) bool { return s[:2] == "u9" })
			if !slices.Equal(got, tt.want) {
				t.Errorf("emitted\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
