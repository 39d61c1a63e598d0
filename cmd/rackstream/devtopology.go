package main

import (
	"time"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/window"
)

// Stores of rackstream dev's processor: the built-in count's, and beside it
// the same records counted per minute.
const (
	devCountStore  = "count"
	devWindowStore = "count-per-minute"
)

// devTopology counts the records of topic per key, as the built-in count
// does (store devCountStore), and per key and one-minute window (store
// devWindowStore, kept an hour), so that dev shows a window store beside a
// key-value one.
func devTopology(app, topic string) *processor.Topology {
	topo := processor.New(app)
	counts := processor.NewStore(topo, devCountStore, codec.Bytes(), codec.Int64())
	perMinute := processor.NewWindowedAggregation(topo, devWindowStore, window.Tumbling(60_000),
		codec.Bytes(), codec.Int64(), processor.Count[[]byte, []byte](), processor.WindowRetention(time.Hour))
	windowed := perMinute.Handler(nil)
	processor.NewInput(topo, topic, codec.Bytes(), codec.Bytes(), func(ctx *processor.Context, key, value []byte) error {
		if ctx.Tombstone() {
			return nil
		}
		n, _, err := counts.Get(ctx, key)
		if err != nil {
			return err
		}
		if err := counts.Put(ctx, key, n+1); err != nil {
			return err
		}
		return windowed(ctx, key, value)
	})
	return topo
}
