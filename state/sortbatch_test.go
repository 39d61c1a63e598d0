package state

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/storage"
)

// op is one write of a batch: a put, or a delete when del.
type op struct {
	key, value string
	del        bool
}

func batchOf(ops ...op) *leveldb.Batch {
	b := new(leveldb.Batch)
	for _, o := range ops {
		if o.del {
			b.Delete([]byte(o.key))
		} else {
			b.Put([]byte(o.key), []byte(o.value))
		}
	}
	return b
}

// opsOf is the replay of b.
type opsOf []op

func (o *opsOf) Put(k, v []byte) { *o = append(*o, op{key: string(k), value: string(v)}) }
func (o *opsOf) Delete(k []byte) { *o = append(*o, op{key: string(k), del: true}) }

func replayed(t *testing.T, b *leveldb.Batch) []op {
	t.Helper()
	var o opsOf
	if err := b.Replay(&o); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestBatchSorterWritesEachKeyOnceInOrderItsLastWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []op
		want []op
	}{
		{"empty", nil, nil},
		{"one record as it is", []op{{key: "b", value: "1"}}, []op{{key: "b", value: "1"}}},
		{"out of order", []op{{key: "c", value: "3"}, {key: "a", value: "1"}, {key: "b", value: "2"}},
			[]op{{key: "a", value: "1"}, {key: "b", value: "2"}, {key: "c", value: "3"}}},
		{"the last of two puts", []op{{key: "k", value: "old"}, {key: "a", value: "1"}, {key: "k", value: "new"}},
			[]op{{key: "a", value: "1"}, {key: "k", value: "new"}}},
		{"a delete after a put", []op{{key: "k", value: "v"}, {key: "k", del: true}},
			[]op{{key: "k", del: true}}},
		{"a put after a delete", []op{{key: "k", del: true}, {key: "k", value: "back"}},
			[]op{{key: "k", value: "back"}}},
		{"an empty value is not a delete", []op{{key: "k", value: "v"}, {key: "k", value: ""}},
			[]op{{key: "k", value: ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s batchSorter
			in := batchOf(tc.in...)
			got := replayed(t, s.sorted(in))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("sorted %v = %v, want %v", tc.in, got, tc.want)
			}
			if again := replayed(t, in); !slices.Equal(again, tc.in) {
				t.Fatalf("the input batch changed: %v, was %v", again, tc.in)
			}
		})
	}
}

// TestBatchSorterLeavesTheSameDatabase writes random batches to two LevelDB
// databases, as they are and sorted, and compares the databases: a batch
// is applied atomically, so its sorted form must leave the same state.
func TestBatchSorterLeavesTheSameDatabase(t *testing.T) {
	open := func() *leveldb.DB {
		db, err := leveldb.Open(storage.NewMemStorage(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	plain, sorted := open(), open()
	rng := rand.New(rand.NewPCG(1, 2))
	var s batchSorter
	for round := range 200 {
		var ops []op
		for range rng.IntN(50) {
			o := op{key: fmt.Sprintf("k%02d", rng.IntN(40)), value: fmt.Sprint(round, rng.Int())}
			o.del = rng.IntN(5) == 0
			ops = append(ops, o)
		}
		b := batchOf(ops...)
		if err := sorted.Write(s.sorted(b), nil); err != nil {
			t.Fatal(err)
		}
		if err := plain.Write(b, nil); err != nil {
			t.Fatal(err)
		}
	}
	dump := func(db *leveldb.DB) (kv []op) {
		it := db.NewIterator(nil, nil)
		defer it.Release()
		for it.Next() {
			kv = append(kv, op{key: string(it.Key()), value: string(it.Value())})
		}
		return kv
	}
	want, got := dump(plain), dump(sorted)
	if len(want) == 0 {
		t.Fatal("the random batches left nothing to compare")
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sorted batches left %d keys %v,\nplain ones %d keys %v", len(got), got, len(want), want)
	}
}

// TestBatchSorterOrdersAnyKeysAsBytesCompare checks the sort's shortcut
// against bytes.Compare: the eight bytes after the keys' shared prefix,
// compared as a number. The random batches' keys share prefixes of every
// length, are prefixes of each other, tie in those eight bytes and differ
// after them, and hold zero and 0xff bytes. One batch in four is long
// enough to be sorted by radix.
func TestBatchSorterOrdersAnyKeysAsBytesCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{0x00, 0x01, 'a', 'b', 0xff}
	var s batchSorter
	for round := range 2000 {
		shared := make([]byte, rng.IntN(12))
		for i := range shared {
			shared[i] = alphabet[rng.IntN(len(alphabet))]
		}
		var ops []op
		n := 2 + rng.IntN(40)
		if round%4 == 0 {
			n = radixMin + rng.IntN(4*radixMin) // sorted by radix
		}
		for i := range n {
			k := append([]byte(nil), shared...)
			for range rng.IntN(20) {
				k = append(k, alphabet[rng.IntN(len(alphabet))])
			}
			if len(ops) > 0 && rng.IntN(4) == 0 {
				k = []byte(ops[rng.IntN(len(ops))].key) // the same key again
			}
			ops = append(ops, op{key: string(k), value: fmt.Sprint(round, i), del: rng.IntN(6) == 0})
		}
		// What the sorted batch must be: a stable sort by key, then
		// each key's last write.
		want := slices.Clone(ops)
		slices.SortStableFunc(want, func(x, y op) int { return strings.Compare(x.key, y.key) })
		var last []op
		for i, o := range want {
			if i+1 < len(want) && want[i+1].key == o.key {
				continue
			}
			if o.del {
				o.value = ""
			}
			last = append(last, o)
		}
		if got := replayed(t, s.sorted(batchOf(ops...))); !slices.Equal(got, last) {
			t.Fatalf("round %d: sorted %v\n= %v\nwant %v", round, ops, got, last)
		}
	}
}

// BenchmarkStandbyTailFlush measures what a tailing standby does with one
// fetch of a count's changelog at a 1 s commit interval. It copies the
// records into the store's apply batch, sorts the batch (batchSorter), and
// writes it to a memtable that already holds the partition's keys. The
// keys are the count benchmark's: "key-N" among 100,000, a twelfth of them
// here. The values are 8-byte counts, and a batch holds 4,000 records.
func BenchmarkStandbyTailFlush(b *testing.B) {
	const keys, batchLen = 8_333, 4_000
	db, err := leveldb.Open(storage.NewMemStorage(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var key []byte
	value := make([]byte, 8)
	fill := new(leveldb.Batch)
	for i := range keys {
		key = appendDataKey(key[:0], []byte(fmt.Sprintf("key-%d", i*12)))
		fill.Put(key, value)
	}
	if err := db.Write(fill, nil); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([][]byte, batchLen)
	for i := range recs {
		recs[i] = []byte(fmt.Sprintf("key-%d", rng.IntN(keys)*12))
	}
	var sorter batchSorter
	var rep replicaState // a tailing standby's: its batch is dropped when idle
	rep.init(nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		batch := rep.batchFor(DefaultOptions().RestoreBatchBytes)
		for _, k := range recs {
			key = appendDataKey(key[:0], k)
			batch.Put(key, value)
		}
		rep.lastBytes = len(batch.Dump())
		sorted := sorter.sorted(batch)
		sorted.Put(checkpointKey, value) // as DB.writeBatch does
		if err := db.Write(sorted, nil); err != nil {
			b.Fatal(err)
		}
		batch.Reset()
		rep.idle()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchLen), "ns/record")
}
