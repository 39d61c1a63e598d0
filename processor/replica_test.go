package processor

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/state"
)

// Latest reads (FreshView) on the commit harness: real stores, a fake
// producer and committer, no broker.

// fresh returns the latest view of the harness store of task tk, as
// Runtime.Replica builds it.
func fresh(h *harness, tk *task) *FreshView {
	h.t.Helper()
	st := h.mgr.Task(tk.id)
	if st == nil {
		h.t.Fatalf("task %d has no stores open", tk.id)
	}
	rep := Replica{Task: tk.id, Role: roleOf(st.Role()), stores: map[string]*state.DB{harnessStore: st.Store(harnessStore)}}
	if tk.cache != nil {
		rep.cache, rep.targets = tk.cache, map[string]int{harnessStore: 0}
	}
	return rep.Fresh(harnessStore)
}

func freshCount(t *testing.T, v *FreshView, key string) (int64, bool) {
	t.Helper()
	b, found, err := v.Get([]byte(key))
	if err != nil {
		t.Fatalf("latest Get(%s): %v", key, err)
	}
	if !found {
		return 0, false
	}
	n, err := codec.Int64().Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return n, true
}

// freshScan renders a latest scan of [start, end) (nil: open) as k=count.
func freshScan(t *testing.T, v *FreshView, start, end []byte) string {
	t.Helper()
	out := ""
	if err := v.Scan(start, end, func(k, val []byte) bool {
		n, _ := codec.Int64().Decode(val)
		out += fmt.Sprintf("%s=%d ", k, n)
		return true
	}); err != nil {
		t.Fatalf("latest scan: %v", err)
	}
	return out
}

// A processed record's write is visible to a latest read before the commit
// and to a committed read only after it: with the record cache (the write
// still merged in the cache), with a cache so small that it evicts (the
// write in the store's write buffer), and without a cache.
func TestFreshReadSeesAProcessedWriteBeforeTheCommit(t *testing.T) {
	for name, cacheBytes := range map[string]int64{"cache": 1 << 20, "evicting cache": 4 * (cacheOverhead + 10), "no cache": 0} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(o *Options) { o.CacheMaxBytes = cacheBytes })
			h.start(0)
			tk := h.feed(0, 0, "a", "x", "x", "x")
			h.feed(0, 3, "b", "x")
			h.feed(0, 4, "c", "x")
			h.waitProcessed(tk, 5)
			v := fresh(h, tk)
			if n, ok := freshCount(t, v, "a"); !ok || n != 3 {
				t.Fatalf("latest count of a before the commit = %d (found %v), want 3", n, ok)
			}
			if got := freshScan(t, v, nil, nil); got != "a=3 b=1 c=1 " {
				t.Fatalf("latest scan before the commit = %q", got)
			}
			if got := freshScan(t, v, []byte("b"), []byte("c")); got != "b=1 " {
				t.Fatalf("latest scan [b, c) before the commit = %q", got)
			}
			if n := h.count(0, "a"); n != 0 {
				t.Fatalf("committed count of a before the commit = %d, want 0 (not committed)", n)
			}
			if err := h.c.commit(h.ctx, h.m.live()); err != nil {
				t.Fatal(err)
			}
			if n := h.count(0, "a"); n != 3 {
				t.Fatalf("committed count of a after the commit = %d, want 3", n)
			}
			if n, ok := freshCount(t, v, "a"); !ok || n != 3 {
				t.Fatalf("latest count of a after the commit = %d (found %v), want 3", n, ok)
			}
			// The cache keeps the committed entries clean; a scan reads
			// them from the store.
			if got := freshScan(t, v, nil, nil); got != "a=3 b=1 c=1 " {
				t.Fatalf("latest scan after the commit = %q", got)
			}
			// Written again after the commit: latest moves on, committed
			// stays.
			h.feed(0, 5, "a", "x")
			h.waitProcessed(tk, 6)
			if n, _ := freshCount(t, v, "a"); n != 4 {
				t.Fatalf("latest count of a after one more record = %d, want 4", n)
			}
			if got := freshScan(t, v, nil, nil); got != "a=4 b=1 c=1 " {
				t.Fatalf("latest scan after one more record = %q", got)
			}
			if n := h.count(0, "a"); n != 3 {
				t.Fatalf("committed count of a before the next commit = %d, want 3", n)
			}
		})
	}
}

// A delete in the record cache hides the key the store has committed, in a
// lookup and in a scan.
func TestFreshReadACachedDeleteHidesACommittedKey(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.CacheMaxBytes = 1 << 20 })
	h.start(0)
	tk := h.feed(0, 0, "a", "x")
	h.feed(0, 1, "b", "x")
	h.waitProcessed(tk, 2)
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	// What a handler's Delete stages, applied as the record path does.
	tk.mu.Lock()
	tk.cache.mu.Lock()
	tk.cache.put(0, []byte("a"), nil, nil)
	tk.cache.mu.Unlock()
	tk.mu.Unlock()
	v := fresh(h, tk)
	if _, ok := freshCount(t, v, "a"); ok {
		t.Fatal("latest Get(a) found a key deleted in the cache")
	}
	if got := freshScan(t, v, nil, nil); got != "b=1 " {
		t.Fatalf("latest scan with a deleted = %q, want only b", got)
	}
	if n := h.count(0, "a"); n != 1 {
		t.Fatalf("committed count of a = %d, want 1: the delete is not committed", n)
	}
}

// Readers on other goroutines while the task processes records and
// commits (run with -race): a reader never blocks the task, and sees each
// key's count never go back nor vanish, through evictions and commits.
func TestFreshReadsDuringProcessingAndCommits(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.CacheMaxBytes = 4 * 6 * (cacheOverhead + 12) })
	h.start(0)
	tk := h.m.task(0)
	v := fresh(h, tk)
	const keys, rounds = 12, 60
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := make(map[string]int64)
			check := func(k string, val []byte) error {
				n, err := codec.Int64().Decode(val)
				if err != nil || n < last[k] {
					return fmt.Errorf("reader %d: %s went from %d to %d (%v)", r, k, last[k], n, err)
				}
				last[k] = n
				return nil
			}
			for i := 0; !done.Load(); i++ {
				k := "k" + strconv.Itoa(i%keys)
				val, found, err := v.Get([]byte(k))
				switch {
				case err != nil:
				case found:
					err = check(k, val)
				case last[k] > 0:
					err = fmt.Errorf("reader %d: %s vanished after %d", r, k, last[k])
				}
				if err == nil && r == 0 {
					var bad error
					err = v.Scan(nil, nil, func(k, val []byte) bool {
						bad = check(string(k), val)
						return bad == nil
					})
					err = errors.Join(err, bad)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var off int64
	for i := range rounds {
		for k := range keys {
			h.feed(0, off, "k"+strconv.Itoa(k), "x")
			off++
		}
		if i%5 == 4 {
			h.waitProcessed(tk, off)
			if err := h.c.commit(h.ctx, h.m.live()); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.waitProcessed(tk, off)
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for k := range keys {
		if n, _ := freshCount(t, v, "k"+strconv.Itoa(k)); n != rounds {
			t.Errorf("latest count of k%d at the end = %d, want %d", k, n, rounds)
		}
	}
}

// A task lost (dropped uncommitted) or revoked at shutdown (committed,
// then closed) fails a latest read that still holds its view, cleanly,
// with ErrTaskClosed.
func TestFreshReadsOfAClosedTaskFail(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cacheBytes int64
		end        func(h *harness)
	}{
		{"lost, cache", 1 << 20, func(h *harness) { h.m.lose([]int32{0}) }},
		{"lost, no cache", 0, func(h *harness) { h.m.lose([]int32{0}) }},
		{"revoked at shutdown, cache", 1 << 20, func(h *harness) { h.m.setClosing(); h.m.revoke(h.ctx, []int32{0}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(o *Options) { o.CacheMaxBytes = tc.cacheBytes })
			h.start(0)
			tk := h.feed(0, 0, "a", "x")
			h.waitProcessed(tk, 1)
			v := fresh(h, tk)
			tc.end(h)
			if _, _, err := v.Get([]byte("a")); !errors.Is(err, state.ErrTaskClosed) {
				t.Fatalf("latest Get of a closed task: err %v, want ErrTaskClosed", err)
			}
			if err := v.Scan(nil, nil, func(k, v []byte) bool { return true }); !errors.Is(err, state.ErrTaskClosed) {
				t.Fatalf("latest Scan of a closed task: err %v, want ErrTaskClosed", err)
			}
		})
	}
}

// Under exactly-once the runtime offers no latest view: its writes belong
// to an open transaction.
func TestFreshViewIsRefusedUnderExactlyOnce(t *testing.T) {
	rep := Replica{stores: map[string]*state.DB{"s": new(state.DB)}, eos: true}
	if rep.Fresh("s") != nil {
		t.Fatal("Fresh under exactly-once returned a view")
	}
	if (Replica{}).Fresh("missing") != nil {
		t.Fatal("Fresh of an unknown store returned a view")
	}
}

// A task revoked to a standby here: the revoke commits its cache and write
// buffer, and a latest read, through the view it held or a new one, sees
// what the standby holds (its latest state is what it applied).
func TestFreshReadsOfATaskRevokedToAStandby(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.CacheMaxBytes = 1 << 20 })
	h.start(0)
	tk := h.feed(0, 0, "a", "x", "x")
	h.waitProcessed(tk, 2)
	held := fresh(h, tk)
	h.m.revoke(h.ctx, []int32{0})
	st := h.mgr.Task(0)
	if st == nil || st.Role() != state.RoleStandby {
		t.Fatalf("task 0 after the revoke: %v, want a standby", st)
	}
	now := Replica{Task: 0, Role: roleOf(st.Role()), stores: map[string]*state.DB{harnessStore: st.Store(harnessStore)}}.Fresh(harnessStore)
	for name, v := range map[string]*FreshView{"held view": held, "new view": now} {
		if n, ok := freshCount(t, v, "a"); !ok || n != 2 {
			t.Errorf("%s: latest count of a on the standby = %d (found %v), want the committed 2", name, n, ok)
		}
	}
}
