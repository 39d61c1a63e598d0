package processor_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

// A task with two inputs takes their records in timestamp order across
// them, waiting up to max.task.idle.ms for a quiet input.
func TestRuntimeTakesSeveralInputsInTimestampOrder(t *testing.T) {
	c := kafkatest.New(t)
	appID, left, right := c.Name("merge"), c.Name("merge-left"), c.Name("merge-right")
	c.CreateTopic(left, 1, nil)
	c.CreateTopic(right, 1, nil)
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	var recs []*kgo.Record
	for _, ms := range []int64{1, 3, 5, 7} { // 7 waits for right, which is quiet
		recs = append(recs, &kgo.Record{Topic: left, Value: []byte("l"), Timestamp: time.UnixMilli(ms)})
	}
	for _, ms := range []int64{2, 4, 6} {
		recs = append(recs, &kgo.Record{Topic: right, Value: []byte("r"), Timestamp: time.UnixMilli(ms)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var order []int64
	topo := processor.New(appID)
	h := func(ctx *processor.Context, _ []byte, _ string) error {
		mu.Lock()
		order = append(order, ctx.Timestamp().UnixMilli())
		mu.Unlock()
		return nil
	}
	processor.NewInput(topo, left, codec.Bytes(), codec.String(), h)
	processor.NewInput(topo, right, codec.Bytes(), codec.String(), h)
	o := testOptions(t, c.Brokers, "merge")
	o.MaxTaskIdle = 10 * time.Second
	startInstance(t, "merge", topo, o)
	kafkatest.Eventually(t, time.Minute, "six records handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) >= 6
	})
	mu.Lock()
	defer mu.Unlock()
	if want := []int64{1, 2, 3, 4, 5, 6}; !slices.Equal(order[:6], want) {
		t.Fatalf("handled %v, want %v first", order, want)
	}
}
