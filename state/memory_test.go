package state

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStoreSizesSplitTheBudget checks the memory budget's split, a pure
// function. A quarter goes to the record cache, the rest in equal shares
// per expected store. Each share is a quarter memtable and half block
// cache, with a floor under the memtable.
func TestStoreSizesSplitTheBudget(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name              string
		budget            int64
		expected          int
		cache             int64
		writeBuf, blockCa int
	}{
		{"one store takes the stores' whole part", 64 * mib, 1, 16 * mib, 12 * mib, 24 * mib},
		{"four stores share it", 64 * mib, 4, 16 * mib, 3 * mib, 6 * mib},
		{"12 tasks x 2 stores", 128 * mib, 24, 32 * mib, mib, 2 * mib},
		{"no expected count is read as one", 64 * mib, 0, 16 * mib, 12 * mib, 24 * mib},
		{"a tiny share keeps the memtable floor", 8 * mib, 1000, 2 * mib, minWriteBuffer, 6 * mib / 1000 / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RecordCacheBytes(tc.budget); got != tc.cache {
				t.Errorf("RecordCacheBytes(%d) = %d, want %d", tc.budget, got, tc.cache)
			}
			wb, bc := StoreSizes(tc.budget, tc.expected)
			if wb != tc.writeBuf || bc != tc.blockCa {
				t.Errorf("StoreSizes(%d, %d) = write buffer %d, block cache %d; want %d, %d",
					tc.budget, tc.expected, wb, bc, tc.writeBuf, tc.blockCa)
			}
		})
	}
}

// TestManagerOpensStoresWithTheirBudgetShare: under a memory budget, the
// stores a Manager opens get StoreSizes of the expected count the
// processor set. They get that of the stores open plus the one opening
// when that is more. A new expected count applies to the stores opened
// after it, not to those open. A StoreSpec's own LevelDB options are
// kept. Without a budget the configured sizes apply.
func TestManagerOpensStoresWithTheirBudgetShare(t *testing.T) {
	const budget = 64 << 20
	open := func(t *testing.T, memory int64) *Manager {
		o := DefaultOptions()
		o.Dir, o.ApplicationID, o.CleanupInterval = t.TempDir(), "budget", 0
		o.ClientOpts = []kgo.Opt{kgo.SeedBrokers("unused:1")} // opening dials nothing
		o.Logger, o.MemoryBytes = testLogger(t), memory
		m, err := Open(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	sizes := func(t *testing.T, s *DB, expected int) {
		t.Helper()
		wb, bc := StoreSizes(budget, expected)
		if s.ldb.WriteBufferBytes != wb || s.ldb.BlockCacheBytes != bc {
			t.Errorf("store %s of task %d: write buffer %d, block cache %d; want %d, %d (the share of %d stores)",
				s.name, s.partition, s.ldb.WriteBufferBytes, s.ldb.BlockCacheBytes, wb, bc, expected)
		}
	}
	specs := []StoreSpec{{Name: "a"}, {Name: "b"}}

	t.Run("expected count", func(t *testing.T) {
		m := open(t, budget)
		m.ExpectStores(8) // 4 tasks x 2 stores
		t0, err := m.OpenTask(0, specs)
		if err != nil {
			t.Fatal(err)
		}
		sizes(t, t0.Store("a"), 8)
		sizes(t, t0.Store("b"), 8)
		// An assignment with fewer tasks: stores opened later get more;
		// those open keep what they opened with.
		m.ExpectStores(4)
		t1, err := m.OpenTask(1, specs)
		if err != nil {
			t.Fatal(err)
		}
		sizes(t, t1.Store("a"), 4)
		sizes(t, t0.Store("a"), 8)
	})
	t.Run("open stores when more than expected", func(t *testing.T) {
		m := open(t, budget)
		// No expected count yet: the first store takes a share of 1, the
		// second of 2 (one open beside it), the third of 3.
		t0, err := m.OpenTask(0, specs)
		if err != nil {
			t.Fatal(err)
		}
		sizes(t, t0.Store("a"), 1)
		sizes(t, t0.Store("b"), 2)
		t1, err := m.OpenTask(1, specs[:1])
		if err != nil {
			t.Fatal(err)
		}
		sizes(t, t1.Store("a"), 3)
	})
	t.Run("a store spec's own options", func(t *testing.T) {
		m := open(t, budget)
		own := DefaultLevelDBOptions()
		own.WriteBufferBytes = 1 << 20
		tk, err := m.OpenTask(0, []StoreSpec{{Name: "own", LevelDB: &own}})
		if err != nil {
			t.Fatal(err)
		}
		if got := tk.Store("own").ldb; got != own {
			t.Errorf("a store with its own LevelDB options got %+v, want them kept (%+v)", got, own)
		}
	})
	t.Run("no budget", func(t *testing.T) {
		m := open(t, 0)
		m.ExpectStores(8)
		tk, err := m.OpenTask(0, specs)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := tk.Store("a").ldb, DefaultLevelDBOptions(); got != want {
			t.Errorf("without a budget a store got %+v, want the configured %+v", got, want)
		}
	})
}
