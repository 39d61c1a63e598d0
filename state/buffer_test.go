package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestWriteBufferKeepsTheLatestWriteOfEachKey(t *testing.T) {
	b := newWriteBuffer()
	must(t, b.put([]byte("a"), bufValue, []byte("1")))
	must(t, b.put([]byte("b"), bufValue, []byte("2")))
	must(t, b.put([]byte("a"), bufValue, []byte("three")))
	must(t, b.put([]byte("b"), bufTombstone, nil))
	must(t, b.put([]byte(""), bufValue, []byte("empty key")))
	if b.Len() != 3 {
		t.Fatalf("Len = %d, want 3 keys", b.Len())
	}
	for _, c := range []struct {
		key, value string
		deleted    bool
		found      bool
	}{
		{key: "a", value: "three", found: true},
		{key: "b", deleted: true, found: true},
		{key: "", value: "empty key", found: true},
		{key: "c"},
	} {
		v, ok := b.get([]byte(c.key))
		if ok != c.found {
			t.Fatalf("get(%q) found = %v, want %v", c.key, ok, c.found)
		}
		cv, cdel, cok := b.getCopy([]byte(c.key))
		if cok != c.found || cdel != c.deleted {
			t.Fatalf("getCopy(%q) = deleted %v found %v, want %v %v", c.key, cdel, cok, c.deleted, c.found)
		}
		if !ok {
			continue
		}
		if (v[0] == bufTombstone) != c.deleted || string(v[1:]) != c.value || string(cv) != c.value {
			t.Fatalf("%q = tag %d %q (copy %q), want deleted %v %q", c.key, v[0], v[1:], cv, c.deleted, c.value)
		}
	}
	b.reset()
	if _, ok := b.get([]byte("a")); ok || b.Len() != 0 {
		t.Fatalf("after reset: a found %v, Len %d", ok, b.Len())
	}
	must(t, b.put([]byte("z"), bufValue, []byte("after")))
	if v, ok := b.get([]byte("z")); !ok || string(v[1:]) != "after" {
		t.Fatalf("a write after reset: %q %v", v, ok)
	}
}

func TestWriteBufferHandsOutBytesThatLaterWritesLeaveAlone(t *testing.T) {
	// A scan's entries (and a reader's) are slices of the arena: an
	// overwrite, or a write that makes the arena grow, must not change them.
	b := newWriteBuffer()
	must(t, b.put([]byte("k"), bufValue, []byte("first")))
	got := b.appendRange(nil, nil, nil, false)
	must(t, b.put([]byte("k"), bufValue, []byte("second")))
	for i := range 10_000 {
		must(t, b.put(fmt.Appendf(nil, "grow-%05d", i), bufValue, bytes.Repeat([]byte{'x'}, 100)))
	}
	if len(got) != 1 || string(got[0].Key) != "k" || string(got[0].Value) != "first" {
		t.Fatalf("entries taken before the writes = %+v", got)
	}
	if v, _ := b.get([]byte("k")); string(v[1:]) != "second" {
		t.Fatalf("k = %q, want second", v[1:])
	}
}

// TestWriteBufferMatchesAMapAndASortedScan is a property test of random
// writes, deletes, scans and resets against a plain map. Every range the
// buffer returns, sorted by the task's path or by a reader's, is the map's
// keys in range, in order, with their latest values.
func TestWriteBufferMatchesAMapAndASortedScan(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		b := newWriteBuffer()
		want := map[string]string{} // value, or "\x00del" for a tombstone
		key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(300)) }
		for op := range 3000 {
			switch r := rng.IntN(100); {
			case r < 60:
				k, v := key(), fmt.Appendf(nil, "v%d", op)
				must(t, b.put(k, bufValue, v))
				want[string(k)] = string(v)
			case r < 75:
				k := key()
				must(t, b.put(k, bufTombstone, nil))
				want[string(k)] = "\x00del"
			case r < 97:
				start, end := key(), key()
				if bytes.Compare(start, end) > 0 {
					start, end = end, start
				}
				if rng.IntN(4) == 0 {
					start = nil
				}
				if rng.IntN(4) == 0 {
					end = nil
				}
				reader := b.appendRange(nil, start, end, false)
				b.sortKeys()
				task := b.appendRange(nil, start, end, true)
				var exp []string
				for k, v := range want {
					if inRange(k, start, end) {
						exp = append(exp, k+"="+v)
					}
				}
				slices.Sort(exp)
				for name, got := range map[string][]Entry{"reader": reader, "task": task} {
					var g []string
					for _, e := range got {
						v := string(e.Value)
						if e.Deleted {
							v = "\x00del"
						}
						g = append(g, string(e.Key)+"="+v)
					}
					if !slices.Equal(g, exp) {
						t.Fatalf("seed %d op %d: %s range [%q, %q) = %q, want %q", seed, op, name, start, end, g, exp)
					}
				}
			default:
				b.reset()
				clear(want)
			}
			if b.Len() != len(want) {
				t.Fatalf("seed %d op %d: Len %d, want %d", seed, op, b.Len(), len(want))
			}
		}
	}
}

// TestWriteBufferReadersRaceTheWriter runs readers on other goroutines
// beside the writer (go test -race checks the locking): every value a
// reader sees is one the writer wrote for that key.
func TestWriteBufferReadersRaceTheWriter(t *testing.T) {
	b := newWriteBuffer()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if v, _, ok := b.getCopy([]byte("k007")); ok && !bytes.HasPrefix(v, []byte("k007=")) {
					t.Errorf("getCopy(k007) = %q", v)
					return
				}
				for _, e := range b.appendRange(nil, []byte("k0"), []byte("k1"), false) {
					if !e.Deleted && !bytes.HasPrefix(e.Value, append(e.Key, '=')) {
						t.Errorf("entry %q = %q", e.Key, e.Value)
						return
					}
				}
			}
		}()
	}
	for i := range 20_000 {
		k := fmt.Appendf(nil, "k%03d", i%200)
		must(t, b.put(k, bufValue, fmt.Appendf(k, "=%d", i)))
		if i%5000 == 4999 {
			b.sortKeys()
		}
	}
	close(done)
	wg.Wait()
}

func BenchmarkWriteBufferGetPut(b *testing.B) {
	keys, vals := benchRecords(100_000)
	buf := newWriteBuffer()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := keys[i%len(keys)]
		buf.get(k)
		must(b, buf.put(k, bufValue, vals[i%len(vals)][:8]))
		i++
		if i%300_000 == 0 {
			buf.reset()
		}
	}
}
