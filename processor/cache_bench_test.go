package processor

import (
	"strconv"
	"testing"

	"github.com/rackstream/rackstream/state"
)

// BenchmarkCachedRecordPath is the per-record work of a task whose record
// cache holds its keys (the count with an output, between commits): a store
// read served by the cache, then the record's store write and emit applied
// to the cache. No broker and no LevelDB: it isolates what the cache costs
// per record (its lock included), which the end-to-end benchmarks measure
// only within their noise.
func BenchmarkCachedRecordPath(b *testing.B) {
	// One store (target 0) and the output after it (target 1), as the
	// count's task has them: with no stores the output's writes went to
	// target 0, the store's own entries.
	t := &task{cache: newRecordCache(64<<20, 1), env: &taskEnv{}, stores: make([]*state.DB, 1)}
	be := taskBackend{t}
	store, out := &storeSpec{index: 0}, &outputSpec{index: 0}
	const n = 4096
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte("key-" + strconv.Itoa(i))
	}
	value := []byte("12345")
	ws := []write{{store: store, value: value}, {output: out, value: value}}
	apply := func(k []byte) {
		ws[0].key, ws[1].key = k, k
		if err := be.apply(0, nil, ws); err != nil {
			b.Fatal(err)
		}
	}
	for _, k := range keys { // warm: every key cached
		apply(k)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := keys[i%n]
		if _, found, err := be.get(0, store, k); err != nil || !found {
			b.Fatalf("get %s: found %v, %v", k, found, err)
		}
		apply(k)
	}
}
