package state_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/rackstream/rackstream/state"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The life of one task's store: create the changelogs, open the task,
// restore it, make it active, write, commit; then a second instance
// restores the same state from the changelog alone.
func Example() {
	ctx := context.Background()
	cluster, _ := kfake.NewCluster(kfake.NumBrokers(1)) // in-process Kafka for the example
	defer cluster.Close()
	brokers := kgo.SeedBrokers(cluster.ListenAddrs()...)
	dir, _ := os.MkdirTemp("", "state-example")
	defer os.RemoveAll(dir)

	stores := []state.StoreSpec{{Name: "counts"}}
	open := func(sub string) *state.Manager {
		o := state.DefaultOptions() // then what this instance needs
		o.Dir, o.ApplicationID = dir+"/"+sub, "example"
		o.ClientOpts, o.Logger = []kgo.Opt{brokers}, slog.New(slog.DiscardHandler)
		m, err := state.Open(o)
		if err != nil {
			panic(err)
		}
		// One partition per task; replication factor -1: the broker's default.
		if err := m.EnsureChangelogs(ctx, 4, -1, stores); err != nil {
			panic(err)
		}
		return m
	}

	m := open("a")
	defer m.Close()
	task, _ := m.OpenTask(2, stores) // partition slot 2
	if err := task.Restore(ctx); err != nil {
		panic(err)
	}
	// The changelog producer must keep Record.Partition (the task's slot).
	producer, _ := kgo.NewClient(brokers, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer producer.Close()
	if err := task.Activate(producer); err != nil {
		panic(err)
	}
	counts := task.Store("counts")
	counts.Put([]byte("apples"), []byte("3"))
	counts.Put([]byte("pears"), []byte("5"))
	v, _, _ := counts.Get([]byte("apples")) // the handler reads its own writes
	_, committed, _ := counts.View().Get([]byte("apples"))
	fmt.Printf("before commit: Get=%s, View has it: %v\n", v, committed)

	// A commit point: changelog acknowledged, then one LevelDB batch.
	if err := producer.Flush(ctx); err != nil {
		panic(err)
	}
	if err := task.Commit(); err != nil {
		panic(err)
	}
	fmt.Println("checkpoint:", counts.Checkpoint())

	// Another instance rebuilds the store from the changelog.
	m2 := open("b")
	defer m2.Close()
	task2, _ := m2.OpenTask(2, stores)
	if err := task2.Restore(ctx); err != nil {
		panic(err)
	}
	task2.Store("counts").View().Scan(nil, nil, func(k, v []byte) bool {
		fmt.Printf("%s=%s\n", k, v)
		return true
	})
	// Output:
	// before commit: Get=3, View has it: false
	// checkpoint: 2
	// apples=3
	// pears=5
}
