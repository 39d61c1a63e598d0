package processor

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/window"
)

// A record that emitted unmatched records alone and is processed again
// (its output lost, its changelog kept, as a crash under at-least-once can
// leave them) emits them again, from its mark: they are never lost. Once
// the record's offset is committed its mark is dropped.
func TestStreamJoinReplayedRecordEmitsItsUnmatchedRecordsAgain(t *testing.T) {
	topo := New("joins")
	j := NewStreamJoin(topo, "j", window.LeftJoin, window.JoinTimeDifference(10), codec.String(), codec.String(), codec.String())
	out := NewJoinedOutput[string, string, string](topo, "joined", codec.String())
	NewInput(topo, "clicks", codec.String(), codec.String(), j.Left(out))
	NewInput(topo, "views", codec.String(), codec.String(), j.Right(out))
	d, err := NewTestDriver(topo, TestDriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pipe := func(key string, ts int64) *kgo.Record {
		r := &kgo.Record{Topic: "clicks", Partition: 0, Key: []byte(key), Value: []byte(key), Timestamp: time.UnixMilli(ts)}
		if err := d.PipeRecord(r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	emitted := func() []string {
		var keys []string
		for _, r := range d.Emitted("joined") {
			keys = append(keys, string(r.Key))
		}
		return keys
	}
	pipe("a", 100)
	closer := pipe("z", 200) // emits a alone
	if got := emitted(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("emitted %q, want a alone", got)
	}
	// A replay: the closer again, at its own offset.
	d.offsets["clicks"][0] = closer.Offset
	closer.Offset = 0
	if err := d.PipeRecord(closer); err != nil {
		t.Fatal(err)
	}
	if got := emitted(); len(got) != 2 || got[1] != "a" {
		t.Fatalf("after the replay, emitted %q: want a again", got)
	}
	pipe("y", 201) // the closer's offset is committed now: its mark goes
	m, _, _ := d.get(0, j.spec, joinStateKey)
	meta, err := decodeJoinMeta(m)
	if err != nil || meta.marks != 0 {
		t.Fatalf("marks %d (%v) after the commit, want 0", meta.marks, err)
	}
}

// A record too late for its own side's store (its segment expired) is
// still joined, and counted late for the join's store as Kafka Streams
// counts it in dropped-records-total, without being dropped.
func TestStreamJoinCountsARecordTooLateForItsStore(t *testing.T) {
	topo := New("joins")
	j := NewStreamJoin(topo, "j", window.InnerJoin, window.JoinTimeDifference(1000), codec.String(), codec.String(), codec.String())
	out := NewJoinedOutput[string, string, string](topo, "joined", codec.String())
	NewInput(topo, "clicks", codec.String(), codec.String(), j.Left(out))
	NewInput(topo, "views", codec.String(), codec.String(), j.Right(out))
	d, err := NewTestDriver(topo, TestDriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pipe := func(topic string, ts int64) {
		r := &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte(topic), Timestamp: time.UnixMilli(ts)}
		if err := d.PipeRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	pipe("views", 10_000)
	pipe("clicks", 500_000) // the clicks' store is at 500 s: segments of a minute before 440 s are gone
	if len(d.proc.late) != 0 {
		t.Fatalf("late %+v for a record in time", d.proc.late)
	}
	pipe("clicks", 10_500) // meets the view, but its own segment has expired
	if got := len(d.Emitted("joined")); got != 1 {
		t.Fatalf("%d results, want the late click's pair", got)
	}
	if len(d.proc.late) != 1 || d.proc.late[0].store != j.spec || d.proc.late[0].dropped {
		t.Fatalf("late %+v, want one mark of the join's store, not dropped", d.proc.late)
	}
}
