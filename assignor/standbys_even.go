// Evening out standby load after the rounds of placeStandbys: moves
// (rebalance), re-picks (repick) and chains of moves (chains) that keep
// every task's optimal spread.

package assignor

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
