// This file is over 600 lines on purpose: it holds one idea, the standby
// search (allowed classes, rounds, load evening), whose pieces share its
// private state; splitting it by size would scatter one algorithm.

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

// rebalance moves a standby to a lighter client where the task keeps its
// optimal spread (and, if warmOnly, the client holds at least as much of the
// task's state): the rounds pick greedily, and the optimal-spread
// constraint can leave some clients with more standbys than needed.
//
// A standby on client c moves to the eligible client v that is least loaded
// after taking it, when v's load after the move is below c's before it:
// (replicas(v)+1)/capacity(v) < replicas(c)/capacity(c). This is the rule
// that bounds a holder's stickiness: with equal capacities a holder keeps
// its standby while it carries at most one replica more than the lightest
// client that could take it with the task's spread kept optimal. A balanced
// plan fed back has no such move, so it stays as it is.
//
// Every move lowers the load of a heavier client for a lighter one's, so the
// passes end; a few suffice.
func (sp *standbyPlacer) rebalance(warmOnly bool) {
	pl, m := sp.pl, sp.pl.m
	k := pl.k
	// recv is the client with the least load after taking one more
	// replica: a slot whose client is not heavier than that stays.
	lightest := sp.lightestReceiver
	recv := lightest()
	for pass := 0; pass < 4; pass++ {
		moved := false
		for t := 0; t < m.numTasks; t++ {
			for j := 0; j < sp.slots; j++ {
				c := pl.standby[t*k+j]
				if !lessLoad(pl.replicas[recv]+1, m.capa[recv], pl.replicas[c], m.capa[c]) {
					continue
				}
				al := sp.allowedFor(t, sp.slots, j)
				sp.excl = append(sp.excl, c)
				best := sp.receiver(al)
				if best < 0 || !lessLoad(pl.replicas[best]+1, m.capa[best], pl.replicas[c], m.capa[c]) ||
					warmOnly && m.lagOf(t, best) > m.lagOf(t, c) {
					continue
				}
				pl.standby[t*k+j] = best
				pl.standbyN[c]--
				pl.replicas[c]--
				pl.standbyN[best]++
				pl.replicas[best]++
				sp.heaps.raised(best)
				sp.heaps.lowered(c)
				if best == recv {
					recv = lightest()
				} else if lessLoad(pl.replicas[c]+1, m.capa[c], pl.replicas[recv]+1, m.capa[recv]) {
					recv = c
				}
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}

// lightestReceiver returns the client with the least load after taking one
// more replica (the smallest index on ties).
func (sp *standbyPlacer) lightestReceiver() int32 {
	pl, m := sp.pl, sp.pl.m
	recv := int32(0)
	for c := int32(1); c < int32(len(m.ids)); c++ {
		if lessLoad(pl.replicas[c]+1, m.capa[c], pl.replicas[recv]+1, m.capa[recv]) {
			recv = c
		}
	}
	return recv
}

// repickBudget bounds the depth-first search of one re-pick, in nodes.
const repickBudget = 64

// repick places all of a task's standbys anew where moving them one at a
// time cannot even the load: when the optimal spread leaves few sets of
// classes (KIP-708's 3 zones x 3 clusters: an active's two standbys must be
// one of two diagonals), replacing any one standby alone loses spread, but
// trading the whole set keeps it.
//
// For a task with a standby on a client h heavier than the lightest client
// would be after taking one, the standbys are lifted and a new set is
// searched for, depth first, slot by slot: each slot from the classes from
// which the optimal spread stays reachable, never on h, on one of the
// task's previous standby clients (they stay where they are) or on a client
// that ends lighter than h was. Candidates per slot are few (the previous
// standbys, then the lightest client of each allowed group, lightest
// first) and the search is bounded (repickBudget). No client rises to h's
// load, which falls: the loads sorted from the heaviest decrease, so the
// passes end.
func (sp *standbyPlacer) repick() {
	pl, m := sp.pl, sp.pl.m
	k := pl.k
	// A single standby is re-picked by rebalance. Like chains, repick runs
	// below a work bound only: at scale, where it would mostly confirm
	// that the spread forces the imbalance (each try searching new
	// combinations of classes), classes have many clients and single moves
	// do the evening.
	if sp.slots < 2 || m.numTasks*sp.slots*len(m.ids) > chainBudget {
		return
	}
	old := make([]int32, sp.slots)
	heavy := make([]int32, 0, sp.slots)
	if len(sp.rcands) < sp.slots {
		sp.rcands = make([][]int32, sp.slots)
	}
	recv := sp.lightestReceiver()
	for pass := 0; pass < 4; pass++ {
		moved := false
		for t := 0; t < m.numTasks; t++ {
			// The task's standbys heavier than the lightest receiver would
			// be, heaviest first.
			heavy = heavy[:0]
			for _, c := range pl.standby[t*k : t*k+sp.slots] {
				if lessLoad(pl.replicas[recv]+1, m.capa[recv], pl.replicas[c], m.capa[c]) {
					heavy = append(heavy, c)
				}
			}
			for i := 1; i < len(heavy); i++ {
				for j := i; j > 0 && pl.lighter(heavy[j-1], heavy[j]); j-- {
					heavy[j], heavy[j-1] = heavy[j-1], heavy[j]
				}
			}
			for _, h := range heavy {
				if sp.tryRepick(t, old, h) {
					moved = true
					recv = sp.lightestReceiver()
					break
				}
			}
		}
		if !moved {
			return
		}
	}
}

// tryRepick lifts task t's standbys and searches for a set that relieves
// h (see repick), keeping it if found; old is scratch of length slots.
func (sp *standbyPlacer) tryRepick(t int, old []int32, h int32) bool {
	pl := sp.pl
	slots := pl.standby[t*pl.k : t*pl.k+sp.slots]
	copy(old, slots)
	for j, c := range old {
		sp.unplace(t, j, c)
	}
	budget := repickBudget
	// h's load before the trade: its replicas now, plus the lifted one.
	if sp.repickFrom(t, 0, old, h, pl.replicas[h]+1, &budget) {
		return true
	}
	for j, c := range old {
		sp.place(t, j, c)
	}
	return false
}

// repickFrom fills task t's slots from j on (see repick), or leaves them
// empty and returns false. A client not in old qualifies only if its load
// after taking the standby is below limit/capacity(h).
func (sp *standbyPlacer) repickFrom(t, j int, old []int32, h int32, limit int64, budget *int) bool {
	pl, m := sp.pl, sp.pl.m
	if j == sp.slots {
		return true
	}
	if *budget--; *budget < 0 {
		return false
	}
	al := sp.allowedFor(t, j, -1)
	excl := sp.excl
	capH := m.capa[h]
	eligible := func(c int32) bool {
		q := m.class[c]
		return c != h && al.has(q, sp.heaps.group[q]) && !contains(excl, c)
	}
	light := func(c int32) bool { return lessLoad(pl.replicas[c]+1, m.capa[c], limit, capH) }
	cands := sp.rcands[j][:0]
	for _, c := range old {
		if eligible(c) {
			cands = append(cands, c)
		}
	}
	cands = sp.lightCandidates(cands, al, 4, eligible, light)
	sp.rcands[j] = cands
	for _, v := range cands {
		sp.place(t, j, v)
		if sp.repickFrom(t, j+1, old, h, limit, budget) {
			return true
		}
		sp.unplace(t, j, v)
	}
	return false
}

// lightCandidates appends to dst up to n clients that eligible and light
// accept, of groups (see searcher.signatures) not yet in dst, lightest
// first (by load after taking one more replica).
func (sp *standbyPlacer) lightCandidates(dst []int32, al *allowedSet, n int, eligible, light func(c int32) bool) []int32 {
	pl, m := sp.pl, sp.pl.m
	h := sp.heaps
	taken := func(c int32) bool { return h.groupIn(c, dst) }
	base, want := len(dst), len(dst)+n
	if !m.equalCapacity {
		// Loads after one more replica do not follow the heap's order:
		// look at every client, keeping the n lightest by insertion.
		for c := int32(0); c < int32(len(m.ids)); c++ {
			if !eligible(c) || !light(c) || taken(c) {
				continue
			}
			if len(dst) < want {
				dst = append(dst, c)
			} else if lessLoad(pl.replicas[c]+1, m.capa[c], pl.replicas[dst[want-1]]+1, m.capa[dst[want-1]]) {
				dst[want-1] = c
			} else {
				continue
			}
			for i := len(dst) - 1; i > base && lessLoad(pl.replicas[dst[i]]+1, m.capa[dst[i]], pl.replicas[dst[i-1]]+1, m.capa[dst[i-1]]); i-- {
				dst[i], dst[i-1] = dst[i-1], dst[i]
			}
		}
		return dst
	}
	// Equal capacities: the heap of all clients, best first, up to the
	// first client too heavy; where few clients are allowed, the lightest
	// of each allowed group instead.
	if 4*al.clients >= len(h.all.heap) {
		return h.collect(dst, want, 64, eligible, light)
	}
	for _, g := range al.sigs {
		if len(dst) >= want {
			break
		}
		c := h.lightestOf(g, eligible)
		if c >= 0 && light(c) && !taken(c) {
			dst = append(dst, c)
		}
	}
	for i := base + 1; i < len(dst); i++ { // lightest first
		for j := i; j > base && pl.lighter(dst[j], dst[j-1]); j-- {
			dst[j], dst[j-1] = dst[j-1], dst[j]
		}
	}
	return dst
}

// place makes c task t's standby in slot j; unplace empties the slot.
func (sp *standbyPlacer) place(t, j int, c int32) {
	pl := sp.pl
	pl.standby[t*pl.k+j] = c
	pl.standbyN[c]++
	pl.replicas[c]++
	sp.heaps.raised(c)
}

func (sp *standbyPlacer) unplace(t, j int, c int32) {
	pl := sp.pl
	pl.standby[t*pl.k+j] = -1
	pl.standbyN[c]--
	pl.replicas[c]--
	sp.heaps.lowered(c)
}

// chainBudget bounds the work of chains and repick: a search looks at
// every standby slot against every client, so it runs only where that
// product is small enough (groups of up to a few hundred clients and
// tasks). Larger groups are left to the rounds and rebalance, whose balance
// is tight at scale.
const chainBudget = 1 << 21

// chains lowers the load of the heaviest client holding standbys by moving
// standbys along a chain: one of its standbys goes to a client that passes
// one of its own on, and so on, until a client light enough takes one. It
// finds what single moves cannot (a client at the same load as the heaviest
// must hand a standby on before it can take one). Each link keeps its
// task's spread optimal and, if warmOnly, moves a standby only to a client
// holding at least as much of the task's state; a chain touches a task at
// most once.
func (sp *standbyPlacer) chains(warmOnly bool) {
	pl, m := sp.pl, sp.pl.m
	n, k := len(m.ids), pl.k
	slotsTotal := m.numTasks * sp.slots
	if slotsTotal*n > chainBudget {
		return
	}
	// Standby slots by client, rebuilt after each chain.
	start := make([]int32, n+1)
	bySlot := make([]int32, slotsTotal)
	prev := make([]int32, n) // the slot by which the search reached a client
	queue := make([]int32, 0, n)
	seenTask := make([]int32, m.numTasks)
	for round := int32(1); round <= int32(2*n); round++ {
		h := int32(-1)
		for c := int32(0); c < int32(n); c++ {
			if pl.standbyN[c] > 0 && (h < 0 || lessLoad(pl.replicas[h], m.capa[h], pl.replicas[c], m.capa[c])) {
				h = c
			}
		}
		if h < 0 {
			return
		}
		clear(start)
		for t := 0; t < m.numTasks; t++ {
			for j := 0; j < sp.slots; j++ {
				start[pl.standby[t*k+j]+1]++
			}
		}
		for c := 0; c < n; c++ {
			start[c+1] += start[c]
		}
		at := append([]int32(nil), start[:n]...)
		for t := 0; t < m.numTasks; t++ {
			for j := 0; j < sp.slots; j++ {
				c := pl.standby[t*k+j]
				bySlot[at[c]] = int32(t*sp.slots + j)
				at[c]++
			}
		}
		// Breadth first from h: the shortest chain, deterministic.
		for c := range prev {
			prev[c] = -1
		}
		queue = append(queue[:0], h)
		prev[h] = -2
		found := int32(-1)
	search:
		for qi := 0; qi < len(queue); qi++ {
			u := queue[qi]
			for _, sl := range bySlot[start[u]:start[u+1]] {
				t, j := int(sl)/sp.slots, int(sl)%sp.slots
				al := sp.allowedFor(t, sp.slots, j)
				lagU := m.lagOf(t, u)
				for v := int32(0); v < int32(n); v++ {
					if prev[v] != -1 || contains(sp.excl, v) || v == u {
						continue
					}
					if q := m.class[v]; !al.has(q, sp.heaps.group[q]) || warmOnly && m.lagOf(t, v) > lagU {
						continue
					}
					prev[v] = sl
					if lessLoad(pl.replicas[v]+1, m.capa[v], pl.replicas[h], m.capa[h]) {
						found = v
						break search
					}
					queue = append(queue, v)
				}
			}
		}
		if found < 0 {
			return
		}
		// Check the chain touches each task once, then move along it.
		for v := found; v != h; {
			sl := prev[v]
			t := int(sl) / sp.slots
			if seenTask[t] == round {
				return
			}
			seenTask[t] = round
			v = pl.standby[t*k+int(sl)%sp.slots]
		}
		for v := found; v != h; {
			sl := prev[v]
			t, j := int(sl)/sp.slots, int(sl)%sp.slots
			u := pl.standby[t*k+j]
			pl.standby[t*k+j] = v
			pl.standbyN[u]--
			pl.replicas[u]--
			pl.standbyN[v]++
			pl.replicas[v]++
			sp.heaps.raised(v)
			sp.heaps.lowered(u)
			v = u
		}
	}
}

// receiver returns the allowed client, not in excl, whose load after one
// more replica is the least (smallest id on ties), or -1. With equal
// capacities that is the least-loaded client, found in the heaps; with
// unequal ones a light client of small capacity may be the worse receiver,
// so every client is looked at.
func (sp *standbyPlacer) receiver(al *allowedSet) int32 {
	pl, m := sp.pl, sp.pl.m
	if m.equalCapacity {
		return sp.heaps.lightestAllowed(al, sp.excl)
	}
	best := int32(-1)
	for c := int32(0); c < int32(len(m.ids)); c++ {
		q := m.class[c]
		if !al.has(q, sp.heaps.group[q]) || contains(sp.excl, c) {
			continue
		}
		if best < 0 || lessLoad(pl.replicas[c]+1, m.capa[c], pl.replicas[best]+1, m.capa[best]) {
			best = c
		}
	}
	return best
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

// groupHeaps keeps the clients of each group of classes (a signature) in a
// binary min-heap by load (see placement.lighter), so that the lightest
// eligible client of a group is found in a few steps.
type groupHeaps struct {
	pl    *placement
	all   *clientHeap // every client, for lightestAllowed
	group []int32     // per class: its group
	heap  [][]int32   // per group
	pos   []int32     // per client: its index in its group's heap
	front []int32     // scratch for lightest
}

func newGroupHeaps(pl *placement, group []int32, groups int) *groupHeaps {
	m := pl.m
	h := &groupHeaps{pl: pl, group: group, heap: make([][]int32, groups), pos: make([]int32, len(m.ids))}
	size := make([]int, groups)
	for c := range m.ids {
		size[group[m.class[c]]]++
	}
	flat := make([]int32, len(m.ids))
	for g, at := 0, 0; g < groups; g++ {
		h.heap[g] = flat[at : at : at+size[g]]
		at += size[g]
	}
	for c := range m.ids {
		g := group[m.class[c]]
		h.pos[c] = int32(len(h.heap[g]))
		h.heap[g] = append(h.heap[g], int32(c))
	}
	for _, hp := range h.heap {
		for i := len(hp)/2 - 1; i >= 0; i-- {
			h.down(hp, i)
		}
	}
	h.all = newClientHeap(len(m.ids), pl.lighter)
	return h
}

// lightestAllowed returns the least-loaded client of the allowed set not in
// excl, or -1. It first walks the heap of all clients best-first, which
// finds it in a few steps when much is allowed; after a bounded walk it
// asks each allowed group instead.
func (h *groupHeaps) lightestAllowed(al *allowedSet, excl []int32) int32 {
	m := h.pl.m
	if 4*al.clients >= len(h.all.heap) { // a quarter or more allowed: a few steps
		c := h.walk(h.all.heap, func(c int32) bool {
			return !contains(excl, c) && al.has(m.class[c], h.group[m.class[c]])
		}, -1, 16)
		if c >= 0 {
			return c
		}
	}
	best := int32(-1)
	for _, g := range al.sigs {
		if c := h.lightest(g, excl, al.skip, best); c >= 0 {
			best = c
		}
	}
	return best
}

// raised restores the heap order after client c's load grew.
func (h *groupHeaps) raised(c int32) {
	h.down(h.heap[h.group[h.pl.m.class[c]]], int(h.pos[c]))
	h.all.raised(c)
}

// lowered restores the heap order after client c's load shrank.
func (h *groupHeaps) lowered(c int32) {
	h.all.lowered(c)
	hp := h.heap[h.group[h.pl.m.class[c]]]
	for i := int(h.pos[c]); i > 0; {
		p := (i - 1) / 2
		if !h.pl.lighter(hp[i], hp[p]) {
			return
		}
		hp[i], hp[p] = hp[p], hp[i]
		h.pos[hp[i]], h.pos[hp[p]] = int32(i), int32(p)
		i = p
	}
}

func (h *groupHeaps) down(hp []int32, i int) {
	for {
		l := 2*i + 1
		if l >= len(hp) {
			return
		}
		j := l
		if r := l + 1; r < len(hp) && h.pl.lighter(hp[r], hp[l]) {
			j = r
		}
		if !h.pl.lighter(hp[j], hp[i]) {
			return
		}
		hp[i], hp[j] = hp[j], hp[i]
		h.pos[hp[i]], h.pos[hp[j]] = int32(i), int32(j)
		i = j
	}
}

// lightest returns the least-loaded client of group g that is not in excl,
// whose class is not in skip and that is lighter than bound (any, if bound
// is -1), or -1. It walks the heap best-first, expanding only the nodes it
// must pass over, and stops where the heap is no lighter than bound.
func (h *groupHeaps) lightest(g int32, excl, skip []int32, bound int32) int32 {
	hp := h.heap[g]
	if len(hp) == 0 || bound >= 0 && !h.pl.lighter(hp[0], bound) {
		return -1
	}
	m := h.pl.m
	if c := hp[0]; !contains(excl, c) && !contains(skip, m.class[c]) {
		return c // the common case
	}
	return h.walk(hp, func(c int32) bool { return !contains(excl, c) && !contains(skip, m.class[c]) }, bound, -1)
}

// groupIn reports whether a client of c's group is in cs.
func (h *groupHeaps) groupIn(c int32, cs []int32) bool {
	m := h.pl.m
	g := h.group[m.class[c]]
	for _, d := range cs {
		if h.group[m.class[d]] == g {
			return true
		}
	}
	return false
}

// lightestOf returns the least-loaded client of group g that ok accepts,
// looking at a few of the lightest only, or -1.
func (h *groupHeaps) lightestOf(g int32, ok func(c int32) bool) int32 {
	return h.walk(h.heap[g], ok, -1, 16)
}

// collect visits the heap of all clients best-first and appends to dst the
// clients ok accepts whose group has none in dst yet, until dst holds n, a
// client fails light (no later one is lighter), or steps nodes were seen.
func (h *groupHeaps) collect(dst []int32, n, steps int, ok, light func(c int32) bool) []int32 {
	hp := h.all.heap
	if len(hp) == 0 {
		return dst
	}
	front := append(h.front[:0], 0)
	defer func() { h.front = front[:0] }()
	for ; len(front) > 0 && steps > 0 && len(dst) < n; steps-- {
		bi := 0
		for i := 1; i < len(front); i++ {
			if h.pl.lighter(hp[front[i]], hp[front[bi]]) {
				bi = i
			}
		}
		at := front[bi]
		c := hp[at]
		if !light(c) {
			break
		}
		if ok(c) && !h.groupIn(c, dst) {
			dst = append(dst, c)
		}
		front[bi] = front[len(front)-1]
		front = front[:len(front)-1]
		for _, ch := range [2]int32{2*at + 1, 2*at + 2} {
			if int(ch) < len(hp) {
				front = append(front, ch)
			}
		}
	}
	return dst
}

// walk visits the heap hp best-first from its root, expanding only the nodes
// whose client ok rejects, and returns the first client ok accepts; or -1
// when the heap is exhausted, after steps nodes (no limit if negative), or
// at a node no lighter than bound (none if -1).
func (h *groupHeaps) walk(hp []int32, ok func(c int32) bool, bound int32, steps int) int32 {
	if len(hp) == 0 {
		return -1
	}
	front := append(h.front[:0], 0)
	defer func() { h.front = front[:0] }()
	for ; len(front) > 0 && steps != 0; steps-- {
		bi := 0
		for i := 1; i < len(front); i++ {
			if h.pl.lighter(hp[front[i]], hp[front[bi]]) {
				bi = i
			}
		}
		at := front[bi]
		if bound >= 0 && !h.pl.lighter(hp[at], bound) {
			return -1
		}
		if c := hp[at]; ok(c) {
			return c
		}
		front[bi] = front[len(front)-1]
		front = front[:len(front)-1]
		for _, ch := range [2]int32{2*at + 1, 2*at + 2} {
			if int(ch) < len(hp) {
				front = append(front, ch)
			}
		}
	}
	return -1
}
