package state

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/syndtr/goleveldb/leveldb"
)

// batchSorter rewrites a LevelDB batch with its keys in order, each key
// once (its last write in the batch).
//
// Why: goleveldb inserts a batch into its memtable, a skiplist, one record
// at a time, each insert walking the list from its top; the walk is a
// dozen or more key comparisons, most of them cache misses when the
// records come in no order (a changelog's order, or a hash map's). In key
// order, consecutive inserts walk the same nodes, which are still in the
// CPU's cache: about a third less per record in isolation (sort included),
// more where the cores are shared and caches are cold (a standby's
// memtable, touched only by its replicator). The memtable inserts were the
// largest single cost of a cluster at half load on the count benchmark
// (bench/freshness.md). A key written twice in a batch, common in a
// changelog that is not yet compacted, becomes one insert: a batch is
// applied atomically, so only its last write of a key is ever visible.
//
// A sorter is reused: it keeps its index and output batch between sorts.
// It is not safe for concurrent use.
type batchSorter struct {
	ents []batchEntry
	out  leveldb.Batch
}

// batchEntry is one record of the batch being sorted: slices of the
// batch's own memory, and its position, which orders writes of one key.
type batchEntry struct {
	key, value []byte
	del        bool
	pos        int
}

// Put and Delete make batchSorter a leveldb.BatchReplay.
func (s *batchSorter) Put(key, value []byte) {
	s.ents = append(s.ents, batchEntry{key: key, value: value, pos: len(s.ents)})
}

func (s *batchSorter) Delete(key []byte) {
	s.ents = append(s.ents, batchEntry{key: key, del: true, pos: len(s.ents)})
}

// sorted returns b's records in key order, each key's last write only, in
// a batch of the sorter's (valid until the next call); b is unchanged. A
// batch of one record, or one whose records cannot be read, is returned
// as it is.
func (s *batchSorter) sorted(b *leveldb.Batch) *leveldb.Batch {
	if b.Len() < 2 {
		return b
	}
	s.ents = s.ents[:0]
	if err := b.Replay(s); err != nil {
		clear(s.ents)
		return b // LevelDB reports the corrupt batch when it is written
	}
	slices.SortFunc(s.ents, func(x, y batchEntry) int {
		if c := bytes.Compare(x.key, y.key); c != 0 {
			return c
		}
		return cmp.Compare(x.pos, y.pos)
	})
	s.out.Reset()
	for i, e := range s.ents {
		if i+1 < len(s.ents) && bytes.Equal(s.ents[i+1].key, e.key) {
			continue // a later write of the key follows
		}
		if e.del {
			s.out.Delete(e.key)
		} else {
			s.out.Put(e.key, e.value)
		}
	}
	clear(s.ents) // hold none of b's memory
	return &s.out
}
