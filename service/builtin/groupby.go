package builtin

import (
	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
)

// With processor.group.by.field, count and sum key each record by a
// top-level JSON field of its value (a string or a number) instead of its
// record key, as Kafka Streams' groupBy: the input's handler sends the
// record under its new key through the repartition topic
// <application.id>-<type>-repartition, and the task owning the new key
// counts or sums it. A record without the field is undecodable: it
// follows the error policy at the input.

// grouped is an input value decoded as V, with the key the group-by
// field holds.
type grouped[V any] struct {
	key   []byte
	value V
}

// groupedCodec decodes an input value: its group key, as the join's
// key field is read, and the value as V.
type groupedCodec[V any] struct {
	key   joinInputCodec
	value codec.Codec[V]
}

func (c groupedCodec[V]) Encode(g grouped[V]) ([]byte, error) { return c.value.Encode(g.value) }

func (c groupedCodec[V]) Decode(b []byte) (grouped[V], error) {
	in, err := c.key.Decode(b)
	if err != nil {
		return grouped[V]{}, err
	}
	v, err := c.value.Decode(b)
	if err != nil {
		return grouped[V]{}, err
	}
	return grouped[V]{key: in.tableKey, value: v}, nil
}

// consume declares the input topic, whose records, decoded with value, h
// handles: directly, or with processor.group.by.field through the
// repartition topic under their new key. It returns the input h is
// handler of.
func consume[V any](b *Processor, p config.Processor, value codec.Codec[V], h processor.Handler[[]byte, V], inOpts []processor.InputOption) *processor.Input[[]byte, V] {
	if p.GroupByField == "" {
		return processor.NewInput(b.topo, p.InputTopic, codec.Bytes(), value, h, inOpts...)
	}
	r := processor.NewRepartition(b.topo, b.store, codec.Bytes(), value, h)
	processor.NewInput(b.topo, p.InputTopic, codec.Bytes(), groupedCodec[V]{key: joinInputCodec{field: p.GroupByField}, value: value},
		func(ctx *processor.Context, _ []byte, g grouped[V]) error {
			if ctx.Tombstone() {
				return nil // count and sum skip tombstones
			}
			return r.Send(ctx, g.key, g.value)
		}, inOpts...)
	b.repartition = r.Topic()
	return r.Input()
}
