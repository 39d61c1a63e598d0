package processor_test

import (
	"fmt"
	"sort"
	"strings"

	gokacodec "github.com/lovoo/goka/codec"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
)

// A per-key count: the store holds the running count of each key, and every
// update is emitted to an output topic.
func Example() {
	topo := processor.New("click-counter")
	counts := processor.NewStore(topo, "counts", codec.String(), codec.Int64())
	updates := processor.NewOutput(topo, "click-counts", codec.String(), codec.Int64())
	clicks := processor.NewInput(topo, "clicks", codec.String(), codec.String(),
		func(ctx *processor.Context, user, page string) error {
			n, _, err := counts.Get(ctx, user)
			if err != nil {
				return err
			}
			n++
			if err := counts.Put(ctx, user, n); err != nil {
				return err
			}
			return updates.Emit(ctx, user, n)
		})

	// The TestDriver runs the topology in memory; processor.Run runs it on Kafka.
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, user := range []string{"ann", "bob", "ann", "cid", "ann"} {
		if err := processor.Pipe(d, clicks, user, "/home"); err != nil {
			fmt.Println(err)
		}
	}
	out, _ := processor.ReadOutput(d, updates)
	for _, kv := range out {
		fmt.Println(kv.Key, kv.Value)
	}
	n, _, _ := processor.Lookup(d, counts, "ann")
	fmt.Println("ann in the store:", n)
	// Output:
	// ann 1
	// bob 1
	// ann 2
	// cid 1
	// ann 3
	// ann in the store: 3
}

// Records that do not decode go to the dead-letter topic with headers naming
// where they came from and why; the partition moves on.
func Example_deadLetters() {
	type order struct {
		ID    string  `json:"id"`
		Total float64 `json:"total"`
	}
	topo := processor.New("orders")
	totals := processor.NewStore(topo, "totals", codec.String(), codec.JSON[float64]())
	processor.NewInput(topo, "orders", codec.String(), codec.JSON[order](),
		func(ctx *processor.Context, customer string, o order) error {
			sum, _, err := totals.Get(ctx, customer)
			if err != nil {
				return err
			}
			return totals.Put(ctx, customer, sum+o.Total)
		})
	d, _ := processor.NewTestDriver(topo, processor.TestDriverOptions{})
	for _, v := range []string{`{"id":"1","total":9.5}`, `{"id":"2",`, `{"id":"3","total":0.5}`} {
		_ = d.PipeRecord(&kgo.Record{Topic: "orders", Partition: -1, Key: []byte("ann"), Value: []byte(v)})
	}
	total, _, _ := processor.Lookup(d, totals, "ann")
	fmt.Println("total:", total)
	for _, dl := range d.DeadLetters() {
		var hs []string
		for _, h := range dl.Headers {
			if h.Key != processor.HeaderDLQError {
				hs = append(hs, h.Key+"="+string(h.Value))
			}
		}
		sort.Strings(hs)
		fmt.Printf("dead letter %s:\n  %s\n", dl.Value, strings.Join(hs, "\n  "))
	}
	// Output:
	// total: 10
	// dead letter {"id":"2",:
	//   rackstream.dlq.application.id=orders
	//   rackstream.dlq.attempts=1
	//   rackstream.dlq.offset=1
	//   rackstream.dlq.partition=0
	//   rackstream.dlq.stage=decode-value
	//   rackstream.dlq.topic=orders
}

// A goka processor ports over with its codecs, and its group table becomes
// the store's changelog, adopted with its data. Run it with the partitioner
// fnv1a, goka's, so that keys stay in the partitions goka put them in.
func Example_gokaPort() {
	// goka: goka.DefineGroup("user-visits",
	//     goka.Input("visits", new(codec.String), visit),
	//     goka.Persist(new(codec.Int64)))
	topo := processor.New("user-visits")
	table := processor.NewStore(topo, "table", codec.FromGoka[string](new(gokacodec.String)),
		codec.FromGoka[int64](new(gokacodec.Int64)),
		processor.WithChangelog("user-visits-table")) // goka's <group>-table
	processor.NewInput(topo, "visits", codec.FromGoka[string](new(gokacodec.String)),
		codec.FromGoka[string](new(gokacodec.String)),
		func(ctx *processor.Context, user, _ string) error {
			n, _, err := table.Get(ctx, user)
			if err != nil {
				return err
			}
			return table.Put(ctx, user, n+1)
		})
	fmt.Println(topo.InputTopics(), topo.ChangelogTopics())
	// Output:
	// [visits] [user-visits-table]
}
