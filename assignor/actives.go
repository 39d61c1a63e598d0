package assignor

import "sort"

// run computes the whole placement: actives, then standbys, then warmups
// (warmups last, so that they avoid every client holding a replica). With a
// rack-aware strategy, actives and standbys are then traded between clients
// for fewer cross-zone bytes (racks_actives.go, racks_standbys.go).
//
// A plan whose actives are still unbalanced asks for a probing rebalance:
// the moves left wait for a receiver to catch up, on a warmup or on a
// standby it already has, and the next plan makes them.
func (pl *placement) run() {
	pl.placeActives()
	pl.balanceActives()
	pl.probing = pl.unbalanced()
	pl.rackActives()
	pl.placeStandbys()
	pl.placeWarmups()
}

// placeActives keeps every task on its live previous active and gives each
// orphaned task, in task order, to the least-loaded caught-up client, else
// to the least-lagging holder, else to the least-loaded client.
func (pl *placement) placeActives() {
	m := pl.m
	var orphans []int
	for t := 0; t < m.numTasks; t++ {
		if c := m.prevActive[t]; c >= 0 {
			pl.setActive(t, c)
		} else {
			orphans = append(orphans, t)
		}
	}
	var light *clientHeap // built on first need: fresh groups have only orphans
	for _, t := range orphans {
		best := int32(-1)
		// Caught-up holders: least loaded by capacity, then smallest id.
		for i := m.holderStart[t]; i < m.holderStart[t+1]; i++ {
			c, lag := m.holderClient[i], m.holderLag[i]
			if lag > m.acceptable { // holders are sorted by lag
				break
			}
			if best < 0 || lessLoad(pl.actives[c], m.capa[c], pl.actives[best], m.capa[best]) ||
				(!lessLoad(pl.actives[best], m.capa[best], pl.actives[c], m.capa[c]) && c < best) {
				best = c
			}
		}
		if best < 0 && m.holderStart[t] < m.holderStart[t+1] {
			// No one caught up: the least lag (unknown lags rank last among
			// holders), ties by load, then id.
			i0 := m.holderStart[t]
			least := m.holderLag[i0]
			for i := i0; i < m.holderStart[t+1] && m.holderLag[i] == least; i++ {
				c := m.holderClient[i]
				if best < 0 || lessLoad(pl.actives[c], m.capa[c], pl.actives[best], m.capa[best]) {
					best = c
				}
			}
		}
		if best < 0 {
			if light == nil {
				light = newClientHeap(len(m.ids), func(a, b int32) bool {
					if lessLoad(pl.actives[a], m.capa[a], pl.actives[b], m.capa[b]) {
						return true
					}
					return !lessLoad(pl.actives[b], m.capa[b], pl.actives[a], m.capa[a]) && a < b
				})
			}
			best = light.min()
		}
		pl.setActive(t, best)
		if light != nil {
			light.raised(best)
		}
	}
}

// clientHeap is a binary min-heap of all clients under a less function (by
// load: keys change one client at a time).
type clientHeap struct {
	heap []int32
	pos  []int32
	less func(a, b int32) bool
}

func newClientHeap(n int, less func(a, b int32) bool) *clientHeap {
	h := &clientHeap{heap: make([]int32, n), pos: make([]int32, n), less: less}
	for c := range h.heap {
		h.heap[c], h.pos[c] = int32(c), int32(c)
	}
	for i := n/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	return h
}

func (h *clientHeap) min() int32 { return h.heap[0] }

// raised restores the order after client c's key grew.
func (h *clientHeap) raised(c int32) { h.down(int(h.pos[c])) }

// lowered restores the order after client c's key shrank.
func (h *clientHeap) lowered(c int32) {
	hp := h.heap
	for i := int(h.pos[c]); i > 0; {
		p := (i - 1) / 2
		if !h.less(hp[i], hp[p]) {
			return
		}
		hp[i], hp[p] = hp[p], hp[i]
		h.pos[hp[i]], h.pos[hp[p]] = int32(i), int32(p)
		i = p
	}
}

func (h *clientHeap) down(i int) {
	hp := h.heap
	for {
		l := 2*i + 1
		if l >= len(hp) {
			return
		}
		j := l
		if r := l + 1; r < len(hp) && h.less(hp[r], hp[l]) {
			j = r
		}
		if !h.less(hp[j], hp[i]) {
			return
		}
		hp[i], hp[j] = hp[j], hp[i]
		h.pos[hp[i]], h.pos[hp[j]] = int32(i), int32(j)
		i = j
	}
}

// worthMoving reports whether one active moving from src to dst makes the
// balance strictly better: dst's load after the move stays below src's
// before it. When no such pair is left, actives per unit of capacity differ
// by at most one (by 1/capacity of the lighter client).
func (pl *placement) worthMoving(src, dst int32) bool {
	return src != dst && lessLoad(pl.actives[dst]+1, pl.m.capa[dst], pl.actives[src], pl.m.capa[src])
}

// balanceActives moves actives toward clients that are caught up on them,
// until no such move improves the balance. Receivers are served least
// loaded first; each takes, from the most loaded client it can relieve, the
// task it lags least on (smallest task on ties). When no single move is
// left, chains of moves (balanceChain) may make more.
func (pl *placement) balanceActives() {
	m := pl.m
	n := int32(len(m.ids))
	if n < 2 {
		return
	}
	// caught[c]: the tasks client c is caught up on, ascending (windows of
	// one array).
	count := make([]int32, n+1)
	for t := 0; t < m.numTasks; t++ {
		for i := m.holderStart[t]; i < m.holderStart[t+1] && m.holderLag[i] <= m.acceptable; i++ {
			count[m.holderClient[i]+1]++
		}
	}
	for c := int32(0); c < n; c++ {
		count[c+1] += count[c]
	}
	flat := make([]int32, count[n])
	caught := make([][]int32, n)
	for c := range caught {
		caught[c] = flat[count[c]:count[c]:count[c+1]]
	}
	for t := 0; t < m.numTasks; t++ {
		for i := m.holderStart[t]; i < m.holderStart[t+1] && m.holderLag[i] <= m.acceptable; i++ {
			c := m.holderClient[i]
			caught[c] = append(caught[c], int32(t))
		}
	}
	order := make([]int32, n)
	for c := range order {
		order[c] = int32(c)
	}
	for moved := true; moved; {
		moved = false
		if !pl.unbalanced() {
			return
		}
		sort.Slice(order, func(i, j int) bool {
			a, b := order[i], order[j]
			if lessLoad(pl.actives[a], m.capa[a], pl.actives[b], m.capa[b]) {
				return true
			}
			return !lessLoad(pl.actives[b], m.capa[b], pl.actives[a], m.capa[a]) && a < b
		})
		for _, dst := range order {
			for {
				best, bestLag := int32(-1), int64(0)
				var bestSrc int32
				for _, t := range caught[dst] {
					src := pl.active[t]
					if !pl.worthMoving(src, dst) {
						continue
					}
					lag := m.lagOf(int(t), dst)
					if best < 0 || lessLoad(pl.actives[bestSrc], m.capa[bestSrc], pl.actives[src], m.capa[src]) ||
						(!lessLoad(pl.actives[src], m.capa[src], pl.actives[bestSrc], m.capa[bestSrc]) && lag < bestLag) {
						best, bestLag, bestSrc = t, lag, src
					}
				}
				if best < 0 {
					break
				}
				pl.moveActive(int(best), dst)
				moved = true
			}
		}
	}
	// No single move left: chains of moves between caught-up clients
	// (chains.go, whose one-hop chains are single moves again) may still
	// improve the balance; only without one does a move wait for a warmup.
	var chains chainSearch
	for pl.balanceChain(&chains) {
	}
}

// unbalanced reports whether some active move would improve the balance.
func (pl *placement) unbalanced() bool {
	m := pl.m
	hi := int32(0)
	for c := int32(1); c < int32(len(m.ids)); c++ {
		if lessLoad(pl.actives[hi], m.capa[hi], pl.actives[c], m.capa[c]) {
			hi = c
		}
	}
	// The lightest client is the best receiver only with equal capacities;
	// check every receiver against the heaviest.
	for c := int32(0); c < int32(len(m.ids)); c++ {
		if pl.worthMoving(hi, c) {
			return true
		}
	}
	return false
}
