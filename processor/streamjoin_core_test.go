package processor_test

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/window"
	"github.com/rackstream/rackstream/window/kstreamsref"
)

// The runtime's join (its store layout, reads and expiry, through the
// TestDriver) answers every generated join scenario as package window's
// core does, which TestStreamJoinCoreEqualsKafkaStreams holds equal to
// Kafka Streams: the same results in the same order, with the same
// timestamps. Each partition of a scenario is one driver of one partition.
// Half the scenarios run again in seconds, where the stores' segments
// expire and the runtime deletes their records.
func TestStreamJoinRuntimeEqualsTheCore(t *testing.T) {
	list := kstreamsref.GenerateJoinScenarios(kstreamsref.JoinScenarioSeed, kstreamsref.JoinScenarioCount)
	for _, s := range list[:len(list)/2] {
		s.Join.BeforeMs, s.Join.AfterMs, s.Join.GraceMs = s.Join.BeforeMs*1000, s.Join.AfterMs*1000, s.Join.GraceMs*1000
		s.Records = slices.Clone(s.Records)
		for i := range s.Records {
			s.Records[i].Timestamp *= 1000
		}
		list = append(list, s)
	}
	for _, s := range list {
		runtimeEqualsCore(t, s)
	}
}

var joinKinds = map[kstreamsref.JoinKind]window.JoinKind{
	kstreamsref.Inner: window.InnerJoin, kstreamsref.Left: window.LeftJoin, kstreamsref.Outer: window.OuterJoin,
}

func runtimeEqualsCore(t *testing.T, s kstreamsref.JoinScenario) {
	t.Helper()
	core, err := kstreamsref.RunJoinCore(s)
	if err != nil {
		t.Fatal(err)
	}
	w := window.JoinWindows{Before: s.Join.BeforeMs, After: s.Join.AfterMs, Grace: s.Join.GraceMs}
	for p := range s.Partitions {
		topo := processor.New("joins")
		j := processor.NewStreamJoin(topo, "j", joinKinds[s.Join.Kind], w, codec.String(), codec.Int64(), codec.Int64())
		out := processor.NewJoinedOutput[string, int64, int64](topo, "joined", codec.String())
		processor.NewInput(topo, "left", codec.String(), codec.Int64(), j.Left(out))
		processor.NewInput(topo, "right", codec.String(), codec.Int64(), j.Right(out))
		d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range s.PartitionRecords(p) {
			v, _ := codec.Int64().Encode(r.Value)
			rec := &kgo.Record{Topic: r.Side, Partition: 0, Key: []byte(r.Key), Value: v, Timestamp: time.UnixMilli(r.Timestamp)}
			if err := d.PipeRecord(rec); err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
		}
		var got []string
		for _, r := range d.Emitted("joined") {
			v, err := codec.JSON[processor.Joined[int64, int64]]().Decode(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, kstreamsref.JoinOutput{Key: string(r.Key), Left: v.Left, Right: v.Right, Timestamp: r.Timestamp.UnixMilli()}.String())
		}
		var want []string
		for _, o := range core.Partitions[p].Output {
			want = append(want, o.String())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s partition %d (%s %+v):\n runtime %v\n core    %v", s.Name, p, s.Join.Kind, s.Join, got, want)
		}
	}
}
