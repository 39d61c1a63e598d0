package kstreamsref

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

// groupByCount runs s through Rackstream's GroupBy and a count, on the
// TestDriver with partitions partitions: the output records (count and
// timestamp) in order, and each group's final count, sorted by group.
func groupByCount(t *testing.T, s GroupByScenario, partitions int32) (out, store []GroupCount) {
	t.Helper()
	topo := processor.New("kstreamsref")
	counts := processor.NewStore(topo, "counts", codec.String(), codec.Int64())
	emit := processor.NewOutput(topo, "counts", codec.String(), codec.Int64(), processor.AsStream())
	byGroup := processor.NewRepartition(topo, "by-group", codec.String(), codec.String(), func(ctx *processor.Context, group, _ string) error {
		n, _, err := counts.Get(ctx, group)
		if err != nil {
			return err
		}
		if err := counts.Put(ctx, group, n+1); err != nil {
			return err
		}
		return emit.Emit(ctx, group, n+1)
	})
	processor.NewInput(topo, "orders", codec.String(), codec.String(), processor.GroupBy(byGroup, func(_, group string) string { return group }))
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: partitions, ErrorPolicy: processor.PolicyFail})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.Records {
		rec := &kgo.Record{Topic: "orders", Partition: -1, Key: []byte(r.Key), Timestamp: time.UnixMilli(r.Timestamp)}
		if r.Group != nil {
			rec.Value = []byte(*r.Group)
		}
		if err := d.PipeRecord(rec); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
	}
	for _, r := range d.Emitted("counts") {
		n, err := codec.Int64().Decode(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, GroupCount{Key: string(r.Key), Value: n, Timestamp: r.Timestamp.UnixMilli()})
	}
	final, err := processor.StoreValues(d, counts)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range slices.Sorted(maps.Keys(final)) {
		store = append(store, GroupCount{Key: g, Value: final[g]})
	}
	return out, store
}

// A groupBy count through Rackstream's repartition topic counts what Kafka
// Streams 4.4.0's groupBy(...).count() counts, record for record: the same
// output, in the same order, with the same counts, and the same final
// store, on every generated scenario (tombstones and out-of-order
// timestamps included), with 1 and 4 partitions. The one difference is the
// output records' timestamps, checked here as documented: Rackstream's
// carry the timestamp of the record counted, Kafka's the largest timestamp
// among the group's records so far.
func TestGroupByCountEqualsKafkaStreams(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	jar, err := Build(ctx, ".")
	if errors.Is(err, ErrNoToolchain) {
		kafkatest.SkipOrFail(t, "the Kafka Streams reference needs Java and Maven: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Start(ctx, jar)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ref.Close(); err != nil {
			t.Error(err)
		}
	}()
	var records, outputs int
	for _, s := range GenerateGroupByScenarios(37, 40) {
		kafka, err := ref.RunGroupBy(s)
		if err != nil {
			t.Fatal(err)
		}
		records, outputs = records+len(s.Records), outputs+len(kafka.Output)
		want := maxTimestamps(s)
		for _, parts := range []int32{1, 4} {
			out, store := groupByCount(t, s, parts)
			if got, kafkaOut := counts(out), counts(kafka.Output); !slices.Equal(got, kafkaOut) {
				t.Errorf("%s, %d partitions: output\n rackstream %v\n kafka      %v", s.Name, parts, got, kafkaOut)
			}
			if got, kafkaStore := counts(store), counts(kafka.Store); !slices.Equal(got, kafkaStore) {
				t.Errorf("%s, %d partitions: store\n rackstream %v\n kafka      %v", s.Name, parts, got, kafkaStore)
			}
			for i, o := range out {
				if i < len(kafka.Output) && kafka.Output[i].Timestamp != want[i] {
					t.Errorf("%s: Kafka's output %d %v, want the group's largest timestamp %d", s.Name, i, kafka.Output[i], want[i])
				}
				if i < len(want) && o.Timestamp != counted(s)[i] {
					t.Errorf("%s: output %d %v, want the counted record's timestamp %d", s.Name, i, o, counted(s)[i])
				}
			}
		}
	}
	t.Logf("%d records, %d counts compared", records, outputs)
}

// counts renders counts as key=value, without timestamps.
func counts(cs []GroupCount) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%s=%d", c.Key, c.Value)
	}
	return out
}

// counted returns the timestamps of s's records that are counted (those
// with a group), in order.
func counted(s GroupByScenario) []int64 {
	var out []int64
	for _, r := range s.Records {
		if r.Group != nil {
			out = append(out, r.Timestamp)
		}
	}
	return out
}

// maxTimestamps returns, for each counted record of s, the largest
// timestamp among its group's counted records up to it.
func maxTimestamps(s GroupByScenario) []int64 {
	latest := map[string]int64{}
	var out []int64
	for _, r := range s.Records {
		if r.Group == nil {
			continue
		}
		ts, seen := latest[*r.Group]
		if !seen || r.Timestamp > ts {
			ts = r.Timestamp
		}
		latest[*r.Group] = ts
		out = append(out, ts)
	}
	return out
}
