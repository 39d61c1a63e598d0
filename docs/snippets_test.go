package docs_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"

	"github.com/rackstream/rackstream/client"
	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/service"
	"github.com/rackstream/rackstream/state"
	"github.com/rackstream/rackstream/table"
)

// The functions of this file are the Go snippets of the pages under docs/:
// each page's fenced Go block is the body of one of them
// (TestGoSnippetsAreCompiledCode), so every snippet compiles. The examples
// in snippets_example_test.go run those that need no cluster of
// instances: in memory, or on an in-process Kafka.

type (
	Order struct {
		ID     string
		UserID string
	}
	Price struct {
		Cents int64
	}
	User struct {
		Name string
	}
	Enriched struct {
		Order  Order
		Price  Price
		Priced bool
	}
)

func runAsService(ctx context.Context, file string, topo *processor.Topology, logger *slog.Logger) error {
	cfg, err := config.Load(config.Sources{File: file, Env: os.Environ()}) // file: "rackstream.properties"
	if err != nil {
		return err
	}
	in, err := service.New(service.Options{Config: cfg, Topology: topo, Logger: logger, ProcessMetrics: true})
	if err != nil {
		return err
	}
	return in.Run(ctx) // serve and process until ctx is cancelled, then shut down within shutdown.timeout.ms
}

func joinPrices(topo *processor.Topology, enriched *processor.Output[string, Enriched]) {
	prices := processor.NewTable(topo, "prices", codec.String(), codec.JSON[Price]())
	processor.NewInput(topo, "orders", codec.String(), codec.JSON[Order](),
		processor.LeftJoin(prices, func(ctx *processor.Context, item string, o Order, p Price, found bool) error {
			return enriched.Emit(ctx, o.ID, Enriched{Order: o, Price: p, Priced: found})
		}))
}

func lookUpUsers(topo *processor.Topology, named *processor.Output[string, string]) {
	users := processor.NewGlobalTable(topo, "users", codec.String(), codec.JSON[User]())
	processor.NewInput(topo, "orders", codec.String(), codec.JSON[Order](),
		func(ctx *processor.Context, id string, o Order) error {
			u, found, err := users.Get(ctx, o.UserID) // processor.WithGlobalPartitioner(partition.FNV1a()) for a goka table
			if err != nil || !found {
				return err
			}
			return named.Emit(ctx, id, u.Name)
		})
}

func minimalRuntime(topo *processor.Topology, brokers []string, dir string) (*processor.Runtime, error) {
	return processor.NewRuntime(topo, processor.Options{Brokers: brokers, StateDir: dir})
}

func mirrorCounts(ctx context.Context, brokers []string) error {
	r, err := table.Open(ctx, state.ChangelogTopic("click-counter", "counts"),
		table.Options{Brokers: brokers}) // Partitioner: partition.FNV1a() for goka tables
	if err != nil {
		return err
	}
	defer r.Close(ctx)
	counts := table.NewTyped(r, codec.String(), codec.Int64())
	n, found, err := counts.Get("ann")
	fmt.Println(n, found, err)
	fmt.Println(r.Lag())       // offsets behind the end offsets last seen, summed over partitions
	return r.WaitCaughtUp(ctx) // asks the brokers for the end offsets now, returns once applied: read-your-writes
}

func askTheCluster(ctx context.Context, token string, pool *x509.CertPool) error {
	c, err := client.New(client.Options{Endpoints: []string{"rackstream-0:8080", "rackstream-1:8080"},
		AuthToken: token, RootCAs: pool, MaxLag: 1000})
	if err != nil {
		return err
	}
	v, err := c.Get(ctx, "counts", []byte("ann")) // v.Decode(&n); v.ServedBy, v.Role, v.Lag, v.Position
	if err != nil {
		return err
	}
	fmt.Println(v.ServedBy, v.Role)
	for item, err := range c.Scanner(ctx, "counts", client.ScanRequest{Prefix: []byte("a"), Limit: 500}) {
		// every key once, in key order, paged with the server's cursor
		if err != nil {
			return err
		}
		fmt.Println(string(item.Key))
	}
	return nil
}
