// Package recarena carves the records handed to franz-go's producer, with
// their keys and values, out of slabs owned by one writer.
//
// A produced record and its bytes must stay untouched until the producer's
// promise runs, so the per-record path cannot reuse one scratch buffer, and
// a new record and a copy of its key and value per produce were most of the
// allocations of the output and changelog paths. An Arena hands out
// records from a slab of slabRecords and copies their keys and values into
// a shared chunk; nothing is given back. A slab (or chunk) is garbage once
// the producer has dropped the last record in it, which it does after the
// record's promise.
//
// Why not a pool (internal/recpool, which this replaced): the records went
// back to a sync.Pool in their promises, which run on the producer's
// goroutine, mostly on the other core, and the writer's next Get took them
// from the other P's pool (sync.Pool's steal) and wrote into memory whose
// cache lines were last written there. In the count's profile on Kafka 4.4
// the pool's Get was 9% of the process's CPU; the arena's New is 3%, and
// the count used 6-10% less CPU per record (BenchmarkProcessingCount/output,
// six interleaved runs each).
//
// Why three records a slab: three 160-byte records are the most that fit the
// allocator's 512 bytes for objects without a type header. A 64-record slab
// (10 KiB, with a header) measured slower than the pool in the same runs:
// its first touch (runtime.heapSetTypeSmallHeader) was 3-7% of the CPU.
//
// An Arena is not safe for concurrent use: it belongs to the goroutine (or
// lock) that owns the writes it serves (a store's writer, a task's record
// path).
package recarena

import "github.com/twmb/franz-go/pkg/kgo"

const (
	// slabRecords is how many records one allocation makes: large enough
	// that the allocation is rare, small enough that one slow promise pins
	// little (a kgo.Record is about 170 bytes).
	slabRecords = 3
	// chunkBytes is the size of a chunk of keys and values; a record larger
	// than a quarter of it gets a buffer of its own, so that a large
	// record neither wastes a chunk's tail nor pins a chunk of small ones.
	chunkBytes = 8 << 10
)

// Arena hands out records whose Key and Value are copies. The zero value is
// ready to use.
type Arena struct {
	recs []kgo.Record // the current slab's records not yet handed out
	buf  []byte       // the current chunk: its free room is buf[len(buf):cap(buf)]
}

// New returns a zeroed record whose Key and Value are copies of key and
// value. A nil value stays nil (a tombstone); an empty one is empty, not
// nil. The caller sets the rest (topic, partition, headers, timestamp) and
// hands the record to the producer; it must not be used after its promise.
func (a *Arena) New(key, value []byte) *kgo.Record {
	if len(a.recs) == 0 {
		a.recs = make([]kgo.Record, slabRecords)
	}
	r := &a.recs[0]
	a.recs = a.recs[1:]
	n := len(key) + len(value)
	var b []byte
	switch {
	case n > chunkBytes/4:
		b = make([]byte, n)
	case n > cap(a.buf)-len(a.buf):
		a.buf = make([]byte, 0, chunkBytes)
		fallthrough
	default:
		off := len(a.buf)
		a.buf = a.buf[:off+n]
		b = a.buf[off : off+n : off+n]
	}
	copy(b, key)
	copy(b[len(key):], value)
	r.Key = b[:len(key):len(key)]
	if value != nil {
		r.Value = b[len(key):]
	}
	return r
}
