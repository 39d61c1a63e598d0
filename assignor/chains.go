package assignor

import "slices"

// Chains of active moves.
//
// balanceActives moves one task at a time from a loaded client to a lighter
// one caught up on it. When no such single move is left but the actives are
// still unbalanced, the lighter clients may simply hold none of the loaded
// ones' tasks, yet be caught up on tasks of a third client that is caught up
// on the loaded one's: src gives a task to c1, c1 gives another to c2, ...,
// the last gives one to dst. Every hop goes to a client caught up on the task
// it takes, the middle clients keep their count, and the net effect is the
// single move src -> dst: balance improves exactly as that move would, with
// no warmup and no probing rebalance. Kafka Streams only knows the single
// move and warms the receiver up instead.
//
// The search is a breadth-first search over clients, an edge a -> b when b
// is caught up on some task a runs. Sources are the clients that some client
// could relieve, tried most loaded first (smallest id on ties); the first
// level of a source's search that reaches a client it may relieve
// (worthMoving) ends it, and the lightest such client (smallest id on ties)
// is the end. Paths are simple, so a chain has at most one hop per client
// but one. Clients reached by a source's fruitless search are skipped by
// the next, lighter sources: nothing they reach could be relieved from the
// heavier source, so nothing could from a lighter one. One search for a
// chain therefore looks at most once at each caught-up holder of each task.
//
// Chains run as a phase after the single moves are exhausted (a one-hop
// chain is a single move, so the phase needs no other), and only while
// the actives are unbalanced: a fresh or steady plan costs one pass over
// the clients. Each chain improves the balance as a single move does, so
// the phase terminates. A hop a -> b hands on a task a ran before the chain
// and b is caught up on: the one whose move costs least churn, then the one
// b lags least on, then the smallest.

// chainSearch holds the search's state over one balanceActives call: the
// tasks each client runs (kept up to date by applyChain) and scratch.
type chainSearch struct {
	on     [][]int32 // per client: the tasks it runs, in no particular order
	parent []int32   // per client: the client it was reached from, -1 = source, -2 = unseen
	order  []int32   // the sources: clients by load, heaviest first
	level  []int32
	next   []int32
}

// balanceChain applies one chain of moves that improves the balance, if
// there is one, and reports whether it did.
func (pl *placement) balanceChain(cs *chainSearch) bool {
	m := pl.m
	n := int32(len(m.ids))
	// The best receiver: the client lightest once it took one more task. A
	// source relieves someone iff it relieves this one; the sources are
	// the clients that do.
	recv := int32(0)
	for c := int32(1); c < n; c++ {
		if lessLoad(pl.actives[c]+1, m.capa[c], pl.actives[recv]+1, m.capa[recv]) {
			recv = c
		}
	}
	cs.order = cs.order[:0]
	for c := int32(0); c < n; c++ {
		if pl.worthMoving(c, recv) {
			cs.order = append(cs.order, c)
		}
	}
	if len(cs.order) == 0 {
		return false
	}
	cs.index(pl)
	for c := range cs.parent {
		cs.parent[c] = -2
	}
	// Heaviest first, smallest id on ties. The heaviest source usually has
	// a chain: find it by a scan, and sort the others only when it has none.
	heavier := func(a, b int32) int {
		switch {
		case lessLoad(pl.actives[b], m.capa[b], pl.actives[a], m.capa[a]):
			return -1
		case lessLoad(pl.actives[a], m.capa[a], pl.actives[b], m.capa[b]):
			return 1
		}
		return int(a - b)
	}
	h := 0
	for i := range cs.order {
		if heavier(cs.order[i], cs.order[h]) < 0 {
			h = i
		}
	}
	cs.order[0], cs.order[h] = cs.order[h], cs.order[0]
	for i := range cs.order {
		if i == 1 {
			slices.SortFunc(cs.order[1:], heavier)
		}
		src := cs.order[i]
		if cs.parent[src] != -2 {
			continue // reached by a heavier source's fruitless search
		}
		if dst := cs.search(pl, src); dst >= 0 {
			pl.applyChain(cs, dst)
			return true
		}
	}
	return false
}

// index lists the tasks each client runs, on the first search of a
// balanceActives call (no single move is made after it).
func (cs *chainSearch) index(pl *placement) {
	if cs.on != nil {
		return
	}
	n := len(pl.m.ids)
	start := make([]int32, n+1)
	for _, c := range pl.active {
		start[c+1]++
	}
	for c := 0; c < n; c++ {
		start[c+1] += start[c]
	}
	flat := make([]int32, len(pl.active))
	cs.on = make([][]int32, n)
	for c := range cs.on {
		cs.on[c] = flat[start[c]:start[c]:start[c+1]]
	}
	for t, c := range pl.active {
		cs.on[c] = append(cs.on[c], int32(t))
	}
	cs.parent = make([]int32, n)
}

// search runs the breadth-first search from src over clients not yet seen,
// level by level, each level's clients in id order (a client's parent is the
// smallest-id client of the previous level that reaches it). It returns the
// end of the shortest chain, the lightest relievable client of the first
// level holding one (smallest id on ties), or -1.
func (cs *chainSearch) search(pl *placement, src int32) int32 {
	m := pl.m
	cs.parent[src] = -1
	cs.level = append(cs.level[:0], src)
	for len(cs.level) > 0 {
		cs.next = cs.next[:0]
		for _, a := range cs.level {
			for _, t := range cs.on[a] {
				for i := m.holderStart[t]; i < m.holderStart[t+1] && m.holderLag[i] <= m.acceptable; i++ {
					if b := m.holderClient[i]; cs.parent[b] == -2 {
						cs.parent[b] = a
						cs.next = append(cs.next, b)
					}
				}
			}
		}
		slices.Sort(cs.next)
		dst := int32(-1)
		for _, b := range cs.next {
			if pl.worthMoving(src, b) && (dst < 0 || lessLoad(pl.actives[b], m.capa[b], pl.actives[dst], m.capa[dst])) {
				dst = b
			}
		}
		if dst >= 0 {
			return dst
		}
		cs.level, cs.next = cs.next, cs.level
	}
	return -1
}

// applyChain makes the moves of the chain ending at dst, from its end back
// to its source, so that each hop gives a task its giver ran before the
// chain: on each hop a -> b, the task whose move undoes the most churn (b
// was its previous active; else it had already left its own), then the one
// b lags least on, then the smallest.
func (pl *placement) applyChain(cs *chainSearch, dst int32) {
	m := pl.m
	for b := dst; cs.parent[b] >= 0; b = cs.parent[b] {
		a := cs.parent[b]
		at, best, bestCost, bestLag := -1, int32(-1), 0, int64(0)
		for i, t := range cs.on[a] {
			lag := m.lagOf(int(t), b)
			if lag > m.acceptable {
				continue
			}
			cost := 0
			if m.prevActive[t] == a {
				cost++
			}
			if m.prevActive[t] == b {
				cost--
			}
			if best < 0 || cost < bestCost || cost == bestCost && (lag < bestLag || lag == bestLag && t < best) {
				at, best, bestCost, bestLag = i, t, cost, lag
			}
		}
		pl.moveActive(int(best), b)
		last := len(cs.on[a]) - 1
		cs.on[a][at] = cs.on[a][last]
		cs.on[a] = cs.on[a][:last]
		cs.on[b] = append(cs.on[b], best)
	}
}
