package state

// A memory budget replaces the per-store sizes with one figure for the
// whole instance: Options.MemoryBytes, the key state.memory.bytes, by
// default DefaultMemoryBytes. 0 turns it off. Each store then has the
// LevelDB sizes of Options.LevelDB, so memory grows with the number of
// stores.
//
// goleveldb fixes a database's memtable size when it opens, and its block
// cache belongs to one database. So a budget cannot be moved between open
// stores: it is split as the stores open.
//
//   - Up to a quarter is the record cache's (RecordCacheBytes). It bounds
//     the processor's statestore.cache.max.bytes, divided among its tasks
//     as that key is. A smaller cache, or none, leaves the rest of its
//     quarter as headroom.
//   - The rest is the stores'. Each store opened gets an equal share of it
//     for the stores expected open at once (StoreSizes). The processor
//     tells the Manager that number at each assignment, through
//     Manager.ExpectStores: the tasks assigned, active, standby and
//     warm-up, times the stores per task. The Manager never counts fewer
//     than the stores open plus the one opening.
//
// A store keeps the sizes it opened with until it closes. The stores
// opened after a new assignment get the share of the new expected count.
// So a scale out, leaving fewer tasks here, gives larger memtables to the
// stores opened from then on, and a scale in smaller ones. The instance
// may hold more than the budget while stores opened under an old, smaller
// count stay open beside those under the new one. A store whose StoreSpec
// sets its own LevelDB options keeps them.
//
// Of a store's share, the write buffer is a quarter and the block cache a
// half. goleveldb may hold two memtables at once: the active one, and the
// frozen one being compacted. The last quarter is headroom for what
// goleveldb keeps per database beyond those, such as open tables' indexes
// and bloom filters. A tiny share still gets minWriteBuffer; the budget is
// then exceeded, by at most 2 x minWriteBuffer per store.

// minWriteBuffer is the smallest memtable a budget gives a store: below it
// goleveldb compacts so often that writes stall.
const minWriteBuffer = 256 << 10

// RecordCacheBytes is the part of a memory budget that goes to the
// processor's record cache (statestore.cache.max.bytes).
func RecordCacheBytes(budget int64) int64 { return budget / 4 }

// StoreSizes returns the LevelDB write buffer and block cache of one store
// opened under a memory budget of budget bytes, with expected stores open
// at once. It assumes at least 1.
func StoreSizes(budget int64, expected int) (writeBuffer, blockCache int) {
	share := (budget - RecordCacheBytes(budget)) / int64(max(expected, 1))
	return int(max(share/4, minWriteBuffer)), int(share / 2)
}

// ExpectStores tells the Manager how many stores this instance expects to
// hold open at once. Under a memory budget, each store opened from now on
// gets an n-th of the stores' part (StoreSizes). The processor calls it at
// each assignment. Without a budget it changes nothing.
func (m *Manager) ExpectStores(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expected = n
}

// budgetedLevelDB returns o with its sizes from the memory budget, for a
// store opened while open others are. The caller holds m.mu.
func (m *Manager) budgetedLevelDB(o LevelDBOptions, open int) LevelDBOptions {
	if m.opts.MemoryBytes <= 0 {
		return o
	}
	o.WriteBufferBytes, o.BlockCacheBytes = StoreSizes(m.opts.MemoryBytes, max(m.expected, open+1))
	return o
}

// openStores counts the stores of the open tasks. The caller holds m.mu.
func (m *Manager) openStores() int {
	n := 0
	for _, t := range m.tasks {
		n += len(t.stores)
	}
	return n
}
