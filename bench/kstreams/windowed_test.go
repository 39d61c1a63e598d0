package kstreams

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/window"
)

// The windowed count (RACKSTREAM_KSTREAMS_WINDOW_MS above 0): each side
// counts every key's records per tumbling window and writes every updated
// count, as Kafka Streams' groupByKey().windowedBy(TimeWindows
// .ofSizeAndGrace(window, grace)).count().toStream().to(output). The input's
// timestamps rise evenly from s.base over s.span, in produce order, so each
// partition's are in order, windows close as the run goes and no record is
// late.

// recordTime is the timestamp of input record i.
func (s settings) recordTime(i int) time.Time {
	return s.base.Add(time.Duration(int64(s.span) * int64(i) / int64(s.records)))
}

// windowedCount declares Rackstream's windowed count on topo: the window
// store "counts" (changelog <application.id>-counts-changelog, as Kafka
// Streams names its own) and every update to output, keyed by the input
// key with the window and count in a JSON value.
func windowedCount(topo *processor.Topology, input, output string, s settings) {
	counts := processor.NewWindowedAggregation(topo, "counts",
		window.Tumbling(s.window.Milliseconds()).WithGrace(s.grace.Milliseconds()),
		codec.String(), codec.Int64(), processor.Count[string, []byte]())
	out := processor.NewWindowedOutput[string, int64](topo, output, codec.String())
	processor.NewInput(topo, input, codec.String(), codec.Bytes(), counts.Handler(out))
}

// windowKey names one key's window in the check.
type windowKey struct {
	key   string
	start int64 // epoch ms
}

// checkWindowedCounts reads the output topic and requires every window's
// last count to be its number of input records, and no other window: the
// run did the whole job. It reads each side's own format: Rackstream's JSON
// value, Kafka Streams' time windowed key (the key, then the window's
// start) and Long value.
func checkWindowedCounts(b *testing.B, c *kafkatest.Cluster, name, output string, s settings) {
	b.Helper()
	want := map[windowKey]int64{}
	size := s.window.Milliseconds()
	for i := range s.records {
		ts := s.recordTime(i).UnixMilli()
		want[windowKey{fmt.Sprintf("key-%d", i%s.keys), ts - ts%size}]++
	}
	last := make(map[windowKey]int64, len(want))
	for _, r := range c.ConsumeAll(output) {
		w, n, err := decodeWindowed(name, r.Key, r.Value)
		if err != nil {
			b.Fatalf("%s: output %s: %v", name, output, err)
		}
		last[w] = n
	}
	if len(last) != len(want) {
		b.Fatalf("%s: output %s has counts of %d windows, want %d", name, output, len(last), len(want))
	}
	for w, n := range want {
		if last[w] != n {
			b.Fatalf("%s: output %s: last count of %s in the window at %d is %d, want %d", name, output, w.key, w.start, last[w], n)
		}
	}
}

// decodeWindowed reads one output record of engine name.
func decodeWindowed(name string, key, value []byte) (windowKey, int64, error) {
	if name == "kafka-streams" {
		if len(key) < 8 || len(value) != 8 {
			return windowKey{}, 0, fmt.Errorf("a record with a %d-byte key and a %d-byte value, want a windowed key and a long", len(key), len(value))
		}
		start := int64(binary.BigEndian.Uint64(key[len(key)-8:]))
		return windowKey{string(key[:len(key)-8]), start}, int64(binary.BigEndian.Uint64(value)), nil
	}
	v, err := codec.JSON[processor.WindowValue[int64]]().Decode(value)
	if err != nil {
		return windowKey{}, 0, fmt.Errorf("the value of %q: %w", key, err)
	}
	return windowKey{string(key), v.Start}, v.Value, nil
}
