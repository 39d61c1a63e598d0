package assignor

import (
	"math/bits"
	"slices"
)

// searcher finds optimal spreads exactly, over classes of clients with
// identical rack-aware tag tuples: clients of one class are interchangeable
// for spread, so a task's best standbys are a choice of classes, not of
// clients. The search is a branch and bound over distinct classes (a class
// chosen twice adds nothing) with three cuts:
//
//   - the bound: from a partial choice with s slots left, dimension d can
//     reach at most min(distinct values of d so far + s, values of d among
//     all clients); a subtree whose bound is not lexicographically above the
//     best (or, when testing reachability, is below the target) is skipped;
//   - the last slot is exact without branching: the best single class is
//     found by narrowing a bitset of classes dimension by dimension, keeping
//     those that bring a new value while any does;
//   - mirror images: of classes that differ only in values no other class
//     has, one is tried per node (see signatures).
//
// With s standbys per task and K classes the work is O(K^(s-1)) bitset steps
// in the worst case, and far less in practice since most subtrees are cut.
type searcher struct {
	m     *model
	D, K  int
	words int
	has   [][][]uint64 // has[d][v]: the classes whose value of dims[d] is v
	total []int        // distinct values of dims[d] among all clients

	// The current base: classes chosen (with repetitions), value counts and
	// distinct values per dimension.
	base []int32
	cnt  [][]int32 // cnt[d][v]
	cur  []int

	avail      []uint64   // classes that can take another replica of the task
	all        []uint64   // every class
	mask       []uint64   // scratch
	seen       []uint64   // scratch
	ub         [][]int    // scratch bound per depth
	last       []int      // scratch spread of the last slot
	root       []int      // bound at the root of a maximisation
	sig        []int32    // per class: its symmetry signature (see signatures)
	sigs       int        // number of signatures
	sigClasses [][]int32  // per signature: its classes, ascending
	perSig     []int32    // scratch for order
	buckets    []int32    // scratch for order: one per novelty pattern
	bySig      []int32    // classes by signature, then class
	orderBuf   []ordered  // scratch for order
	seenBase   [][]uint64 // per dimension: classes whose value is in the base
	witness    int32      // a class that completed reachesWithOneMore, or -1
	best       []int
	opt        []int
	reach      bool // testing reachability of opt rather than maximising
}

func newSearcher(m *model) *searcher {
	D, K := len(m.dims), len(m.classes)
	words := (K + 63) / 64
	s := &searcher{m: m, D: D, K: K, words: words,
		has: make([][][]uint64, D), total: make([]int, D), cnt: make([][]int32, D), cur: make([]int, D),
		avail: make([]uint64, words), mask: make([]uint64, words), seen: make([]uint64, words),
		best: make([]int, D), opt: make([]int, D), last: make([]int, D), root: make([]int, D)}
	for d := range m.dims {
		nv := len(m.values[d])
		s.total[d] = nv
		s.cnt[d] = make([]int32, nv)
		s.has[d] = make([][]uint64, nv)
		flat := make([]uint64, nv*words)
		for v := range s.has[d] {
			s.has[d][v] = flat[v*words : (v+1)*words]
		}
		for k, tuple := range m.classVals {
			s.has[d][tuple[d]][k/64] |= 1 << (k % 64)
		}
	}
	s.all = make([]uint64, words)
	for k := 0; k < K; k++ {
		s.all[k/64] |= 1 << (k % 64)
	}
	s.signatures()
	return s
}

// signatures numbers the classes by symmetry: a value that only one class
// has is interchangeable with any other such value, so two classes that
// agree on every shared value and have unique values in the same dimensions
// are mirror images (renaming their unique values swaps them). Neither
// being in the base, whatever one of them can complete, the other can too:
// the search tries one class per signature among siblings, and allowed
// tests one class per signature. With a tag unique to each client (a host
// name as a rack-aware key) this turns K classes into a handful.
func (s *searcher) signatures() {
	m := s.m
	s.sig = make([]int32, s.K)
	ids := make(map[string]int32)
	var key []byte
	for k, tuple := range m.classVals {
		key = key[:0]
		for d, v := range tuple {
			if popcount(s.has[d][v]) == 1 {
				v = -1
			}
			key = append(key, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
		}
		id, ok := ids[string(key)]
		if !ok {
			id = int32(len(ids))
			ids[string(key)] = id
		}
		s.sig[k] = id
		if int(id) == len(s.sigClasses) {
			s.sigClasses = append(s.sigClasses, nil)
		}
		s.sigClasses[id] = append(s.sigClasses[id], int32(k))
	}
	s.sigs = len(ids)
	s.bySig = make([]int32, 0, s.K)
	for _, cs := range s.sigClasses {
		s.bySig = append(s.bySig, cs...)
	}
	if s.D <= 12 {
		s.buckets = make([]int32, 1<<s.D)
	}
}

// reset empties the base and sets the classes available to a task whose
// base (active and standbys so far) is the multiset base.
func (s *searcher) reset(base []int32) {
	for _, q := range s.base {
		s.remove(q)
	}
	s.base = s.base[:0]
	// Every class has a member; a class of the base may have none left.
	copy(s.avail, s.all)
	for i, q := range base {
		used := 0
		for _, o := range base[:i+1] {
			if o == q {
				used++
			}
		}
		if len(s.m.classes[q]) <= used {
			s.avail[q/64] &^= 1 << (q % 64)
		}
	}
	for _, q := range base {
		s.add(q)
	}
}

func (s *searcher) add(q int32) {
	for d, v := range s.m.classVals[q] {
		if s.cnt[d][v] == 0 {
			s.cur[d]++
		}
		s.cnt[d][v]++
	}
	s.base = append(s.base, q)
}

func (s *searcher) remove(q int32) {
	for d, v := range s.m.classVals[q] {
		s.cnt[d][v]--
		if s.cnt[d][v] == 0 {
			s.cur[d]--
		}
	}
	s.base = s.base[:len(s.base)-1]
}

// gains reports whether class q brings a value new to the base.
func (s *searcher) gains(q int32) bool {
	for d, v := range s.m.classVals[q] {
		if s.cnt[d][v] == 0 {
			return true
		}
	}
	return false
}

// lastSlot returns, in out, the spread after adding the best single
// available class to the base.
func (s *searcher) lastSlot(out []int) {
	copy(s.mask, s.avail)
	for d := 0; d < s.D; d++ {
		out[d] = s.cur[d]
		// seen: classes whose value of d is already in the base.
		clear(s.seen)
		for _, q := range s.base {
			h := s.has[d][s.m.classVals[q][d]]
			for w := range s.seen {
				s.seen[w] |= h[w]
			}
		}
		any := false
		for w := range s.mask {
			if s.mask[w]&^s.seen[w] != 0 {
				any = true
				break
			}
		}
		if any {
			out[d]++
			for w := range s.mask {
				s.mask[w] &^= s.seen[w]
			}
		}
	}
}

// reachesWith reports whether adding class q to the base gives spread opt.
func (s *searcher) reachesWith(q int32, opt []int) bool {
	for d, v := range s.m.classVals[q] {
		c := s.cur[d]
		if s.cnt[d][v] == 0 {
			c++
		}
		if c != opt[d] {
			return false // opt is the maximum: below it on d means below it
		}
	}
	return true
}

// prepareSeen computes, per dimension, the classes whose value is already
// in the base (for reachesWithOneMore).
func (s *searcher) prepareSeen() {
	s.witness = -1
	if len(s.seenBase) < s.D {
		s.seenBase = make([][]uint64, s.D)
		for d := range s.seenBase {
			s.seenBase[d] = make([]uint64, s.words)
		}
	}
	for d := 0; d < s.D; d++ {
		sb := s.seenBase[d]
		clear(sb)
		for _, q := range s.base {
			h := s.has[d][s.m.classVals[q][d]]
			for w := range sb {
				sb[w] |= h[w]
			}
		}
	}
}

// reachesWithOneMore reports whether adding class q and then the best single
// class to the base gives spread opt: lastSlot specialised, after
// prepareSeen, without touching the base.
func (s *searcher) reachesWithOneMore(q int32, opt []int) bool {
	// The class that completed the last success often completes this one
	// too: checking it costs a few comparisons, the bitsets a few hundred.
	if w := s.witness; w >= 0 && w != q && s.completes(q, w, opt) {
		return true
	}
	copy(s.mask, s.avail)
	for d := 0; d < s.D; d++ {
		v := s.m.classVals[q][d]
		c := s.cur[d]
		if s.cnt[d][v] == 0 {
			c++
		}
		sb, h := s.seenBase[d], s.has[d][v]
		fresh := false
		for w := range s.mask {
			if s.mask[w]&^(sb[w]|h[w]) != 0 {
				fresh = true
				break
			}
		}
		if fresh {
			c++
			for w := range s.mask {
				s.mask[w] &^= sb[w] | h[w]
			}
		}
		if c != opt[d] {
			return false
		}
	}
	for i, w := range s.mask {
		if w != 0 {
			s.witness = int32(i*64 + bits.TrailingZeros64(w))
			break
		}
	}
	return true
}

// completes reports whether adding classes q and w to the base gives
// spread opt.
func (s *searcher) completes(q, w int32, opt []int) bool {
	if !s.isAvail(w) {
		return false
	}
	vq, vw := s.m.classVals[q], s.m.classVals[w]
	for d := 0; d < s.D; d++ {
		c := s.cur[d]
		if s.cnt[d][vq[d]] == 0 {
			c++
		}
		if s.cnt[d][vw[d]] == 0 && vw[d] != vq[d] {
			c++
		}
		if c != opt[d] {
			return false
		}
	}
	return true
}

// maximise returns the best spread reachable by adding at most slots
// classes to the current base.
func (s *searcher) maximise(cands []int32, slots int) []int {
	s.reach = false
	copy(s.best, s.cur)
	for d := range s.root {
		s.root[d] = min(s.cur[d]+slots, s.total[d])
	}
	s.grow(slots)
	s.branch(cands, slots, 0)
	return s.best
}

// reachable reports whether adding at most slots classes to the current base
// reaches the spread opt.
func (s *searcher) reachable(cands []int32, slots int, opt []int) bool {
	s.reach = true
	copy(s.opt, opt)
	copy(s.best, s.cur)
	if CompareSpread(s.best, opt) >= 0 {
		return true
	}
	s.grow(slots)
	return s.branch(cands, slots, 0)
}

func (s *searcher) grow(slots int) {
	for len(s.ub) <= slots {
		s.ub = append(s.ub, make([]int, s.D))
	}
}

// branch explores the choices of classes from cands; it returns true when
// the search can stop (maximising: the bound of the root is met; testing
// reachability: opt is reached).
func (s *searcher) branch(cands []int32, slots, depth int) bool {
	ub := s.ub[depth]
	for d := range ub {
		ub[d] = min(s.cur[d]+slots, s.total[d])
	}
	if c := CompareSpread(s.cur, s.best); c > 0 {
		copy(s.best, s.cur)
	}
	if s.done() {
		return true
	}
	if slots == 0 || CompareSpread(ub, s.best) <= 0 || (s.reach && CompareSpread(ub, s.opt) < 0) {
		return false
	}
	if slots == 1 {
		s.lastSlot(s.last)
		if CompareSpread(s.last, s.best) > 0 {
			copy(s.best, s.last)
		}
		return s.done()
	}
	lastSig := int32(-1)
	for i, q := range cands {
		if !s.isAvail(q) || !s.gains(q) || s.sig[q] == lastSig {
			continue // a sibling mirroring q was tried already
		}
		lastSig = s.sig[q]
		s.add(q)
		stop := s.branch(cands[i+1:], slots-1, depth+1)
		s.remove(q)
		if stop {
			return true
		}
	}
	return false
}

// done reports whether best has met the goal: opt when testing
// reachability; when maximising, the bound no choice can beat.
func (s *searcher) done() bool {
	if s.reach {
		return CompareSpread(s.best, s.opt) >= 0
	}
	return CompareSpread(s.best, s.root) >= 0
}

func (s *searcher) isAvail(q int32) bool { return s.avail[q/64]&(1<<(q%64)) != 0 }

// ordered is a candidate class with its sort key.
type ordered struct {
	novelty uint64
	q       int32
}

// order returns the available classes that bring a new value to the current
// base, the most novel first (lexicographically by which dimensions gain),
// then by signature (so that mirror images are adjacent), then by class. Of
// mirror images it keeps the first slots: a choice of at most slots classes
// never needs more of them. A counting sort on novelty over the classes in
// signature order does it in linear time (up to 12 dimensions).
func (s *searcher) order(dst []int32, slots int) []int32 {
	os := s.orderBuf[:0]
	if len(s.perSig) < s.sigs {
		s.perSig = make([]int32, s.sigs)
	}
	clear(s.perSig)
	for _, q := range s.bySig {
		if !s.isAvail(q) || s.perSig[s.sig[q]] >= int32(slots) {
			continue
		}
		var novelty uint64 // the first 64 dimensions rank; any gain qualifies
		gains := false
		for d, v := range s.m.classVals[q] {
			fresh := s.cnt[d][v] == 0
			gains = gains || fresh
			if d < 64 {
				novelty <<= 1
				if fresh {
					novelty |= 1
				}
			}
		}
		if gains {
			os = append(os, ordered{novelty, q})
			s.perSig[s.sig[q]]++
		}
	}
	s.orderBuf = os
	dst = dst[:0]
	if s.D > 12 {
		slices.SortStableFunc(os, func(a, b ordered) int {
			if a.novelty > b.novelty {
				return -1
			}
			if a.novelty < b.novelty {
				return 1
			}
			return 0
		})
		for _, o := range os {
			dst = append(dst, o.q)
		}
		return dst
	}
	// Bucket start for novelty x, filled from the most novel down.
	start := s.buckets
	clear(start)
	for _, o := range os {
		start[o.novelty]++
	}
	at := int32(0)
	for x := len(start) - 1; x >= 0; x-- {
		n := start[x]
		start[x] = at
		at += n
	}
	dst = slices.Grow(dst, len(os))[:len(os)]
	for _, o := range os {
		dst[start[o.novelty]] = o.q
		start[o.novelty]++
	}
	return dst
}

// popcount of a bitset.
func popcount(b []uint64) int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}
