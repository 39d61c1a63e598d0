// Package builtin holds the processors `rackstream run` offers without any
// Go code, chosen by processor.type:
//
//   - latest: materialises the input topic as a table, the last value per
//     key; a tombstone (a record without a value) deletes the key.
//   - count: the number of records per key. Tombstones are not counted, as
//     in Kafka Streams' count().
//   - sum: the sum per key of a decimal number: the record's value itself
//     ("12", "-0.5", "1e3"), or, with processor.sum.field, the named
//     top-level field of a JSON object (a number or a string holding one).
//     Sums are exact decimals (no floating-point rounding). A value that is
//     not a number goes to the error policy (the dead-letter topic by
//     default) as undecodable; tombstones are ignored.
//   - join: each record enriched with the value its key (or a field of its
//     value) has in a table, co-partitioned or global (join.go).
//
// count and sum take processor.window.type to count or sum per window of
// time instead (windowed.go), and processor.group.by.field to count or sum
// per value of a JSON field rather than per record key (groupby.go). Every
// built-in takes processor.timestamp.field, a JSON field holding the
// record's time (timestamp.go).
//
// latest, count and sum each keep their state in one store named after the
// type (so the HTTP query of a key is /v1/stores/<type>/keys/<key>, or for
// windows /v1/stores/<type>/windows/<key>) and,
// with processor.output.topic, emit every updated value per key to that
// topic: the new value, or a tombstone when latest deletes a key; join
// keeps no state of its own (join.go). Keys are bytes, taken as they are.
//
// They are written on processor's public topology API, exactly as a user's
// own processor would be: read this package as an example.
package builtin

import (
	"errors"
	"fmt"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
)

// Processor is a built-in processor's topology and the names a user needs
// to query it.
type Processor struct {
	topo     *processor.Topology
	kind     config.ProcessorType
	store    string
	windowed bool

	// Handles for tests (one set is non-nil, by kind).
	in     *processor.Input[[]byte, []byte]
	sumIn  *processor.Input[[]byte, Decimal]
	latest *processor.Store[[]byte, Value]
	count  *processor.Store[[]byte, int64]
	sum    *processor.Store[[]byte, Decimal]
	outRaw *processor.Output[[]byte, Value]
	outInt *processor.Output[[]byte, int64]
	outDec *processor.Output[[]byte, Decimal]
	joinIn *processor.Input[[]byte, joinInput]
	join   *join

	// repartition is the repartition topic of processor.group.by.field
	// (groupby.go); "" without.
	repartition string

	// Windowed count and sum (windowed.go).
	winCount  *processor.WindowedAggregation[[]byte, []byte, int64]
	winSum    *processor.WindowedAggregation[[]byte, Decimal, Decimal]
	winOutInt *processor.Output[[]byte, processor.WindowValue[int64]]
	winOutDec *processor.Output[[]byte, processor.WindowValue[Decimal]]
}

// New builds the built-in processor p describes for the processor group
// applicationID.
func New(applicationID string, p config.Processor) (*Processor, error) {
	if p.InputTopic == "" {
		return nil, errors.New("builtin: processor.input.topic is required")
	}
	if p.OutputTopic == p.InputTopic {
		return nil, fmt.Errorf("builtin: processor.output.topic is the input topic %s: the processor would consume its own updates", p.InputTopic)
	}
	topo := processor.New(applicationID)
	var storeOpts []processor.StoreOption
	if p.ChangelogTopic != "" {
		storeOpts = append(storeOpts, processor.WithChangelog(p.ChangelogTopic))
	}
	var inOpts []processor.InputOption
	if p.TimestampField != "" {
		inOpts = append(inOpts, processor.WithTimestamp(fieldTimestamp(p.TimestampField)))
	}
	b := &Processor{topo: topo, kind: p.Type, store: string(p.Type), windowed: p.Window.Type != ""}
	if p.GroupByField != "" && p.Type != config.ProcessorCount && p.Type != config.ProcessorSum {
		return nil, fmt.Errorf("builtin: processor.group.by.field is for processor.type count or sum, not %q", p.Type)
	}
	if b.windowed {
		if p.ChangelogTopic != "" {
			return nil, errors.New("builtin: processor.changelog.topic does not apply to a windowed store (its changelog is <application.id>-<store>-changelog)")
		}
		if err := b.newWindowed(p, inOpts); err != nil {
			return nil, err
		}
		if err := topo.Validate(); err != nil {
			return nil, fmt.Errorf("builtin %s: %w", p.Type, err)
		}
		return b, nil
	}
	switch p.Type {
	case config.ProcessorLatest:
		b.latest = processor.NewStore(topo, b.store, codec.Bytes(), valueCodec{}, storeOpts...)
		if p.OutputTopic != "" {
			b.outRaw = processor.NewOutput(topo, p.OutputTopic, codec.Bytes(), valueCodec{})
		}
		b.in = processor.NewInput(topo, p.InputTopic, codec.Bytes(), codec.Bytes(), b.handleLatest, inOpts...)
	case config.ProcessorCount:
		b.count = processor.NewStore(topo, b.store, codec.Bytes(), codec.Int64(), storeOpts...)
		if p.OutputTopic != "" {
			b.outInt = processor.NewOutput(topo, p.OutputTopic, codec.Bytes(), codec.Int64())
		}
		b.in = consume(b, p, codec.Bytes(), b.handleCount, inOpts)
	case config.ProcessorSum:
		b.sum = processor.NewStore(topo, b.store, codec.Bytes(), decimalCodec{}, storeOpts...)
		if p.OutputTopic != "" {
			b.outDec = processor.NewOutput(topo, p.OutputTopic, codec.Bytes(), decimalCodec{})
		}
		b.sumIn = consume(b, p, numberCodec{field: p.SumField}, b.handleSum, inOpts)
	case config.ProcessorJoin: // join.go
		if p.TableTopic == "" || p.OutputTopic == "" {
			return nil, errors.New("builtin: processor.type=join requires processor.table.topic and processor.output.topic")
		}
		b.newJoin(topo, p, inOpts)
	case "":
		return nil, errors.New("builtin: processor.type is not set (latest, count, sum or join)")
	default:
		return nil, fmt.Errorf("builtin: unknown processor.type %q (latest, count, sum or join)", p.Type)
	}
	if err := topo.Validate(); err != nil {
		return nil, fmt.Errorf("builtin %s: %w", p.Type, err)
	}
	return b, nil
}

// Topology returns the processor's topology, to run with processor.Runtime.
func (b *Processor) Topology() *processor.Topology { return b.topo }

// Windowed reports whether the processor's store is a window or session
// store (processor.window.type set).
func (b *Processor) Windowed() bool { return b.windowed }

// Type returns the processor's type.
func (b *Processor) Type() config.ProcessorType { return b.kind }

// RepartitionTopic returns the repartition topic the processor re-keys its
// input through (processor.group.by.field), "" when it has none.
func (b *Processor) RepartitionTopic() string { return b.repartition }

// Store returns the name of the processor's store: its type, or for a
// join the co-partitioned table's topic ("" for a global table).
func (b *Processor) Store() string { return b.store }

func (b *Processor) handleLatest(ctx *processor.Context, key, value []byte) error {
	if ctx.Tombstone() {
		if err := b.latest.Delete(ctx, key); err != nil {
			return err
		}
		if b.outRaw != nil {
			return b.outRaw.EmitTombstone(ctx, key)
		}
		return nil
	}
	if err := b.latest.Put(ctx, key, value); err != nil {
		return err
	}
	if b.outRaw != nil {
		return b.outRaw.Emit(ctx, key, value)
	}
	return nil
}

func (b *Processor) handleCount(ctx *processor.Context, key, _ []byte) error {
	if ctx.Tombstone() {
		return nil
	}
	n, _, err := b.count.Get(ctx, key)
	if err != nil {
		return err
	}
	n++
	if err := b.count.Put(ctx, key, n); err != nil {
		return err
	}
	if b.outInt != nil {
		return b.outInt.Emit(ctx, key, n)
	}
	return nil
}

func (b *Processor) handleSum(ctx *processor.Context, key []byte, v Decimal) error {
	if ctx.Tombstone() {
		return nil
	}
	total, _, err := b.sum.Get(ctx, key)
	if err != nil {
		return err
	}
	if total == "" {
		total = "0"
	}
	s, err := Add(total, v)
	if err != nil {
		// The stored sum is ours: failing to read it back is not the
		// record's fault, but retrying can't help either.
		return processor.Permanent(fmt.Errorf("sum of key %q: %w", key, err))
	}
	if err := b.sum.Put(ctx, key, s); err != nil {
		return err
	}
	if b.outDec != nil {
		return b.outDec.Emit(ctx, key, s)
	}
	return nil
}
