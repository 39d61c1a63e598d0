package state

// The replicator's idle batchSorters (sortbatch.go), reused from flush to
// flush: see replicator.sortersMu for why a free list and not a sync.Pool.

// keepSorterBytes bounds the output batch of a sorter the replicator keeps
// for the next flush. A tailing standby's batches are well under it; a
// restore's, of RestoreBatchBytes, are not, and a restore ends.
const keepSorterBytes = 1 << 20

// sorter returns an idle batchSorter (sortersMu).
func (r *replicator) sorter() *batchSorter {
	r.sortersMu.Lock()
	defer r.sortersMu.Unlock()
	if n := len(r.sorters); n > 0 {
		s := r.sorters[n-1]
		r.sorters[n-1] = nil
		r.sorters = r.sorters[:n-1]
		return s
	}
	return new(batchSorter)
}

// putSorter keeps s for the next flush, unless its output batch is a
// restore's (over keepSorterBytes) and no restore is running. A restore's
// flushes reuse their sorters: a new one would allocate and clear a batch
// of RestoreBatchBytes per flush.
func (r *replicator) putSorter(s *batchSorter) {
	if s.outCap > keepSorterBytes && !r.anyRestoring() {
		return
	}
	r.sortersMu.Lock()
	defer r.sortersMu.Unlock()
	r.sorters = append(r.sorters, s)
}

// anyRestoring reports whether a store is catching up to a target.
func (r *replicator) anyRestoring() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.subs {
		if s.rep.target >= 0 {
			return true
		}
	}
	return false
}
