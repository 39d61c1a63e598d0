package processor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/state"
)

// The record cache on its own (cache.go): LRU order, write-through on
// eviction, budget accounting. No task, no broker.

// written is one entry a flush or an eviction wrote through.
type written struct {
	target int
	key    string
	value  string
	del    bool
}

// recorder returns a cacheFlushFunc appending to *out, copying what it is
// handed (it is only valid during the call).
func recorder(out *[]written) cacheFlushFunc {
	return func(target int, key, value []byte, _ []kgo.RecordHeader) error {
		*out = append(*out, written{target, string(key), string(value), value == nil})
		return nil
	}
}

// budgetFor is the budget that holds exactly n entries of 1-byte keys and
// 1-byte values.
func budgetFor(n int) int64 { return int64(n) * (2 + cacheOverhead) }

func putString(c *recordCache, target int, k, v string) {
	c.put(target, []byte(k), []byte(v), nil)
}

// TestRecordCacheEvictsTheLeastRecentlyWritten: a rewrite makes a key the
// most recent, so the key evicted is the one written longest ago, with its
// latest value, and the others stay cached.
func TestRecordCacheEvictsTheLeastRecentlyWritten(t *testing.T) {
	c := newRecordCache(budgetFor(3), 3)
	var out []written
	putString(c, 0, "a", "1")
	putString(c, 0, "b", "1")
	putString(c, 0, "c", "1")
	putString(c, 0, "a", "2") // a is now the most recent; b the least
	putString(c, 0, "b", "2") // b is now the most recent; c the least
	if c.over() {
		t.Fatal("3 entries over a budget of 3")
	}
	putString(c, 0, "d", "1")
	if err := c.evict(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	if want := []written{{0, "c", "1", false}}; !slices.Equal(out, want) {
		t.Fatalf("evicted %v, want %v", out, want)
	}
	for _, k := range []string{"a", "b", "d"} {
		if _, found := c.get(0, []byte(k)); !found {
			t.Errorf("%s evicted; only c should be", k)
		}
	}
	if v, _ := c.get(0, []byte("a")); string(v) != "2" {
		t.Errorf("a = %q, want its latest value 2", v)
	}
}

// TestRecordCacheEvictionWritesThroughInOrder: one write that needs room
// for several evicts them least recent first, each with its latest value
// (a delete as nil, an empty value as empty, not nil), and keeps targets
// apart: the same key in two targets is two entries.
func TestRecordCacheEvictionWritesThroughInOrder(t *testing.T) {
	c := newRecordCache(budgetFor(4), 3)
	var out []written
	putString(c, 0, "a", "1")
	putString(c, 1, "a", "x")
	c.put(0, []byte("b"), nil, nil)      // a delete
	c.put(0, []byte("c"), []byte{}, nil) // an empty value
	// A big value needs the room of all four.
	c.put(0, []byte("z"), make([]byte, 3*(2+cacheOverhead)), nil)
	if err := c.evict(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	want := []written{{0, "a", "1", false}, {1, "a", "x", false}, {0, "b", "", true}, {0, "c", "", false}}
	if !slices.Equal(out, want) {
		t.Fatalf("evicted %v, want %v (least recent first)", out, want)
	}
	if c.over() {
		t.Fatal("still over budget after evicting")
	}
	if _, found := c.get(0, []byte("z")); !found {
		t.Error("the entry just written was evicted though it fits alone")
	}
}

// TestRecordCacheHotKeyStaysMergedUnderAColdFlood: a key set 1,000 times
// larger than the cache passes through it, one cold key per record, with a
// write to one hot key between each: every cold key is written through
// once, and the hot key not at all until the commit's flush, which writes
// its last value once. Flushing whole would have written it at every fill.
func TestRecordCacheHotKeyStaysMergedUnderAColdFlood(t *testing.T) {
	const entries, cold = 10, 10_000
	c := newRecordCache(budgetFor(entries), 3)
	var out []written
	for i := range cold {
		putString(c, 0, "h", string(rune('a'+i%26)))
		c.put(0, fmt.Appendf(nil, "c%05d", i), []byte("v"), nil)
		if err := c.evict(recorder(&out)); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range out {
		if w.key == "h" {
			t.Fatalf("the hot key was written through before the flush (%d writes so far)", len(out))
		}
	}
	before := len(out)
	if err := c.drain(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	hot := 0
	seen := make(map[string]int)
	for _, w := range out {
		seen[w.key]++
		if w.key == "h" {
			hot++
			if want := string(rune('a' + (cold-1)%26)); w.value != want {
				t.Errorf("hot key flushed with %q, want its last value %q", w.value, want)
			}
		}
	}
	if hot != 1 {
		t.Errorf("hot key written through %d times, want once", hot)
	}
	if len(seen) != cold+1 || len(out) != cold+1 {
		t.Errorf("%d writes of %d keys (%d before the flush), want each of the %d keys once", len(out), len(seen), before, cold+1)
	}
}

// TestRecordCacheDrainWritesEveryDirtyEntryAndKeepsStoresClean: a flush
// writes every entry written since the last, least recently written first;
// a store's entries stay readable, clean, and an output's stay spent (its
// key alone, not readable); the next flush writes only what was written
// again (a clean entry rewritten included).
func TestRecordCacheDrainWritesEveryDirtyEntryAndKeepsStoresClean(t *testing.T) {
	c := newRecordCache(1<<20, 3) // targets 0-2 stores, 3 an output
	var out []written
	putString(c, 0, "a", "1")
	putString(c, 2, "b", "1")
	putString(c, 3, "a", "emit")
	putString(c, 0, "a", "2")
	if err := c.drain(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	if want := []written{{2, "b", "1", false}, {3, "a", "emit", false}, {0, "a", "2", false}}; !slices.Equal(out, want) {
		t.Fatalf("flushed %v, want %v", out, want)
	}
	if v, found := c.get(0, []byte("a")); !found || string(v) != "2" {
		t.Fatalf("after the flush a = %q (found %v), want it cached clean with 2", v, found)
	}
	if _, found := c.get(3, []byte("a")); found {
		t.Fatal("an output's entry stayed after the flush")
	}
	if c.live != 3 || c.dirty != 0 || c.entries() != 0 {
		t.Fatalf("after the flush: %d live, %d dirty (entries %d); want the 2 store entries, clean, and the output's spent one", c.live, c.dirty, c.entries())
	}
	if want := entrySize("a", []byte("2")) + entrySize("b", []byte("1")) + entrySize("a", nil); c.size != want {
		t.Fatalf("after the flush the cache counts %d bytes, want %d (the spent output's key and slot, not its value)", c.size, want)
	}
	out = nil
	if err := c.drain(recorder(&out)); err != nil || len(out) != 0 {
		t.Fatalf("a flush with nothing written since wrote %v (%v)", out, err)
	}
	putString(c, 0, "a", "3")
	if c.entries() != 1 {
		t.Fatalf("a rewritten clean entry: %d dirty, want 1", c.entries())
	}
	if err := c.drain(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	if want := []written{{0, "a", "3", false}}; !slices.Equal(out, want) {
		t.Fatalf("second flush %v, want %v", out, want)
	}
}

// TestRecordCacheDropsCleanEntriesBeforeEvictingDirtyOnes: over budget,
// clean entries go first, least recently written first and without a
// write-through (the store has them); only then is a dirty one written
// through.
func TestRecordCacheDropsCleanEntriesBeforeEvictingDirtyOnes(t *testing.T) {
	c := newRecordCache(budgetFor(3), 1)
	var out []written
	putString(c, 0, "a", "1")
	putString(c, 0, "b", "1")
	if err := c.drain(recorder(&out)); err != nil { // a, b clean
		t.Fatal(err)
	}
	out = nil
	putString(c, 0, "c", "1")
	putString(c, 0, "d", "1") // four entries in a budget of three
	if err := c.evict(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	if len(out) != 0 {
		t.Fatalf("evicting wrote %v through; a clean entry should have made the room", out)
	}
	if _, found := c.get(0, []byte("a")); found {
		t.Fatal("a, the least recently written clean entry, is still cached")
	}
	for _, k := range []string{"b", "c", "d"} {
		if _, found := c.get(0, []byte(k)); !found {
			t.Fatalf("%s was evicted; only a should be", k)
		}
	}
	putString(c, 0, "e", "1")
	putString(c, 0, "f", "1") // b (clean) goes, then c (dirty, oldest)
	if err := c.evict(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	if want := []written{{0, "c", "1", false}}; !slices.Equal(out, want) {
		t.Fatalf("evicted %v, want %v", out, want)
	}
	if c.live != 3 || c.dirty != 3 {
		t.Fatalf("%d live, %d dirty; want d, e, f, all dirty", c.live, c.dirty)
	}
}

// TestRecordCacheBudgetAccounting: the size is the sum of the live
// entries' keys, values and overheads, through inserts, rewrites to a
// longer and a shorter value, deletes, evictions and a flush.
func TestRecordCacheBudgetAccounting(t *testing.T) {
	c := newRecordCache(1<<20, 3)
	want := func(n int64) {
		t.Helper()
		if c.size != n {
			t.Fatalf("size %d, want %d", c.size, n)
		}
	}
	putString(c, 0, "key", "value")
	want(3 + 5 + cacheOverhead)
	putString(c, 0, "key", "a much longer value")
	want(3 + 19 + cacheOverhead)
	c.put(0, []byte("key"), nil, nil)
	want(3 + cacheOverhead)
	putString(c, 1, "other", "v")
	want(3 + cacheOverhead + 5 + 1 + cacheOverhead)
	c.setBudget(5 + 1 + cacheOverhead)
	var out []written
	if err := c.evict(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	want(5 + 1 + cacheOverhead)
	if len(out) != 1 || out[0].key != "key" {
		t.Fatalf("evicted %v, want key", out)
	}
	if err := c.drain(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	want(5 + 1 + cacheOverhead) // other stays, clean
	c.setBudget(0)
	if err := c.evict(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	want(0)
}

// TestRecordCacheAllocations: rewriting a cached key allocates nothing, and
// a new key in a full cache that evicts as it inserts (a cold-key flood)
// allocates at most its key: the freed slots keep their value buffers.
func TestRecordCacheAllocations(t *testing.T) {
	c := newRecordCache(budgetFor(100), 3)
	discard := func(int, []byte, []byte, []kgo.RecordHeader) error { return nil }
	key, value := []byte("h"), []byte("v")
	if n := testing.AllocsPerRun(1000, func() { c.put(0, key, value, nil) }); n != 0 {
		t.Errorf("a rewrite allocates %v times, want 0", n)
	}
	i := 0
	cold := make([][]byte, 5000)
	for j := range cold {
		cold[j] = fmt.Appendf(nil, "k%04d", j)
	}
	flood := func() {
		c.put(0, cold[i%len(cold)], value, nil)
		i++
		if err := c.evict(discard); err != nil {
			t.Fatal(err)
		}
	}
	for range 1000 { // fill and reach a steady state
		flood()
	}
	if n := testing.AllocsPerRun(2000, flood); n > 1 {
		t.Errorf("a new key with an eviction allocates %v times, want at most 1 (its key)", n)
	}
}

// TestTaskCacheEvictsThroughAndCommitFlushesEverything: a task whose
// cache holds a few keys processes a hot key between many cold ones.
// Before any commit, the evicted cold keys have reached the changelog and
// the output, each once, and the hot key not at all; the commit then
// flushes the rest (the hot key once, with its final count), so the
// committed store has every count.
func TestTaskCacheEvictsThroughAndCommitFlushesEverything(t *testing.T) {
	// The member divides the budget among its active tasks: one here.
	const perTask, cold = 8, 200
	h := newHarness(t, func(o *Options) { o.CacheMaxBytes = perTask * (5 + 8 + cacheOverhead) })
	h.start(0)
	tk := h.m.task(0)
	var off int64
	for i := range cold {
		h.feed(0, off, "hot", "x")
		h.feed(0, off+1, fmt.Sprintf("c%03d", i), "x")
		off += 2
	}
	h.waitProcessed(tk, off)
	perKey := func() map[string]int {
		h.kafka.mu.Lock()
		defer h.kafka.mu.Unlock()
		m := make(map[string]int)
		for _, r := range h.kafka.records {
			m[r.topic+"/"+r.key]++
		}
		return m
	}
	before := perKey()
	changelog := "harness-counts-changelog/"
	if n := before[changelog+"hot"] + before["out/hot"]; n != 0 {
		t.Fatalf("the hot key was written through %d times before the commit; it should stay cached", n)
	}
	evicted := 0
	for i := range cold {
		k := fmt.Sprintf("c%03d", i)
		if before["out/"+k] > 1 || before[changelog+k] != before["out/"+k] {
			t.Fatalf("cold key %s: %d changelog and %d output records before the commit, want as many, at most 1",
				k, before[changelog+k], before["out/"+k])
		}
		evicted += before["out/"+k]
	}
	if evicted < cold-perTask {
		t.Fatalf("%d cold keys written through before the commit; want all but the few cached (%d)", evicted, cold-perTask)
	}
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	after := perKey()
	if after[changelog+"hot"] != 1 || after["out/hot"] != 1 {
		t.Errorf("hot key: %d changelog and %d output records after the commit, want 1 each (merged)",
			after[changelog+"hot"], after["out/hot"])
	}
	if n := h.count(0, "hot"); n != cold {
		t.Errorf("committed hot count %d, want %d", n, cold)
	}
	for i := range cold {
		k := fmt.Sprintf("c%03d", i)
		if after["out/"+k] != 1 || h.count(0, k) != 1 {
			t.Fatalf("cold key %s: %d output records and count %d after the commit, want 1 and 1", k, after["out/"+k], h.count(0, k))
		}
	}
}

// TestTheCacheBudgetIsSharedAmongTheActiveTasksHere: each task's record
// cache gets statestore.cache.max.bytes divided by the tasks active on
// this member, recomputed as tasks come and go, not by every task the
// inputs have (most of which run elsewhere in a cluster).
func TestTheCacheBudgetIsSharedAmongTheActiveTasksHere(t *testing.T) {
	const budget = 12 << 20
	h := newHarness(t, func(o *Options) { o.CacheMaxBytes = budget })
	shares := func(want int64, ids ...int32) {
		t.Helper()
		for _, id := range ids {
			if got := h.m.task(id).cache.budget.Load(); got != want {
				t.Fatalf("task %d's cache budget %d, want %d", id, got, want)
			}
		}
	}
	h.start(0)
	shares(budget, 0)
	h.start(1, 2)
	shares(budget/3, 0, 1, 2)
	h.m.revoke(h.ctx, []int32{1})
	shares(budget/2, 0, 2)
}

// TestAnAssignmentSplitsTheMemoryBudget: under state.memory.bytes, the
// tasks an assignment starts open their stores with the share of the
// stores it leaves here (two tasks of one store: a share of 2), and a
// later assignment adding one more gives its store the share of 3 while
// the open ones keep theirs.
func TestAnAssignmentSplitsTheMemoryBudget(t *testing.T) {
	const budget = 64 << 20
	h := newHarness(t, func(o *Options) { o.MemoryBytes = budget })
	h.start(0, 1)
	sizes := func(id int32, expected int) {
		t.Helper()
		got := h.m.task(id).st.Store(harnessStore).LevelDB()
		wb, bc := state.StoreSizes(budget, expected)
		if got.WriteBufferBytes != wb || got.BlockCacheBytes != bc {
			t.Errorf("task %d's store: write buffer %d, block cache %d; want %d, %d (the share of %d stores)",
				id, got.WriteBufferBytes, got.BlockCacheBytes, wb, bc, expected)
		}
	}
	sizes(0, 2)
	sizes(1, 2)
	h.start(2)
	sizes(2, 3)
	sizes(0, 2)
}

// TestRecordCacheDrainSomeWritesTheOldestChunk: a chunk is the least
// recently written dirty entries, with their latest values, left clean in
// the cache; the dirty ones left are counted and still merge.
func TestRecordCacheDrainSomeWritesTheOldestChunk(t *testing.T) {
	c := newRecordCache(budgetFor(10), 3)
	var out []written
	for _, k := range []string{"a", "b", "c", "d"} {
		putString(c, 0, k, "1")
	}
	putString(c, 0, "a", "2") // the order is now b c d a
	left, err := c.drainSome(2, recorder(&out))
	if err != nil {
		t.Fatal(err)
	}
	if want := []written{{0, "b", "1", false}, {0, "c", "1", false}}; left != 2 || !slices.Equal(out, want) {
		t.Fatalf("drained %v, %d left; want %v, 2 left", out, left, want)
	}
	if v, found := c.get(0, []byte("b")); !found || string(v) != "1" || !c.slots[c.index[0]["b"]].clean {
		t.Fatalf("b = %q (found %v) after the chunk, want it cached clean with 1", v, found)
	}
	if v, found := c.get(0, []byte("a")); !found || string(v) != "2" {
		t.Fatalf("a = %q %v after the chunk, want 2", v, found)
	}
	out = out[:0]
	if left, err := c.drainSome(10, recorder(&out)); err != nil || left != 0 || len(out) != 2 {
		t.Fatalf("the rest: %v, %d left, %v", out, left, err)
	}
}

// TestRecordCachePutAfterGetFindsTheRightEntry: a put reuses the slot its
// key's get found (the read-then-write of a handler) only while that slot
// still holds that key of that target: a put of another key, of the same
// key in another target, or after the slot was dropped and taken by
// another key, each gets its own entry, and no entry's value changes but
// its own.
func TestRecordCachePutAfterGetFindsTheRightEntry(t *testing.T) {
	c := newRecordCache(budgetFor(2), 2)
	value := func(target int, k string) string {
		t.Helper()
		v, found := c.get(target, []byte(k))
		if !found {
			t.Fatalf("%d/%s not cached", target, k)
		}
		return string(v)
	}
	putString(c, 0, "a", "1")
	c.get(0, []byte("a"))
	putString(c, 0, "b", "2") // another key after a's get
	putString(c, 1, "a", "x") // a's key in another target (over budget: a's store entry goes below)
	if got := value(1, "a"); got != "x" {
		t.Fatalf("1/a = %q, want x", got)
	}
	if got := value(0, "b"); got != "2" {
		t.Fatalf("0/b = %q, want 2", got)
	}
	var out []written
	if err := c.evict(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	if want := []written{{0, "a", "1", false}}; !slices.Equal(out, want) {
		t.Fatalf("evicted %v, want %v", out, want)
	}
	// b's get remembers b's slot; b is then drained clean and dropped, and
	// its slot goes to c, a put of b must not land in c's entry.
	c.get(0, []byte("b"))
	if err := c.drain(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	c.setBudget(0)
	if err := c.evict(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	c.setBudget(budgetFor(2))
	putString(c, 0, "c", "3")
	putString(c, 0, "b", "4")
	if got := value(0, "c"); got != "3" {
		t.Fatalf("0/c = %q after a put of b, want 3", got)
	}
	if got := value(0, "b"); got != "4" {
		t.Fatalf("0/b = %q, want 4", got)
	}
}

// TestRecordCacheRandomHandlersNeverSeeAnotherEntry drives the cache the
// way handlers do (a get, a store write, an emit of the same key; a write
// of a key not read; deletes), with drains and evictions between them, and
// checks it against a model: a get finds the key's latest write or
// nothing, and once drained, what was written through last for every key
// of every target is its latest write. The slot hints (last, twin) must
// never make a put land in another key's or another target's entry.
func TestRecordCacheRandomHandlersNeverSeeAnotherEntry(t *testing.T) {
	const stores, targets, keys = 2, 4, 12
	r := rand.New(rand.NewPCG(1, 2))
	c := newRecordCache(budgetFor(6), stores)
	latest := make(map[[2]string]string) // (target, key) -> value, "" for a delete
	through := make(map[[2]string]string)
	var out []written
	record := func() {
		for _, w := range out {
			v := w.value
			if w.del {
				v = ""
			}
			through[[2]string{strconv.Itoa(w.target), w.key}] = v
		}
		out = out[:0]
	}
	put := func(target int, k, v string) {
		if v == "" {
			c.put(target, []byte(k), nil, nil)
		} else {
			putString(c, target, k, v)
		}
		latest[[2]string{strconv.Itoa(target), k}] = v
	}
	for step := range 20000 {
		k := "k" + strconv.Itoa(r.IntN(keys))
		v := strconv.Itoa(step)
		if r.IntN(8) == 0 {
			v = "" // a delete (store) or a tombstone (output)
		}
		store, output := r.IntN(stores), stores+r.IntN(targets-stores)
		switch op := r.IntN(10); {
		case op < 6: // a handler: read, write back, emit
			if got, found := c.get(store, []byte(k)); found {
				want := latest[[2]string{strconv.Itoa(store), k}]
				if string(got) != want {
					t.Fatalf("step %d: get %d/%s = %q, want %q", step, store, k, got, want)
				}
			}
			put(store, k, v)
			put(output, k, v)
		case op < 8: // a write of a key not read first
			put(r.IntN(targets), k, v)
		case op < 9:
			if err := c.drain(recorder(&out)); err != nil {
				t.Fatal(err)
			}
			record()
		default:
			if err := c.evict(recorder(&out)); err != nil {
				t.Fatal(err)
			}
			record()
		}
	}
	if err := c.drain(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	record()
	for tk, v := range latest {
		if got, ok := through[tk]; !ok || got != v {
			t.Errorf("%s/%s: written through last %q (%v), want its latest write %q", tk[0], tk[1], got, ok, v)
		}
	}
}

// TestRecordCacheCollectLeavesCleanEntriesToTheStore: a scan's collect
// copies the dirty entries only; a clean entry's value is the store's,
// which the scan reads after.
func TestRecordCacheCollectLeavesCleanEntriesToTheStore(t *testing.T) {
	c := newRecordCache(1<<20, 1)
	putString(c, 0, "a", "1")
	putString(c, 0, "b", "1")
	var out []written
	if err := c.drain(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	putString(c, 0, "b", "2") // dirty again
	got, err := c.collect(0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got[0].Key) != "b" || string(got[0].Value) != "2" {
		t.Fatalf("collect = %v, want only b=2 (a is clean)", got)
	}
}

// TestRecordCacheReusesAnOutputsSpentEntry: a key emitted again after a
// flush takes its spent slot (no new slot, no map insert) and the next
// flush writes its new value once.
func TestRecordCacheReusesAnOutputsSpentEntry(t *testing.T) {
	c := newRecordCache(1<<20, 1) // target 0 a store, 1 an output
	var out []written
	putString(c, 1, "k", "first")
	if err := c.drain(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	spent, ok := c.find(1, []byte("k"))
	if !ok {
		t.Fatal("the output's key left the map at the flush: its next emit inserts it again")
	}
	if _, found := c.get(1, []byte("k")); found {
		t.Fatal("a spent output entry reads as found")
	}
	slots := len(c.slots)
	putString(c, 1, "k", "second")
	if i, _ := c.find(1, []byte("k")); i != spent {
		t.Fatalf("the re-emit went to slot %d, not its spent slot %d", i, spent)
	}
	putString(c, 1, "k", "third")
	if len(c.slots) != slots || c.live != 1 {
		t.Fatalf("the re-emit took a new slot: %d slots (%d before), %d live", len(c.slots), slots, c.live)
	}
	out = nil
	if err := c.drain(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	if want := []written{{1, "k", "third", false}}; !slices.Equal(out, want) {
		t.Fatalf("flushed %v, want %v", out, want)
	}
}

// TestRecordCacheDropsSpentOutputsBeforeCleanStoreEntries: when the budget
// needs room, the outputs' spent entries (worth a map insert) go before
// the stores' clean ones (worth a read), whatever was written last; among
// spent entries the least recently written go first.
func TestRecordCacheDropsSpentOutputsBeforeCleanStoreEntries(t *testing.T) {
	c := newRecordCache(1<<20, 1)
	var out []written
	putString(c, 0, "s", "1")
	putString(c, 1, "o1", "1")
	putString(c, 1, "o2", "1")
	if err := c.drain(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	// Room for the store's clean entry and one new one, no more.
	c.setBudget(c.size - 2*entrySize("o1", nil) + entrySize("n", []byte("1")))
	putString(c, 0, "n", "1")
	if err := c.evict(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	if v, found := c.get(0, []byte("s")); !found || string(v) != "1" {
		t.Fatalf("the store's clean entry was dropped (found %v) before the outputs' spent ones", found)
	}
	if _, ok := c.find(1, []byte("o1")); ok {
		t.Fatal("a spent output entry stayed over the budget")
	}
	if _, ok := c.find(1, []byte("o2")); ok {
		t.Fatal("a spent output entry stayed over the budget")
	}
}

func TestRecordCacheDropsTheLeastRecentlyWrittenSpentEntryFirst(t *testing.T) {
	c := newRecordCache(1<<20, 1)
	var out []written
	putString(c, 1, "old", "1")
	putString(c, 1, "new", "1")
	if err := c.drain(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	c.setBudget(c.size - entrySize("old", nil)) // room for one of the two
	if err := c.evict(recorder(&out)); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.find(1, []byte("old")); ok {
		t.Fatal("the least recently written spent entry stayed")
	}
	if _, ok := c.find(1, []byte("new")); !ok {
		t.Fatal("the most recently written spent entry was dropped: a hot key's next emit inserts it again")
	}
}
