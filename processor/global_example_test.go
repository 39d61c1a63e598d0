package processor_test

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
)

// Orders enriched with the user's name from a global table: the handler
// takes the user id from the order's value, so the orders need not be
// partitioned by user. On Kafka every instance holds the whole users topic,
// restored before it processes an order.
func ExampleNewGlobalTable() {
	topo := processor.New("order-enricher")
	users := processor.NewGlobalTable(topo, "users", codec.String(), codec.String())
	enriched := processor.NewOutput(topo, "orders-enriched", codec.String(), codec.String())
	orders := processor.NewInput(topo, "orders", codec.String(), codec.String(),
		func(ctx *processor.Context, order, user string) error {
			name, found, err := users.Get(ctx, user)
			if err != nil {
				return err
			}
			if !found {
				name = "(unknown user " + user + ")"
			}
			return enriched.Emit(ctx, order, name)
		})

	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	// In a test, PipeGlobalRecord stands for the table's topic.
	_ = d.PipeGlobalRecord(&kgo.Record{Topic: "users", Key: []byte("u1"), Value: []byte("Ann")})
	_ = processor.Pipe(d, orders, "order-1", "u1")
	_ = processor.Pipe(d, orders, "order-2", "u2")
	out, _ := processor.ReadOutput(d, enriched)
	for _, kv := range out {
		fmt.Println(kv.Key, kv.Value)
	}
	// Output:
	// order-1 Ann
	// order-2 (unknown user u2)
}
