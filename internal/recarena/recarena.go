// Package recarena carves the records handed to franz-go's producer, with
// their keys and values, out of slabs that one writer owns and that come
// back to it whole once the producer is done with every record in them.
//
// A produced record and its bytes must stay untouched until the producer's
// promise runs, so the per-record path cannot reuse one scratch buffer, and
// a new record and a copy of its key and value per produce were most of the
// allocations of the output and changelog paths. An Arena hands out the
// records of a slab one after another and copies their keys and values into
// the slab's buffer; the promise gives each record back (Release), and the
// last record of a slab to come back puts the whole slab on its arena's
// free list, from which the writer takes every returned slab at once.
//
// Why not a pool (internal/recpool, which this replaced): the records went
// back one by one to a sync.Pool in their promises, which run on the
// producer's goroutine, mostly on the other core, and the writer's next Get
// took them from the other P's pool (sync.Pool's steal). In the count's
// profile on Kafka 4.4 the pool's Get was 9% of the process's CPU. Here a
// record costs the writer no synchronisation at all and its promise one
// atomic add on its slab's counter; a slab changes hands twice per use.
//
// Why not fresh memory (this package's first form: three records an
// allocation, nothing given back): a little slower on the count's CPU
// (2.07 against 1.97 µs a record, five interleaved runs each) and 320 bytes of
// garbage per input record (two records), so the garbage collector's
// cycles came that much more often in the cluster's instances.
//
// An Arena is not safe for concurrent use: it belongs to the goroutine (or
// lock) that owns the writes it serves (a store's writer, a task's record
// path). Release is safe from any goroutine.
package recarena

import (
	"sync/atomic"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// slabRecords is how many records a slab holds: a record in flight
	// keeps its whole slab from coming back, so a slab is a small share of
	// what a producer keeps in flight (thousands of records) while the
	// writer takes a slab only every slabRecords records.
	slabRecords = 64
	// slabBytes is a slab's room for its records' keys and values: 128
	// bytes a record. A record that does not fit in what is left ends the
	// slab early (its unused records come back with it).
	slabBytes = slabRecords * 128
	// ownBytes is the size above which a record's key and value get an
	// allocation of their own instead of room in a slab, so that one
	// large record neither ends a slab after a few records nor makes a
	// slab's buffer large for all its later uses.
	ownBytes = 1 << 10
)

// Arena hands out records whose Key and Value are copies, from slabs it
// takes back once released. The zero value is ready to use.
type Arena struct {
	cur  *slab // the slab records are being carved from; nil before the first
	next int   // cur.recs[next] is the next record to hand out
	// spare are slabs taken back from free and not yet used, linked by
	// slab.link. Writer only.
	spare *slab
	// free is the stack of slabs whose records all came back: Release
	// pushes (any goroutine), the writer takes the whole stack at once
	// (Swap), so no slab is ever popped while another push reads it.
	free atomic.Pointer[slab]
}

// record is a handed-out record and its slab; the kgo.Record is the first
// field, so the *kgo.Record the producer's promise receives is the
// *record (Release's one unsafe step, which holds only for records from
// New).
type record struct {
	rec  kgo.Record
	slab *slab
}

type slab struct {
	recs [slabRecords]record
	buf  []byte // the records' keys and values; its room is buf[len(buf):cap(buf)]
	// out counts the slab's records handed out and not yet released, plus
	// one while the writer is still carving from it (seal subtracts that
	// one and the records it never handed out). Whoever brings it to zero
	// pushes the slab on its arena's free list.
	out   atomic.Int32
	arena *Arena
	link  *slab // the next slab on a free or spare list
}

// New returns a zeroed record whose Key and Value are copies of key and
// value. A nil value stays nil (a tombstone); an empty one is empty, not
// nil. The caller sets the rest (topic, partition, headers, timestamp) and
// hands the record to the producer, whose promise must call Release once:
// a record the producer never takes must be Released by the caller.
func (a *Arena) New(key, value []byte) *kgo.Record {
	n := len(key) + len(value)
	inline := n <= ownBytes
	if a.cur == nil || a.next == slabRecords || inline && n > cap(a.cur.buf)-len(a.cur.buf) {
		a.seal()
		a.take()
	}
	s := a.cur
	r := &s.recs[a.next]
	a.next++
	r.rec = kgo.Record{}
	var b []byte
	if inline {
		off := len(s.buf)
		s.buf = s.buf[:off+n]
		b = s.buf[off : off+n : off+n]
	} else {
		b = make([]byte, n)
	}
	copy(b, key)
	copy(b[len(key):], value)
	r.rec.Key = b[:len(key):len(key)]
	if value != nil {
		r.rec.Value = b[len(key):]
	}
	return &r.rec
}

// Release gives back a record from New once the producer is done with it
// (in its promise); neither the caller nor the producer may use it after.
// Safe from any goroutine.
func Release(rec *kgo.Record) {
	s := (*record)(unsafe.Pointer(rec)).slab
	if s.out.Add(-1) == 0 {
		s.arena.push(s)
	}
}

// take makes cur a slab with every record free: a spare one, else one
// released since the last take, else a new one.
func (a *Arena) take() {
	if a.spare == nil {
		a.spare = a.free.Swap(nil)
	}
	s := a.spare
	if s != nil {
		a.spare, s.link = s.link, nil
		s.buf = s.buf[:0]
	} else {
		s = &slab{arena: a, buf: make([]byte, 0, slabBytes)}
		for i := range s.recs {
			s.recs[i].slab = s
		}
	}
	s.out.Store(slabRecords + 1)
	a.cur, a.next = s, 0
}

// seal stops carving from cur: the records it never handed out and the
// writer's own count come off its counter.
func (a *Arena) seal() {
	s := a.cur
	if s == nil {
		return
	}
	a.cur = nil
	if s.out.Add(-int32(slabRecords-a.next)-1) == 0 {
		a.push(s)
	}
}

func (a *Arena) push(s *slab) {
	for {
		head := a.free.Load()
		s.link = head
		if a.free.CompareAndSwap(head, s) {
			return
		}
	}
}
