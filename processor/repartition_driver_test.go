package processor_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
)

// Each re-keyed record is sent to the repartition topic's partition of its
// new key, and handled there: the count of a country is in the task that
// owns the country, whatever partitions its orders arrived in.
func TestDriverHandlesReKeyedRecordsInTheTaskOfTheirNewKey(t *testing.T) {
	topo := processor.New("shop")
	perCountry := ordersPerCountry(topo)
	const parts = 8
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	countries := []string{"FR", "DE", "NL", "IT", "ES"}
	for i := range 100 {
		pipeOrder(d, "order-"+strconv.Itoa(i), order{Country: countries[i%len(countries)]}, 0, i%60)
	}
	sent := d.Emitted(processor.RepartitionTopic("shop", "by-country"))
	if len(sent) != 100 {
		t.Fatalf("%d records sent through the repartition topic, want 100", len(sent))
	}
	for _, r := range sent {
		if want := partition.Murmur2().Partition(r.Key, parts); r.Partition != want {
			t.Errorf("record of %s sent to partition %d, want %d", r.Key, r.Partition, want)
		}
	}
	for _, c := range countries {
		n, found, err := processor.Lookup(d, perCountry, c)
		if err != nil || !found || n != 20 {
			t.Errorf("count of %s in its task: %d, %v, %v; want 20", c, n, found, err)
		}
	}
}

// SelectKey sends every record under its new key with its headers, a
// tombstone as a tombstone; GroupBy skips tombstones, as Kafka Streams'
// aggregations do.
func TestSelectKeyForwardsTombstonesAndHeadersAndGroupBySkipsTombstones(t *testing.T) {
	type seen struct {
		key, value string
		tombstone  bool
		header     string
	}
	for _, tc := range []struct {
		name    string
		handler func(r *processor.Repartition[string, string]) processor.Handler[string, string]
		want    []seen
	}{
		{"SelectKey", func(r *processor.Repartition[string, string]) processor.Handler[string, string] {
			return processor.SelectKey(r, func(k, _ string) string { return "new-" + k })
		}, []seen{{"new-a", "1", false, "h1"}, {"new-b", "", true, "h2"}}},
		{"GroupBy", func(r *processor.Repartition[string, string]) processor.Handler[string, string] {
			return processor.GroupBy(r, func(k, _ string) string { return "new-" + k })
		}, []seen{{"new-a", "1", false, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := processor.New("app")
			var got []seen
			r := processor.NewRepartition(topo, "rekeyed", codec.String(), codec.String(), func(ctx *processor.Context, k, v string) error {
				h, _ := ctx.Header("h")
				got = append(got, seen{k, v, ctx.Tombstone(), string(h)})
				return nil
			})
			processor.NewInput(topo, "in", codec.String(), codec.String(), tc.handler(r))
			d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range []*kgo.Record{
				{Topic: "in", Partition: -1, Key: []byte("a"), Value: []byte("1"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("h1")}}},
				{Topic: "in", Partition: -1, Key: []byte("b"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("h2")}}},
			} {
				if err := d.PipeRecord(rec); err != nil {
					t.Fatal(err)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("handled %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("record %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// A record sent through a repartition topic carries the time of the
// record that sent it.
func TestReKeyedRecordsKeepTheTimeOfTheirSender(t *testing.T) {
	topo := processor.New("app")
	var times []int64
	r := processor.NewRepartition(topo, "rekeyed", codec.String(), codec.String(), func(ctx *processor.Context, _, _ string) error {
		times = append(times, ctx.Timestamp().UnixMilli())
		return nil
	})
	processor.NewInput(topo, "in", codec.String(), codec.String(), processor.GroupBy(r, func(_, v string) string { return v }))
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []int64{5000, 1000, 9000} {
		if err := d.PipeRecord(&kgo.Record{Topic: "in", Partition: -1, Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(ts)}); err != nil {
			t.Fatal(err)
		}
	}
	if len(times) != 3 || times[0] != 5000 || times[1] != 1000 || times[2] != 9000 {
		t.Errorf("times %v, want [5000 1000 9000]", times)
	}
}
