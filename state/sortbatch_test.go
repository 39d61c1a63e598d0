package state

import (
	"fmt"
	"math/rand/v2"
	"slices"
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
