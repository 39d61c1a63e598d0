package processor

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
)

// OutputOption configures an output.
type OutputOption func(*outputSpec)

// AsStream makes an output a stream of events rather than a table's
// updates: every emit reaches the topic, in emit order, even with the
// record cache on, which otherwise keeps only the last emit of a key
// within a commit interval. Windowed results are a stream: two windows of
// one key are two results (NewWindowedOutput is one).
func AsStream() OutputOption { return func(o *outputSpec) { o.stream = true } }

// WindowValue is a windowed result as a windowed output carries it, in
// JSON: {"start": ms, "end": ms, "value": ...}, times in epoch
// milliseconds, End as Windowed's.
type WindowValue[A any] struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	Value A     `json:"value"`
}

// Headers of a windowed output's tombstone (a session merged away under
// emit-on-update), whose value is empty: the window it retracts, in epoch
// milliseconds (decimal).
const (
	HeaderWindowStart = "rackstream.window.start"
	HeaderWindowEnd   = "rackstream.window.end"
)

// NewWindowedOutput declares an output of windowed results (see
// WindowedAggregation.Handler): each record's key is the input key encoded
// with key, so that it is co-partitioned with the input, and its value is
// the window and its aggregate as JSON (WindowValue). A session merged
// away is retracted with a tombstone of its key carrying the window in
// headers (HeaderWindowStart, HeaderWindowEnd). The output is a stream
// (AsStream).
func NewWindowedOutput[K, A any](t *Topology, topic string, key codec.Codec[K]) *Output[K, WindowValue[A]] {
	return NewOutput(t, topic, key, codec.JSON[WindowValue[A]](), AsStream())
}

// hasUncached reports whether t has writes the record cache must not take:
// a window or session store, or an AsStream output.
func (t *Topology) hasUncached() bool {
	return slices.ContainsFunc(t.stores, func(s *storeSpec) bool { return s.uncached }) ||
		slices.ContainsFunc(t.outputs, func(o *outputSpec) bool { return o.stream })
}

func windowHeaders(start, end time.Time) []kgo.RecordHeader {
	return []kgo.RecordHeader{
		{Key: HeaderWindowStart, Value: strconv.AppendInt(nil, start.UnixMilli(), 10)},
		{Key: HeaderWindowEnd, Value: strconv.AppendInt(nil, end.UnixMilli(), 10)},
	}
}

// WindowedKey returns a codec of windowed keys, for outputs keyed by key
// and window as Kafka Streams' windowed serdes key them: key's encoding,
// then the window's start and end in epoch milliseconds, 8 bytes
// big-endian each. Records are partitioned by those bytes, so such an
// output is not co-partitioned with the input.
func WindowedKey[K any](key codec.Codec[K]) codec.Codec[Windowed[K]] {
	return windowedKeyCodec[K]{key}
}

type windowedKeyCodec[K any] struct{ key codec.Codec[K] }

func (c windowedKeyCodec[K]) Encode(w Windowed[K]) ([]byte, error) {
	b, err := c.key.Encode(w.Key)
	if err != nil {
		return nil, err
	}
	b = binary.BigEndian.AppendUint64(append([]byte(nil), b...), uint64(w.Start.UnixMilli()))
	return binary.BigEndian.AppendUint64(b, uint64(w.End.UnixMilli())), nil
}

func (c windowedKeyCodec[K]) Decode(b []byte) (Windowed[K], error) {
	if len(b) < 16 {
		return Windowed[K]{}, fmt.Errorf("windowed key of %d bytes: shorter than its window", len(b))
	}
	n := len(b) - 16
	k, err := c.key.Decode(b[:n])
	if err != nil {
		return Windowed[K]{}, err
	}
	return Windowed[K]{
		Key:   k,
		Start: time.UnixMilli(int64(binary.BigEndian.Uint64(b[n:]))).UTC(),
		End:   time.UnixMilli(int64(binary.BigEndian.Uint64(b[n+8:]))).UTC(),
	}, nil
}
