package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/client"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/service"
)

// Read a count from the cluster: the client asks the key's active instance
// directly, and a standby within 1000 records if the active is down.
func Example() {
	ctx := context.Background()
	endpoint, stop := exampleCluster(ctx, "ann", "bob", "ann")
	defer stop()

	c, err := client.New(client.Options{Endpoints: []string{endpoint}, AuthToken: "example-token", MaxLag: 1000})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	v, err := c.Get(ctx, "count", []byte("ann"))
	if err != nil {
		fmt.Println(err)
		return
	}
	var n int64
	if err := v.Decode(&n); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ann", n, "served by the", v.Role)
	// Output:
	// ann 2 served by the active
}

// Page through a store in key order, each key once.
func ExampleClient_Scanner() {
	ctx := context.Background()
	endpoint, stop := exampleCluster(ctx, "ann", "bob", "ann", "cid")
	defer stop()

	c, _ := client.New(client.Options{Endpoints: []string{endpoint}, AuthToken: "example-token"})
	defer c.Close()
	for item, err := range c.Scanner(ctx, "count", client.ScanRequest{Limit: 2}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s %s\n", item.Key, item.Raw)
	}
	// Output:
	// ann 2
	// bob 1
	// cid 1
}

// exampleCluster runs, in this process, a one-instance cluster of the
// built-in count processor on an in-process Kafka, counts clicks by the
// given users, and returns the instance's host:port once they are counted.
func exampleCluster(ctx context.Context, users ...string) (endpoint string, stop func()) {
	kf, _ := kfake.NewCluster(kfake.NumBrokers(1))
	kc, _ := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...), kgo.DefaultProduceTopic("clicks"))
	kadm.NewClient(kc).CreateTopic(ctx, 4, 1, nil, "clicks")
	for _, u := range users {
		kc.ProduceSync(ctx, kgo.KeyStringRecord(u, "click"))
	}
	dir, _ := os.MkdirTemp("", "client-example-")
	cfg, err := config.Load(config.Sources{Set: []string{
		"application.id=example", "bootstrap.servers=" + kf.ListenAddrs()[0],
		"processor.type=count", "processor.input.topic=clicks", "replication.factor=1",
		"http.listen=127.0.0.1:0", "http.auth.token=example-token", "commit.interval.ms=100",
		"state.dir=" + dir,
	}})
	if err != nil {
		panic(err)
	}
	in, err := service.New(service.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { in.Run(runCtx); close(done) }()
	// Counted and committed: scans read committed state.
	adm := kadm.NewClient(kc)
	ready := func() bool { ok, _ := in.Ready(); return ok && kafkatest.CommittedThrough(adm, "example", "clicks") }
	for deadline := time.Now().Add(time.Minute); !ready() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	return in.Endpoint(), func() { cancel(); <-done; kc.Close(); kf.Close(); os.RemoveAll(dir) }
}
