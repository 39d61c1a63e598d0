// Package recpool recycles records handed to franz-go's producer, each
// with the buffer that holds its key and value.
//
// A produced record and its bytes must stay untouched until the producer's
// promise runs, so the per-record path cannot reuse one scratch buffer; a
// new record and a copy of its key and value per produce were most of the
// allocations of the output and changelog paths. A Pool hands out a
// record whose Key and Value point into its own buffer, and takes it back
// in the promise, when the producer holds no reference to it any more.
//
// The promise receives the *kgo.Record the producer was given; the pool
// finds its buffer again because the kgo.Record is the first field of the
// pooled struct, so the pointer to one is the pointer to the other. That
// conversion is the one unsafe step, and it lives here only: a record
// given to Put must come from the same Pool's Get.
package recpool

import (
	"sync"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxKept is the largest buffer a pool keeps: an outsized record's buffer
// goes to the garbage collector instead of pinning its memory.
const maxKept = 64 << 10

// Pool recycles records with their key-and-value buffers. The zero value
// is ready to use; it is safe for concurrent use (sync.Pool).
type Pool struct{ p sync.Pool }

// pooled is a record and the buffer its Key and Value point into; rec must
// stay the first field (see the package comment).
type pooled struct {
	rec kgo.Record
	buf []byte
}

// Get returns a record whose Key and Value are copies of key and value in
// its own buffer. A nil value stays nil (a tombstone); an empty one is
// empty, not nil. The caller sets the rest (topic, partition, headers,
// timestamp) and gives the record back with Put once its promise has run.
func (p *Pool) Get(key, value []byte) *kgo.Record {
	r, ok := p.p.Get().(*pooled)
	if !ok {
		r = new(pooled)
	}
	r.buf = append(append(r.buf[:0], key...), value...)
	r.rec.Key = r.buf[:len(key):len(key)]
	if value != nil {
		r.rec.Value = r.buf[len(key):]
	}
	return &r.rec
}

// Put takes back a record from Get whose promise has run: the producer
// holds no reference to it any more, and neither may the caller.
func (p *Pool) Put(rec *kgo.Record) {
	r := (*pooled)(unsafe.Pointer(rec))
	if cap(r.buf) > maxKept {
		return
	}
	r.rec = kgo.Record{}
	p.p.Put(r)
}
