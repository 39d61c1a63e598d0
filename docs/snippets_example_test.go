package docs_test

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
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
