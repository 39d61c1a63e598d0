package table_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/state"
	"github.com/rackstream/rackstream/table"
)

// Another program reads the counts of the click-counter application (its
// store "counts", codecs String and Int64) from the store's changelog.
func Example() {
	ctx := context.Background()
	cluster, _ := kfake.NewCluster(kfake.NumBrokers(1)) // in-process Kafka for the example
	defer cluster.Close()
	brokers := cluster.ListenAddrs()

	// What the application would have written.
	changelog := state.ChangelogTopic("click-counter", "counts")
	cl, _ := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(changelog))
	defer cl.Close()
	kadm.NewClient(cl).CreateTopic(ctx, 4, 1, map[string]*string{"cleanup.policy": new("compact")}, changelog)
	cl.ProduceSync(ctx, kgo.KeyStringRecord("ann", "3"), kgo.KeyStringRecord("bob", "1"))

	r, err := table.Open(ctx, changelog, table.Options{Brokers: brokers, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close(ctx)
	counts := table.NewTyped(r, codec.String(), codec.Int64())
	n, found, _ := counts.Get("ann")
	fmt.Println("ann", n, found, "lag", r.Lag())

	// A later write is visible once WaitCaughtUp returns.
	cl.ProduceSync(ctx, kgo.KeyStringRecord("ann", "4"))
	if err := r.WaitCaughtUp(ctx); err != nil {
		fmt.Println(err)
		return
	}
	n, _, _ = counts.Get("ann")
	fmt.Println("ann", n)
	// Output:
	// ann 3 true lag 0
	// ann 4
}
