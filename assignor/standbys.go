// The standby search: which classes a task's next standby may come from
// (allowed), and the rounds that place them (placeStandbys). Evening out
// the load afterwards is in standbys_even.go, the per-group heaps that
// find the lightest client in groupheaps.go.

package assignor

// allowedSet is the classes a task's next standby may come from while its
// replicas can still reach the optimal spread.
//
// Classes are allowed by signature (see searcher.signatures): every class
// of the signatures in sigs but those in skip (the classes of the task's
// replicas, when no slot is spare for padding).
type allowedSet struct {
	bits []uint64 // by signature
	sigs []int32
	skip []int32
	// clients counts the clients of the allowed classes: when they are a
	// good share of all, the lightest is found by walking all clients.
	clients int
}

// has reports whether class q, of signature g, is allowed.
func (a *allowedSet) has(q, g int32) bool {
	return a.bits[g/64]&(1<<(g%64)) != 0 && !contains(a.skip, q)
}

// placeStandbys gives every task min(num.standby.replicas, clients - 1)
// standbys, in rounds: standby #1 of every task, in task order, then #2, and
// so on, so that load and any shortage are spread over all tasks. Then it
// evens out load by moving standbys between clients where the task keeps
// its optimal spread (see rebalance, chains and repick): first only to
// clients holding at least as much of the task's state, then to any client.
// The second phase is what bounds stickiness: a holder keeps a standby only
// while no eligible client would be lighter after taking it than the holder
// is with it (see rebalance), so standbys placed while few clients had
// joined do not stay piled on them.
//
// Each pick is restricted to the classes from which the task can still reach
// its optimal spread (computed exactly by the searcher, once per active class
// and per combination of classes chosen so far, then cached). Within those:
// a client holding the task's state (least lag first), else the least loaded
// (actives, standbys and warmups per unit of capacity), then the smallest id.
func (pl *placement) placeStandbys() {
	m := pl.m
	slots := min(pl.k, len(m.ids)-1)
	if slots <= 0 || m.numTasks == 0 {
		return
	}
	s := newSearcher(m)
	sp := &standbyPlacer{pl: pl, slots: slots, s: s, heaps: newGroupHeaps(pl, s.sig, s.sigs),
		opts: make(map[int32][]int), cache: make(map[string]*allowedSet),
		base: make([]int32, 0, 1+slots), excl: make([]int32, 0, 1+slots)}
	k := pl.k
	for r := 0; r < slots; r++ {
		for t := 0; t < m.numTasks; t++ {
			al := sp.allowedFor(t, r, -1)
			c := pl.pickStandby(t, al, sp.heaps, sp.excl)
			pl.standby[t*k+r] = c
			pl.standbyN[c]++
			pl.replicas[c]++
			sp.heaps.raised(c)
		}
	}
	// Warm moves first, so that where a client must shed standbys it sheds
	// the ones it holds no state for; then cold ones, for the balance.
	sp.rebalance(true)
	sp.chains(true)
	sp.rebalance(false)
	sp.chains(false)
	sp.repick()
	sp.rackStandbys()
}

// standbyPlacer holds what placing standbys reuses across tasks.
type standbyPlacer struct {
	pl    *placement
	slots int // standbys per task
	s     *searcher
	heaps *groupHeaps
	opts  map[int32][]int        // optimal spread per active class
	cache map[string]*allowedSet // by active class and classes chosen
	key   []byte
	base  []int32
	excl  []int32 // task t's replicas considered by the last allowedFor
	cands []int32
	// rcands[j]: repick's candidates for slot j.
	rcands [][]int32
}

// allowedFor returns the classes task t's next standby may come from given
// its active and its standbys in slots [0, upto) except slot skip, and sets
// excl to those replicas.
func (sp *standbyPlacer) allowedFor(t, upto, skip int) *allowedSet {
	pl, m := sp.pl, sp.pl.m
	a := pl.active[t]
	ca := m.class[a]
	sp.base = append(sp.base[:0], ca)
	sp.excl = append(sp.excl[:0], a)
	for j, c := range pl.standby[t*pl.k : t*pl.k+upto] {
		if j != skip {
			sp.base = append(sp.base, m.class[c])
			sp.excl = append(sp.excl, c)
		}
	}
	sortInt32(sp.base[1:])
	sp.key = sp.key[:0]
	for _, q := range sp.base {
		sp.key = append(sp.key, byte(q), byte(q>>8), byte(q>>16), byte(q>>24))
	}
	if al := sp.cache[string(sp.key)]; al != nil {
		return al
	}
	opt, ok := sp.opts[ca]
	if !ok {
		sp.s.reset(sp.base[:1])
		sp.cands = sp.s.order(sp.cands, sp.slots)
		opt = append([]int(nil), sp.s.maximise(sp.cands, sp.slots)...)
		sp.opts[ca] = opt
	}
	al := pl.allowed(sp.s, sp.base, sp.slots-(len(sp.base)-1), opt, &sp.cands)
	sp.cache[string(sp.key)] = al
	return al
}

// allowed computes the classes from which a task with replicas of classes
// base (its active's first) and slots standbys still to place can take its
// next standby and still reach the spread opt.
func (pl *placement) allowed(s *searcher, base []int32, slots int, opt []int, cands *[]int32) *allowedSet {
	s.reset(base)
	al := pl.newAllowedSet((s.sigs + 63) / 64)
	if slots >= 3 { // with at most one slot after this one, no branching
		*cands = s.order(*cands, slots-1)
	}
	// If opt is reachable with one slot to spare, the next standby may come
	// from any class: it can be padding.
	padding := s.reachable(*cands, slots-1, opt)
	if !padding && slots == 2 {
		s.prepareSeen()
	}
	// Mirror images answer alike: one class per signature is tested, the
	// first not in the base (base classes add nothing: never allowed unless
	// as padding).
	for g := int32(0); g < int32(s.sigs); g++ {
		q := int32(-1)
		for _, c := range s.sigClasses[g] {
			if s.isAvail(c) && (padding || !contains(base, c)) {
				q = c
				break
			}
		}
		if q < 0 {
			continue
		}
		ok := padding
		switch {
		case ok:
		case slots == 1:
			ok = s.reachesWith(q, opt)
		case slots == 2:
			ok = s.reachesWithOneMore(q, opt)
		default:
			s.add(q)
			ok = s.reachable(*cands, slots-1, opt)
			s.remove(q)
		}
		if ok {
			al.bits[g/64] |= 1 << (g % 64)
			al.sigs = append(al.sigs, g)
			for _, q := range s.sigClasses[g] {
				if padding || !contains(base, q) {
					al.clients += len(s.m.classes[q])
				}
			}
		}
	}
	// Keep the lists in the slab (a window each) rather than one allocation
	// per set: there is a set per active class and combination of classes.
	pl.scratch32 = al.sigs[:0]
	al.sigs = pl.keep(al.sigs)
	if !padding {
		al.skip = pl.keep(base)
	}
	return al
}

// newAllowedSet returns an empty set over words words of class bits, cut
// from slabs.
func (pl *placement) newAllowedSet(words int) *allowedSet {
	if len(pl.sets) == cap(pl.sets) {
		pl.sets = make([]allowedSet, 0, 256)
	}
	pl.sets = append(pl.sets, allowedSet{})
	al := &pl.sets[len(pl.sets)-1]
	if cap(pl.slab64)-len(pl.slab64) < words {
		pl.slab64 = make([]uint64, 0, max(64*words, 4096))
	}
	at := len(pl.slab64)
	pl.slab64 = pl.slab64[:at+words]
	al.bits = pl.slab64[at : at+words : at+words]
	al.sigs = pl.scratch32[:0]
	return al
}

// keep copies s into the int32 slab.
func (pl *placement) keep(s []int32) []int32 {
	if cap(pl.slab32)-len(pl.slab32) < len(s) {
		pl.slab32 = make([]int32, 0, max(len(s), 4096))
	}
	at := len(pl.slab32)
	pl.slab32 = append(pl.slab32, s...)
	return pl.slab32[at:len(pl.slab32):len(pl.slab32)]
}

// pickStandby chooses task t's next standby from the allowed classes,
// excluding the clients in excl (its replicas so far).
func (pl *placement) pickStandby(t int, al *allowedSet, heaps *groupHeaps, excl []int32) int32 {
	m := pl.m
	best, bestLag := int32(-1), int64(0)
	for i := m.holderStart[t]; i < m.holderStart[t+1]; i++ {
		c, lag := m.holderClient[i], m.holderLag[i]
		if best >= 0 && lag > bestLag {
			break // holders are sorted by lag
		}
		if q := m.class[c]; !al.has(q, heaps.group[q]) || contains(excl, c) {
			continue
		}
		if best < 0 || pl.lighter(c, best) {
			best, bestLag = c, lag
		}
	}
	if best >= 0 {
		return best
	}
	if best = heaps.lightestAllowed(al, excl); best >= 0 {
		return best
	}
	// Unreachable when the allowed set is right; never leave a slot empty.
	for c := int32(0); c < int32(len(m.ids)); c++ {
		if !contains(excl, c) && (best < 0 || pl.lighter(c, best)) {
			best = c
		}
	}
	return best
}

// lighter reports whether client a is less loaded than b (replicas per unit
// of capacity), the smaller id on equal loads.
func (pl *placement) lighter(a, b int32) bool {
	ca, cb := pl.m.capa[a], pl.m.capa[b]
	if lessLoad(pl.replicas[a], ca, pl.replicas[b], cb) {
		return true
	}
	return !lessLoad(pl.replicas[b], cb, pl.replicas[a], ca) && a < b
}

func contains(s []int32, x int32) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
