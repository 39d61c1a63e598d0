package recarena

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestNewCopiesKeyAndValueAndKeepsTombstones(t *testing.T) {
	var a Arena
	key, value := []byte("key"), []byte("value")
	r := a.New(key, value)
	key[0], value[0] = 'X', 'X' // the caller's buffers are its own again
	if string(r.Key) != "key" || string(r.Value) != "value" {
		t.Fatalf("record = %q/%q, want key/value", r.Key, r.Value)
	}
	for _, c := range []struct {
		name  string
		value []byte
		nil   bool
	}{{"tombstone", nil, true}, {"empty", []byte{}, false}} {
		r := a.New([]byte("k"), c.value)
		if (r.Value == nil) != c.nil || len(r.Value) != 0 || string(r.Key) != "k" {
			t.Fatalf("%s: record %q/%#v, Value nil %v", c.name, r.Key, r.Value, r.Value == nil)
		}
	}
}

// kv makes record i's key and value: sizes that end slabs early, cross
// ownBytes and fill slabs exactly.
func kv(i int) ([]byte, []byte) {
	k := bytes.Repeat([]byte{byte(i)}, 1+i%17)
	v := bytes.Repeat([]byte{byte(i >> 3)}, (i*37)%(3*ownBytes/2))
	return k, v
}

// Records in flight share slabs: each must keep its own bytes whatever
// later records are written, and appending to a key or a value must not
// run into its neighbour.
func TestRecordsInFlightKeepTheirOwnBytes(t *testing.T) {
	var a Arena
	var got []*kgo.Record
	for i := range 5000 {
		k, v := kv(i)
		got = append(got, a.New(k, v))
	}
	for i, r := range got {
		k, v := kv(i)
		if !bytes.Equal(r.Key, k) || !bytes.Equal(r.Value, v) {
			t.Fatalf("record %d changed: key %d bytes, value %d bytes", i, len(r.Key), len(r.Value))
		}
		if cap(r.Key) != len(r.Key) || cap(r.Value) != len(r.Value) {
			t.Fatalf("record %d: key capacity %d (length %d), value capacity %d (length %d)",
				i, cap(r.Key), len(r.Key), cap(r.Value), len(r.Value))
		}
	}
}

func slabOf(r *kgo.Record) *slab { return (*record)(unsafe.Pointer(r)).slab }

// A slab comes back only when every record handed out from it has been
// released, and then comes back zeroed.
func TestASlabIsReusedOnlyOnceEveryRecordIsReleased(t *testing.T) {
	var a Arena
	first := make([]*kgo.Record, slabRecords)
	for i := range first {
		first[i] = a.New([]byte("k"), []byte("v"))
	}
	s := slabOf(first[0])
	for _, r := range first[:slabRecords-1] {
		r.Topic, r.Offset, r.Headers = "t", 7, []kgo.RecordHeader{{Key: "h"}}
		Release(r)
	}
	var held []*kgo.Record
	for range 3 * slabRecords {
		r := a.New([]byte("k2"), []byte("v2"))
		if slabOf(r) == s {
			t.Fatal("a slab with a record in flight was handed out again")
		}
		held = append(held, r)
	}
	Release(first[slabRecords-1])
	for _, r := range held {
		Release(r)
	}
	// The slab being carved from now is still the writer's; the next ones
	// come from those released, the first slab among them.
	seen := false
	for range 4 * slabRecords {
		r := a.New([]byte("k3"), []byte("v3"))
		if r.Topic != "" || r.Offset != 0 || r.Headers != nil || string(r.Key) != "k3" || string(r.Value) != "v3" {
			t.Fatalf("reused record = %+v", r)
		}
		seen = seen || slabOf(r) == s
		Release(r)
	}
	if !seen {
		t.Fatal("the released slab never came back")
	}
}

// The writer on one goroutine, the releases on others (the producer's
// promises): no record is handed out again while in flight (its bytes
// would change under the releaser's check). Run it with -race too.
func TestReleaseFromOtherGoroutines(t *testing.T) {
	var a Arena
	type sent struct {
		r *kgo.Record
		i int
	}
	ch := make(chan sent, 256)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for s := range ch {
				k, v := kv(s.i)
				if !bytes.Equal(s.r.Key, k) || !bytes.Equal(s.r.Value, v) {
					select {
					case errs <- fmt.Errorf("record %d changed while in flight", s.i):
					default:
					}
				}
				s.r.Offset = int64(s.i) // as the producer sets it
				Release(s.r)
			}
		})
	}
	for i := range 50_000 {
		k, v := kv(i)
		ch <- sent{a.New(k, v), i}
	}
	close(ch)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestNoAllocationOnceSlabsComeBack(t *testing.T) {
	var a Arena
	key, value := []byte("key-12345"), []byte("8")
	for range 4 * slabRecords {
		Release(a.New(key, value))
	}
	if n := testing.AllocsPerRun(10*slabRecords, func() { Release(a.New(key, value)) }); n > 0 {
		t.Fatalf("%.3f allocations per record once its slabs come back", n)
	}
}

func BenchmarkNewRelease(b *testing.B) {
	var a Arena
	key, value := []byte("key-12345"), []byte("8")
	b.ReportAllocs()
	for b.Loop() {
		Release(a.New(key, value))
	}
}
