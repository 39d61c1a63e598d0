package recarena

import (
	"bytes"
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

// The records of one arena share slabs and chunks: each must keep its own
// bytes, whatever later records are written, and appending to a key or a
// value must not run into its neighbour.
func TestRecordsKeepTheirOwnBytes(t *testing.T) {
	var a Arena
	type kv struct{ key, value []byte }
	var want []kv
	var got []*kgo.Record
	for i := range 5000 {
		// Sizes cross the chunk's end and the large-record bound.
		k := bytes.Repeat([]byte{byte(i)}, 1+i%17)
		v := bytes.Repeat([]byte{byte(i >> 3)}, (i*37)%(chunkBytes/3))
		want = append(want, kv{bytes.Clone(k), bytes.Clone(v)})
		got = append(got, a.New(k, v))
	}
	for i, r := range got {
		if !bytes.Equal(r.Key, want[i].key) || !bytes.Equal(r.Value, want[i].value) {
			t.Fatalf("record %d changed: key %d bytes, value %d bytes", i, len(r.Key), len(r.Value))
		}
		if cap(r.Key) != len(r.Key) || cap(r.Value) != len(r.Value) {
			t.Fatalf("record %d: key capacity %d (length %d), value capacity %d (length %d)",
				i, cap(r.Key), len(r.Key), cap(r.Value), len(r.Value))
		}
		if r.Topic != "" || r.Partition != 0 || r.Headers != nil || !r.Timestamp.IsZero() {
			t.Fatalf("record %d is not zeroed: %+v", i, r)
		}
	}
}

// The slab's size is chosen to stay within the allocator's headerless
// small objects; a kgo.Record that grows past that makes the choice stale.
func TestASlabFitsAHeaderlessAllocation(t *testing.T) {
	if n := slabRecords * unsafe.Sizeof(kgo.Record{}); n > 512 {
		t.Fatalf("a slab is %d bytes, more than the allocator's 512 for objects without a type header: "+
			"re-measure slabRecords (package comment)", n)
	}
}

func TestAllocationsPerRecord(t *testing.T) {
	var a Arena
	key, value := []byte("key-12345"), []byte("8")
	// One slab per three records, one chunk per ~800 of these records.
	if n := testing.AllocsPerRun(3000, func() { a.New(key, value) }); n > 0.34 {
		t.Fatalf("%.2f allocations per record, want at most one per slab of %d", n, slabRecords)
	}
}

func BenchmarkNew(b *testing.B) {
	var a Arena
	key, value := []byte("key-12345"), []byte("8")
	b.ReportAllocs()
	for b.Loop() {
		a.New(key, value)
	}
}
