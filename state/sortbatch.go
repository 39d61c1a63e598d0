package state

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/syndtr/goleveldb/leveldb"
)

// batchSorter rewrites a LevelDB batch with its keys in order, each key
// once: its last write in the batch.
//
// goleveldb inserts a batch into its memtable, a skiplist, one record at a
// time, and each insert walks the list from its top. Records in no order
// make most of that walk's comparisons cache misses; in key order,
// consecutive inserts walk the same nodes, still in the CPU's cache
// (docs/lab/profile-count.md has the measurements). A key written twice in
// a batch, common in a changelog not yet compacted, becomes one insert. A
// batch is applied atomically, so only its last write of a key is ever
// visible.
//
// The sort orders 16-byte sortKeys rather than the entries: the eight
// bytes after the prefix all the batch's keys share, as a number, and the
// entry's position. A store's keys usually share a prefix, such as "user-"
// or a tenant, which would make bytes.Compare the sort's main cost. A
// batch of radixMin records or more is sorted by radix on that number
// (sortOrder). The keys themselves are compared only where those eight
// bytes tie.
//
// A sorter is reused: it keeps its index and output batch between sorts.
// It is not safe for concurrent use.
type batchSorter struct {
	ents    []batchEntry
	order   []sortKey
	scratch []sortKey // sortOrder's other half
	out     *leveldb.Batch
	outCap  int // the bytes out was made for: goleveldb grows a batch of thousands of records a little at a time
}

// batchEntry is one record of the batch being sorted: slices of the
// batch's own memory.
type batchEntry struct {
	key, value []byte
	del        bool
}

// sortKey orders one entry. word is the eight bytes of its key after the
// batch's common prefix, big-endian and zero-padded, so that comparing two
// words compares those bytes. pos is its index in ents, which orders the
// writes of one key.
type sortKey struct {
	word uint64
	pos  int
}

// Put and Delete make batchSorter a leveldb.BatchReplay.
func (s *batchSorter) Put(key, value []byte) {
	s.ents = append(s.ents, batchEntry{key: key, value: value})
}

func (s *batchSorter) Delete(key []byte) {
	s.ents = append(s.ents, batchEntry{key: key, del: true})
}

// sorted returns b's records in key order, each key's last write only, in
// a batch of the sorter's, valid until the next call. b is unchanged. A
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
	cp := sharedPrefix(s.ents)
	s.order = s.order[:0]
	for i, e := range s.ents {
		s.order = append(s.order, sortKey{word: wordAt(e.key, cp), pos: i})
	}
	s.sortOrder(cp)
	// The output is never larger than b; DB.writeBatch then adds the
	// checkpoint, which must not make goleveldb copy the batch to grow it.
	if size := len(b.Dump()) + checkpointRoom; s.out == nil || s.outCap < size {
		s.out, s.outCap = leveldb.MakeBatch(size), size
	}
	s.out.Reset()
	for i, k := range s.order {
		e := s.ents[k.pos]
		if i+1 < len(s.order) {
			next := s.order[i+1]
			if next.word == k.word && bytes.Equal(s.ents[next.pos].key, e.key) {
				continue // a later write of the key follows
			}
		}
		if e.del {
			s.out.Delete(e.key)
		} else {
			s.out.Put(e.key, e.value)
		}
	}
	clear(s.ents) // hold none of b's memory
	return s.out
}

// checkpointRoom is what a batch needs beyond its records for the
// checkpoint DB.writeBatch adds: its key and offset with goleveldb's
// record header, rounded up.
const checkpointRoom = 64

// radixMin is the batch length from which sortOrder sorts by radix: below
// it a comparison sort is as fast and needs no counts.
const radixMin = 128

// sortOrder sorts s.order into the entries' key order, a key's writes in
// batch order. A batch of radixMin records or more is sorted by its words'
// bytes, least significant first: a few linear passes, where a comparison
// sort makes a dozen calls per record. Each pass is stable, so that equal
// words keep their batch order. A pass is skipped where every word has
// the same byte, as in the zero padding of short keys. Words that tie are
// then ordered by the rest of their keys.
func (s *batchSorter) sortOrder(cp int) {
	if len(s.order) < radixMin {
		slices.SortFunc(s.order, func(x, y sortKey) int {
			if c := cmp.Compare(x.word, y.word); c != 0 {
				return c
			}
			if c := bytes.Compare(s.ents[x.pos].key[cp:], s.ents[y.pos].key[cp:]); c != 0 {
				return c
			}
			return cmp.Compare(x.pos, y.pos)
		})
		return
	}
	var counts [8][256]int
	for _, k := range s.order {
		for b := range 8 {
			counts[b][byte(k.word>>(8*b))]++
		}
	}
	s.scratch = slices.Grow(s.scratch[:0], len(s.order))[:len(s.order)]
	src, dst := s.order, s.scratch
	for b := range 8 {
		c := &counts[b]
		shift := 8 * b
		if c[byte(src[0].word>>shift)] == len(src) {
			continue // one byte for all
		}
		sum := 0
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		for _, k := range src {
			d := byte(k.word >> shift)
			dst[c[d]] = k
			c[d]++
		}
		src, dst = dst, src
	}
	s.order, s.scratch = src, dst
	// Equal words of different keys: keys longer than the word, or keys
	// differing in the zero padding. A stable sort orders the run by the
	// whole rest of the key; one key's writes are in batch order already.
	// A run of one key's writes, the common case, is left as it is.
	for i := 0; i < len(s.order); {
		first := s.ents[s.order[i].pos].key
		j, same := i+1, true
		for j < len(s.order) && s.order[j].word == s.order[i].word {
			same = same && bytes.Equal(s.ents[s.order[j].pos].key, first)
			j++
		}
		if !same {
			slices.SortStableFunc(s.order[i:j], func(x, y sortKey) int {
				return bytes.Compare(s.ents[x.pos].key[cp:], s.ents[y.pos].key[cp:])
			})
		}
		i = j
	}
}

// sharedPrefix is the length of the prefix every entry's key shares.
func sharedPrefix(ents []batchEntry) int {
	first := ents[0].key
	n := len(first)
	for _, e := range ents[1:] {
		k := e.key
		if len(k) < n {
			n = len(k)
		}
		i := 0
		for i < n && k[i] == first[i] {
			i++
		}
		n = i
		if n == 0 {
			break
		}
	}
	return n
}

// wordAt is the eight bytes of key from off as a big-endian number, the
// missing ones zero.
func wordAt(key []byte, off int) uint64 {
	rest := key[off:]
	if len(rest) >= 8 {
		return binary.BigEndian.Uint64(rest)
	}
	var buf [8]byte
	copy(buf[:], rest)
	return binary.BigEndian.Uint64(buf[:])
}
