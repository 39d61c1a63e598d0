package docs_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/state"
)

// The join snippet of processors-and-tables.md, run in memory: an order
// whose item the table has is priced, one whose item it lacks is not.
func Example_joinPrices() {
	topo := processor.New("order-pricer")
	enriched := processor.NewOutput(topo, "orders-priced", codec.String(), codec.JSON[Enriched]())
	joinPrices(topo, enriched)
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = d.PipeTableRecord(&kgo.Record{Topic: "prices", Partition: -1, Key: []byte("apple"), Value: []byte(`{"Cents":40}`)})
	// The orders are keyed by item, like the table.
	_ = d.PipeRecord(&kgo.Record{Topic: "orders", Partition: -1, Key: []byte("apple"), Value: []byte(`{"ID":"o1"}`)})
	_ = d.PipeRecord(&kgo.Record{Topic: "orders", Partition: -1, Key: []byte("pear"), Value: []byte(`{"ID":"o2"}`)})
	out, _ := processor.ReadOutput(d, enriched)
	for _, kv := range out {
		fmt.Println(kv.Key, kv.Value.Priced, kv.Value.Price.Cents)
	}
	// Output:
	// o1 true 40
	// o2 false 0
}

// The global-table snippet of processors-and-tables.md, run in memory.
func Example_lookUpUsers() {
	topo := processor.New("order-namer")
	named := processor.NewOutput(topo, "orders-named", codec.String(), codec.String())
	lookUpUsers(topo, named)
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = d.PipeGlobalRecord(&kgo.Record{Topic: "users", Key: []byte("u1"), Value: []byte(`{"Name":"Ann"}`)})
	_ = d.PipeRecord(&kgo.Record{Topic: "orders", Partition: -1, Key: []byte("o1"), Value: []byte(`{"ID":"o1","UserID":"u1"}`)})
	_ = d.PipeRecord(&kgo.Record{Topic: "orders", Partition: -1, Key: []byte("o2"), Value: []byte(`{"ID":"o2","UserID":"u2"}`)})
	out, _ := processor.ReadOutput(d, named)
	for _, kv := range out {
		fmt.Println(kv.Key, kv.Value)
	}
	// Output:
	// o1 Ann
}

// The table.Mirror snippet of processors-and-tables.md, run on an
// in-process Kafka holding one count in the changelog it reads.
func Example_mirrorCounts() {
	topic := state.ChangelogTopic("click-counter", "counts")
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topic))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cluster.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...),
		kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()
	three, _ := codec.Int64().Encode(3)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("ann"), Value: three}).FirstErr(); err != nil {
		fmt.Println(err)
		return
	}
	if err := mirrorCounts(ctx, cluster.ListenAddrs()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 3 true <nil>
	// 0
}

// The service snippet of processors-and-tables.md, on an in-process
// Kafka: the configuration loads, the service accepts it with the
// topology, and Run shuts down cleanly once its context ends (here at
// once).
func Example_runAsService() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "clicks"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cluster.Close()
	dir, err := os.MkdirTemp("", "service-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "rackstream.properties")
	props := "application.id=clicks\nbootstrap.servers=" + strings.Join(cluster.ListenAddrs(), ",") +
		"\nhttp.listen=127.0.0.1:0\nstate.dir=" + filepath.Join(dir, "state") + "\n"
	if err := os.WriteFile(file, []byte(props), 0o600); err != nil {
		fmt.Println(err)
		return
	}
	topo := processor.New("clicks")
	counts := processor.NewStore(topo, "counts", codec.String(), codec.Int64())
	processor.NewInput(topo, "clicks", codec.String(), codec.String(),
		func(ctx *processor.Context, user, _ string) error {
			n, _, err := counts.Get(ctx, user)
			if err != nil {
				return err
			}
			return counts.Put(ctx, user, n+1)
		})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(runAsService(ctx, file, topo, slog.New(slog.DiscardHandler)))
	// Output:
	// <nil>
}
