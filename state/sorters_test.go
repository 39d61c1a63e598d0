package state

import (
	"slices"
	"testing"
)

// TestReplicatorKeepsARestoresSorterOnlyWhileARestoreRuns: a flush's
// sorter goes back for the next flush. One sized for a restore's batches
// is kept while a store restores, and left to the collector after, so
// that tailing standbys do not hold restore-sized buffers.
func TestReplicatorKeepsARestoresSorterOnlyWhileARestoreRuns(t *testing.T) {
	r := &replicator{subs: make(map[topicPartition]*DB)}
	tailing := new(DB)
	tailing.rep.init(tailing)
	r.subs[topicPartition{"a-changelog", 0}] = tailing
	small, big := &batchSorter{outCap: 1 << 10}, &batchSorter{outCap: keepSorterBytes + 1}

	r.putSorter(small)
	r.putSorter(big)
	if !slices.Equal(r.sorters, []*batchSorter{small}) {
		t.Fatalf("no restore running: kept %d sorters, want only the tailing-sized one", len(r.sorters))
	}
	if got := r.sorter(); got != small {
		t.Fatal("the kept sorter was not handed out again")
	}
	if got := r.sorter(); got == small || got == big {
		t.Fatal("an empty free list handed out a sorter already in use or dropped")
	}

	restoring := new(DB)
	restoring.rep.init(restoring)
	restoring.rep.target = 100
	r.subs[topicPartition{"a-changelog", 1}] = restoring
	r.putSorter(big)
	if got := r.sorter(); got != big {
		t.Fatal("a restore-sized sorter was dropped while a store restores")
	}
}
