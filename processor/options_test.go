package processor_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

// TestTheMinimalOptionsRunOnABroker: the brokers, a state directory and a
// standby count are all a runtime needs; every other option takes its
// default, and the instance joins, becomes ready and processes records.
func TestTheMinimalOptionsRunOnABroker(t *testing.T) {
	c := kafkatest.New(t)
	input := c.Name("minimal-in")
	c.CreateTopic(input, 2, nil)
	var seen atomic.Int64
	topo := processor.New(c.Name("minimal"))
	counts := processor.NewStore(topo, "counts", codec.String(), codec.Int64())
	processor.NewInput(topo, input, codec.String(), codec.String(), func(ctx *processor.Context, k, _ string) error {
		n, _, err := counts.Get(ctx, k)
		if err != nil {
			return err
		}
		seen.Add(1)
		return counts.Put(ctx, k, n+1)
	})

	rt, err := processor.NewRuntime(topo, processor.Options{
		Brokers:   c.Brokers,
		StateDir:  t.TempDir(),
		Placement: assignor.Settings{NumStandbyReplicas: 1},
		Logger:    testLogger(t, "minimal"),
	})
	if err != nil {
		t.Fatalf("NewRuntime of the minimal options: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	kafkatest.Eventually(t, 60*time.Second, "the instance is ready", func() bool { ok, _ := rt.Ready(); return ok })
	c.Produce(&kgo.Record{Topic: input, Key: []byte("a"), Value: []byte("x")},
		&kgo.Record{Topic: input, Key: []byte("b"), Value: []byte("y")})
	kafkatest.Eventually(t, 60*time.Second, "both records processed", func() bool { return seen.Load() == 2 })
}

// The brokers and a state directory are all a runtime needs; every other
// option left at its zero value takes its default, and Zero asks for zero
// where zero is a setting (here: no record cache).
func ExampleOptions() {
	brokers, dir := []string{"localhost:9092"}, "/tmp/rackstream"
	topo := processor.New("click-counter")
	processor.NewInput(topo, "clicks", codec.String(), codec.String(),
		func(ctx *processor.Context, user, page string) error { return nil })
	rt, err := processor.NewRuntime(topo, processor.Options{
		Brokers:       brokers,
		StateDir:      dir,
		Placement:     assignor.Settings{NumStandbyReplicas: 1},
		CacheMaxBytes: processor.Zero,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rt.Topology().InputTopics())
	// Output: [clicks]
}
