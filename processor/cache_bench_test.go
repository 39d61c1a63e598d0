package processor

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
		if err := be.apply(0, time.Time{}, ws); err != nil {
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

// BenchmarkRecordCacheCommitChurn is one count task's cache at half the
// cluster benchmark's load: 8,333 keys (100,000 over 12 tasks), each
// record a read and a write back of a random key and its emit, and a
// flush every 22,000 records (one commit a second at 88,000 records/s an
// instance, four tasks) or every 660,000 (the default 30 s). With a flush
// a second most keys' emits leave at every commit: what a spent output
// entry (cache.go) saves.
func BenchmarkRecordCacheCommitChurn(b *testing.B) {
	for _, c := range []struct {
		name  string
		every int
	}{{"commit-1s", 22_000}, {"commit-30s", 660_000}} {
		b.Run(c.name, func(b *testing.B) {
			rc := newRecordCache(2560<<10, 1) // 10 MiB over 4 tasks
			keys := make([][]byte, 8333)
			for i := range keys {
				keys[i] = []byte("key-" + strconv.Itoa(i*12+5))
			}
			flush := func(int, []byte, []byte, []kgo.RecordHeader) error { return nil }
			value := []byte("12345678")
			n := uint64(1)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				n = n*6364136223846793005 + 1442695040888963407 // the bench driver's LCG
				k := keys[(n>>33)%uint64(len(keys))]
				rc.get(0, k)
				rc.put(0, k, value, nil)
				rc.put(1, k, value, nil)
				if rc.over() {
					if err := rc.evict(flush); err != nil {
						b.Fatal(err)
					}
				}
				if i%c.every == c.every-1 {
					if err := rc.drain(flush); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
