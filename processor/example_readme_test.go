package processor_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
)

// clickCounter is the README's library example: a per-key count of clicks,
// each new count emitted to an output topic, run on Kafka until ctx ends.
func clickCounter(ctx context.Context, brokers []string, stateDir string) error {
	topo := processor.New("click-counter") // the application id: the consumer group
	counts := processor.NewStore(topo, "counts", codec.String(), codec.Int64())
	updates := processor.NewOutput(topo, "click-counts", codec.String(), codec.Int64())
	processor.NewInput(topo, "clicks", codec.String(), codec.String(),
		func(ctx *processor.Context, user, page string) error {
			n, _, err := counts.Get(ctx, user)
			if err != nil {
				return err
			}
			if err := counts.Put(ctx, user, n+1); err != nil {
				return err
			}
			return updates.Emit(ctx, user, n+1)
		})

	rt, err := processor.NewRuntime(topo, processor.Options{
		Brokers:        brokers,
		StateDir:       stateDir,
		Placement:      assignor.Settings{NumStandbyReplicas: 1}, // one standby per task
		CommitInterval: time.Second,                              // every field left out takes its default
	})
	if err != nil {
		return err
	}
	return rt.Run(ctx) // until ctx is cancelled: then finish, flush, commit, leave the group, close
}

// The README's library example, run on an in-process Kafka: three clicks
// in, three counts out.
func ExampleNewRuntime() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "clicks", "click-counts"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	dir, err := os.MkdirTemp("", "click-counter")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- clickCounter(ctx, brokers, dir) }()

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("click-counts"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()
	for _, user := range []string{"ann", "bob", "ann"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "clicks", Key: []byte(user), Value: []byte("/home")}).FirstErr(); err != nil {
			fmt.Println(err)
			return
		}
	}
	// The record cache may merge a key's updates within a commit interval:
	// wait for the last count of each key.
	counts := map[string]int64{}
	for (counts["ann"] < 2 || counts["bob"] < 1) && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if n, err := codec.Int64().Decode(r.Value); err == nil {
				counts[string(r.Key)] = max(counts[string(r.Key)], n)
			}
		})
	}
	cancel()
	if err := <-ran; err != nil {
		fmt.Println(err)
	}
	fmt.Println("ann", counts["ann"], "bob", counts["bob"])
	// Output:
	// ann 2 bob 1
}
