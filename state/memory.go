package state

// A memory budget (Options.MemoryBytes, state.memory.bytes; 128 MiB by
// default, DefaultMemoryBytes) replaces the per-store sizes with one figure
// for the whole instance. 0 turns it off: each store then has the LevelDB
// sizes of Options.LevelDB (16 MiB memtable, 8 MiB block cache by default),
// so memory grows with the number of stores.
//
// goleveldb fixes a database's memtable size when it opens and cannot
// resize it, and its block cache belongs to one database: a budget cannot
// be moved between open stores. So it is split as the stores open:
//
//   - Up to a quarter is the record cache's (RecordCacheBytes: it bounds
//     the processor's statestore.cache.max.bytes, divided among its tasks
//     as that key is; a smaller cache, or one turned off, leaves the rest
//     of its quarter as headroom).
//   - The rest is the stores': each store opened gets an equal share of it
//     for the stores expected open at once (StoreSizes). The processor
//     tells the Manager that number at each assignment
//     (Manager.ExpectStores: tasks assigned, active, standby and warm-up,
//     times stores per task); the Manager never counts fewer than the
//     stores open plus the one opening.
//
// As tasks come and go, a store keeps the sizes it opened with until it is
// closed (a revoked task's standby, a task moved away); the stores opened
// after a new assignment get the share of the new expected count. A scale
// out (fewer tasks here) thus gives larger memtables to the stores opened
// from then on, and a scale in (more tasks) smaller ones: the instance may
// hold more than the budget for as long as stores opened under the old,
// smaller count stay open beside those under the new one. A store whose
// StoreSpec sets its own LevelDB options keeps them.
//
// Of a store's share, goleveldb may hold two memtables at once (the active
// one and the frozen one being compacted), so the write buffer is a
// quarter and the block cache a half; the last quarter is headroom for
// what goleveldb keeps per database beyond those (open tables' indexes and
// bloom filters). A tiny share still gets minWriteBuffer: then the budget
// is exceeded, by at most 2 x minWriteBuffer per store.

// minWriteBuffer is the smallest memtable a budget gives a store: below it
// goleveldb compacts so often that writes stall.
const minWriteBuffer = 256 << 10

// RecordCacheBytes is the part of a memory budget that goes to the
// processor's record cache (statestore.cache.max.bytes).
func RecordCacheBytes(budget int64) int64 { return budget / 4 }

// StoreSizes returns the LevelDB write buffer and block cache of one store
// opened under a memory budget of budget bytes with expected stores open
// at once (at least 1 is assumed).
func StoreSizes(budget int64, expected int) (writeBuffer, blockCache int) {
	share := (budget - RecordCacheBytes(budget)) / int64(max(expected, 1))
	return int(max(share/4, minWriteBuffer)), int(share / 2)
}

// ExpectStores tells the Manager how many stores this instance expects to
// hold open at once: under a memory budget, each store opened from now on
// gets budget/n of the stores' part (StoreSizes). The processor calls it at
// each assignment; without a budget it changes nothing.
func (m *Manager) ExpectStores(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expected = n
}

// budgetedLevelDB returns o with its sizes from the memory budget, for a
// store opened while open others are (the caller holds m.mu).
func (m *Manager) budgetedLevelDB(o LevelDBOptions, open int) LevelDBOptions {
	if m.opts.MemoryBytes <= 0 {
		return o
	}
	o.WriteBufferBytes, o.BlockCacheBytes = StoreSizes(m.opts.MemoryBytes, max(m.expected, open+1))
	return o
}

// openStores counts the stores of the open tasks (the caller holds m.mu).
func (m *Manager) openStores() int {
	n := 0
	for _, t := range m.tasks {
		n += len(t.stores)
	}
	return n
}
