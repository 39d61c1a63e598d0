package kstreamsref

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/window"
)

// aggregate is a scenario's windowed aggregation as package processor
// declares it: string keys, int64 values and aggregates.
type aggregate = processor.WindowedAggregation[string, int64, int64]

// declareAggregation declares s's windowed aggregation in topo as the
// store name, with its window, grace, retention (Kafka's default when 0),
// aggregation and emit strategy, and the windowed output topic its results
// go to. The input is the caller's: its handler is the aggregation's
// Handler(out), with values encoded by codec.Int64. Declaration errors
// surface in topo's Validate.
func declareAggregation(topo *processor.Topology, s Scenario, name, topic string) (*aggregate, *processor.Output[string, processor.WindowValue[int64]]) {
	agg := processor.Aggregator[string, int64, int64]{
		Init:  func() int64 { return 0 },
		Add:   func(_ string, v, sum int64) int64 { return sum + v },
		Merge: func(_ string, a, b int64) int64 { return a + b },
	}
	if s.Aggregation == Count {
		agg = processor.Count[string, int64]()
	}
	var opts []processor.WindowOption
	if s.Emit == Final {
		opts = append(opts, processor.EmitFinal())
	}
	if ms := s.Window.RetentionMs; ms != 0 {
		opts = append(opts, processor.WindowRetention(time.Duration(ms)*time.Millisecond))
	}
	w := s.Window
	var a *aggregate
	switch w.Type {
	case Tumbling:
		a = processor.NewWindowedAggregation(topo, name, window.Tumbling(w.SizeMs).WithGrace(w.GraceMs), codec.String(), codec.Int64(), agg, opts...)
	case Hopping:
		a = processor.NewWindowedAggregation(topo, name, window.Hopping(w.SizeMs, w.AdvanceMs).WithGrace(w.GraceMs), codec.String(), codec.Int64(), agg, opts...)
	case Sliding:
		a = processor.NewWindowedAggregation(topo, name, window.Sliding(w.TimeDifferenceMs).WithGrace(w.GraceMs), codec.String(), codec.Int64(), agg, opts...)
	default:
		a = processor.NewWindowedAggregation(topo, name, window.Session(w.GapMs).WithGrace(w.GraceMs), codec.String(), codec.Int64(), agg, opts...)
	}
	return a, processor.NewWindowedOutput[string, int64](topo, topic, codec.String())
}

// checkScenario rejects what declareAggregation cannot express.
func checkScenario(s Scenario) error {
	if !slices.Contains(WindowTypes, s.Window.Type) {
		return fmt.Errorf("window type %q: want tumbling, hopping, sliding or session", s.Window.Type)
	}
	if s.Aggregation != Count && s.Aggregation != Sum {
		return fmt.Errorf("aggregation %q: want count or sum", s.Aggregation)
	}
	if s.Emit != Update && s.Emit != Final {
		return fmt.Errorf("emit %q: want update or final", s.Emit)
	}
	return nil
}

// RunProcessor runs a scenario through Rackstream's runtime path, package
// processor: the aggregation of declareAggregation as an input's handler
// in a [processor.TestDriver] of the scenario's partitions, each record
// piped into its partition with its timestamp. It answers in the
// reference's [Result] shape: per partition, the windowed output's records
// in emit order, the store as ReadWindows returns it, and
// [processor.LateRecords] as DroppedRecords. Output timestamps are the
// runtime's, which stamps a result with the time of the input record that
// made it (Kafka Streams stamps it with the window's latest record time);
// a result stamped otherwise is an error. EmitIntervalMs is ignored:
// Rackstream has no emit throttle.
func RunProcessor(s Scenario) (*Result, error) {
	if err := checkScenario(s); err != nil {
		return nil, fmt.Errorf("processor: scenario %s: %w", s.Name, err)
	}
	const input, output = "input", "output"
	topo := processor.New("kstreamsref")
	a, out := declareAggregation(topo, s, "windows", output)
	processor.NewInput(topo, input, codec.String(), codec.Int64(), a.Handler(out))
	// PolicyFail: a handler error stops the run instead of being
	// dead-lettered out of sight. Late records are not errors.
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: s.Partitions, ErrorPolicy: processor.PolicyFail})
	if err != nil {
		return nil, fmt.Errorf("processor: scenario %s: %w", s.Name, err)
	}
	res := &Result{Name: s.Name, Partitions: make([]PartitionResult, s.Partitions)}
	for i, r := range s.Records {
		if r.Partition < 0 || r.Partition >= s.Partitions {
			return nil, fmt.Errorf("processor: scenario %s record %d: partition %d of %d", s.Name, i, r.Partition, s.Partitions)
		}
		emitted := len(d.Emitted(output))
		rec := &kgo.Record{
			Topic: input, Partition: r.Partition, Key: []byte(r.Key),
			Value: strconv.AppendInt(nil, r.Value, 10), Timestamp: time.UnixMilli(r.Timestamp),
		}
		if err := d.PipeRecord(rec); err != nil {
			return nil, fmt.Errorf("processor: scenario %s record %d (%s@%d): %w", s.Name, i, r.Key, r.Timestamp, err)
		}
		pr := &res.Partitions[r.Partition]
		for _, e := range d.Emitted(output)[emitted:] {
			o, err := outputOf(e)
			if err != nil {
				return nil, fmt.Errorf("processor: scenario %s record %d: %w", s.Name, i, err)
			}
			if o.Timestamp != r.Timestamp {
				return nil, fmt.Errorf("processor: scenario %s record %d (%s@%d): result %s stamped %d, not with its input record's time",
					s.Name, i, r.Key, r.Timestamp, o, o.Timestamp)
			}
			pr.Output = append(pr.Output, o)
		}
	}
	ws, err := processor.ReadWindows(d, a)
	if err != nil {
		return nil, fmt.Errorf("processor: scenario %s: read the store: %w", s.Name, err)
	}
	for _, w := range ws {
		pr := &res.Partitions[w.Partition]
		pr.Store = append(pr.Store, StoredWindow{Key: w.Key, Start: w.Start.UnixMilli(), End: w.End.UnixMilli(), Value: w.Value})
	}
	for p := range s.Partitions {
		pr := &res.Partitions[p]
		pr.Partition = p
		sortStore(pr.Store)
		pr.DroppedRecords = processor.LateRecords(d, a, p)
	}
	return res, nil
}

// outputOf decodes a record of a windowed output (processor's
// NewWindowedOutput with string keys and int64 aggregates) into the
// reference's [Output] shape: a result, or a session's tombstone with its
// window in the headers. The timestamp is the record's.
func outputOf(r *kgo.Record) (Output, error) {
	o := Output{Key: string(r.Key), Timestamp: r.Timestamp.UnixMilli()}
	if r.Value == nil {
		var start, end bool
		for _, h := range r.Headers {
			var err error
			switch h.Key {
			case processor.HeaderWindowStart:
				o.Start, err = strconv.ParseInt(string(h.Value), 10, 64)
				start = true
			case processor.HeaderWindowEnd:
				o.End, err = strconv.ParseInt(string(h.Value), 10, 64)
				end = true
			}
			if err != nil {
				return Output{}, fmt.Errorf("tombstone of %q: header %s: %w", r.Key, h.Key, err)
			}
		}
		if !start || !end {
			return Output{}, fmt.Errorf("tombstone of %q without the window headers", r.Key)
		}
		return o, nil
	}
	v, err := codec.JSON[processor.WindowValue[int64]]().Decode(r.Value)
	if err != nil {
		return Output{}, fmt.Errorf("result of %q: %w", r.Key, err)
	}
	o.Start, o.End, o.Value = v.Start, v.End, &v.Value
	return o, nil
}

// sortStore sorts windows as the reference sorts its store: by key (as
// bytes), start and end.
func sortStore(ws []StoredWindow) {
	slices.SortFunc(ws, func(a, b StoredWindow) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End))
	})
}
