package builtin

import (
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/window"
)

// A windowed count or sum (processor.window.type set) keeps each key's
// count or sum per window in a window store (sessions: a session store)
// named after the type, and with processor.output.topic emits each result
// under the input key as {"start": ms, "end": ms, "value": n}: on every
// update, or with processor.window.emit=final once per window when it
// closes.

// newWindowed declares the windowed count or sum p describes on b.
func (b *Processor) newWindowed(p config.Processor, inOpts []processor.InputOption) error {
	def, err := config.WindowDef(p.Window)
	if err != nil {
		return fmt.Errorf("builtin: processor.window: %w", err)
	}
	var opts []processor.WindowOption
	if p.Window.Emit == config.WindowEmitFinal {
		opts = append(opts, processor.EmitFinal())
	}
	if p.Window.Retention > 0 {
		opts = append(opts, processor.WindowRetention(time.Duration(p.Window.Retention)*time.Millisecond))
	}
	switch p.Type {
	case config.ProcessorCount:
		b.winCount = windowedAggregation(b.topo, b.store, def, codec.Int64(), processor.Count[[]byte, []byte](), opts)
		if p.OutputTopic != "" {
			b.winOutInt = processor.NewWindowedOutput[[]byte, int64](b.topo, p.OutputTopic, codec.Bytes())
		}
		b.in = consume(b, p, codec.Bytes(), b.winCount.Handler(b.winOutInt), inOpts)
	case config.ProcessorSum:
		b.winSum = windowedAggregation(b.topo, b.store, def, decimalCodec{}, processor.Aggregator[[]byte, Decimal, Decimal]{
			Init:  func() Decimal { return "0" },
			Add:   func(_ []byte, v, total Decimal) Decimal { return addCanonical(total, v) },
			Merge: func(_ []byte, a, c Decimal) Decimal { return addCanonical(a, c) },
		}, opts)
		if p.OutputTopic != "" {
			b.winOutDec = processor.NewWindowedOutput[[]byte, Decimal](b.topo, p.OutputTopic, codec.Bytes())
		}
		b.sumIn = consume(b, p, numberCodec{field: p.SumField}, b.winSum.Handler(b.winOutDec), inOpts)
	default:
		return fmt.Errorf("builtin: processor.window.type is for processor.type count or sum, not %q", p.Type)
	}
	return nil
}

// windowedAggregation declares the aggregation over def, a definition of
// package window as config.WindowDef returns it.
func windowedAggregation[V, A any](topo *processor.Topology, name string, def any, agg codec.Codec[A], a processor.Aggregator[[]byte, V, A], opts []processor.WindowOption) *processor.WindowedAggregation[[]byte, V, A] {
	switch d := def.(type) {
	case window.TimeWindows:
		return processor.NewWindowedAggregation(topo, name, d, codec.Bytes(), agg, a, opts...)
	case window.SlidingWindows:
		return processor.NewWindowedAggregation(topo, name, d, codec.Bytes(), agg, a, opts...)
	default:
		return processor.NewWindowedAggregation(topo, name, d.(window.SessionWindows), codec.Bytes(), agg, a, opts...)
	}
}

// addCanonical adds two canonical decimals exactly. Unlike Add it puts no
// bound on their length: a window's sum is ours, and only the numbers a
// record brings are bounded (numberCodec).
func addCanonical(a, b Decimal) Decimal {
	ra, okA := new(big.Rat).SetString(string(a))
	rb, okB := new(big.Rat).SetString(string(b))
	if !okA || !okB {
		// Unreachable: every operand is canonical (Init, numberCodec or
		// an earlier sum).
		return a
	}
	return Decimal(ra.Add(ra, rb).FloatString(max(fraction(a), fraction(b))))
}

// fraction returns the number of fraction digits of a canonical decimal.
func fraction(d Decimal) int {
	if i := strings.IndexByte(string(d), '.'); i >= 0 {
		return len(d) - i - 1
	}
	return 0
}
