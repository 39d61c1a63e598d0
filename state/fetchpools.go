package state

import (
	"math/bits"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordPool lets the changelog consumer reuse the Record slices it
// decodes fetched batches into. apply copies each record into a LevelDB
// batch and recycles it, so restore and tailing allocate no Record per
// record.
//
// franz-go asks for one slice per record batch, sized to the batch, and
// holds it until every record of the batch is recycled. A fetch holds
// every batch it carries at once: a restore of a changelog written in
// small batches (a commit each) can bring thousands. So slices come in
// power-of-two size classes, each with its own pool, and a batch of n
// records holds a slice of at most 2n: a slice sized for a large batch
// never serves a small one.
type recordPool struct {
	classes [recordClasses]sync.Pool
}

// recordClasses bounds the pooled sizes: slices of up to 1<<(recordClasses-1)
// records are pooled, larger ones allocated and left to the collector.
const recordClasses = 17

// recordClass is the size class of a slice for n records: the smallest c
// with 1<<c >= n.
func recordClass(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

func (rp *recordPool) GetRecords(n int) []kgo.Record {
	c := recordClass(n)
	if c >= recordClasses {
		return make([]kgo.Record, 0, n)
	}
	if v, ok := rp.classes[c].Get().(*[]kgo.Record); ok {
		return (*v)[:0]
	}
	return make([]kgo.Record, 0, 1<<c)
}

func (rp *recordPool) PutRecords(rs []kgo.Record) {
	c := recordClass(cap(rs))
	if c >= recordClasses || cap(rs) != 1<<c {
		return // not one of ours
	}
	rp.classes[c].Put(&rs)
}

// decompressPool reuses the buffers that compressed batches are
// decompressed into; the active path's producers compress with snappy by
// default. Records alias the buffers until recycled, and apply copies
// them first.
type decompressPool struct{ p sync.Pool }

func (dp *decompressPool) GetDecompressBytes(compressed []byte, _ kgo.CompressionCodecType) []byte {
	if v, ok := dp.p.Get().(*[]byte); ok && cap(*v) >= 2*len(compressed) {
		return (*v)[:0]
	}
	return make([]byte, 0, 4*len(compressed))
}

func (dp *decompressPool) PutDecompressBytes(b []byte) {
	dp.p.Put(&b)
}
