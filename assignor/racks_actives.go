package assignor

import (
	"cmp"
	"slices"
)

// Task kinds for the rack-aware pass over actives.
const (
	kindFixed      = iota // pinned, or on a client without a rack
	kindRestricted        // some client holds its state: caught-up clients only
	kindFree              // no client holds any of its state: any client
)

// maxCells bounds the cells of the exact pass over free tasks (one heap per
// pair of cells); past it only swaps run.
const maxCells = 32

// rackActives lowers the cost of the actives (cross-zone bytes, scaled by
// traffic_cost, plus non_overlap_cost per task off its previous client)
// without changing any client's active count, so the balance stays as
// balanceActives left it. A task may only go to a client with a rack, whose
// class reaches a standby spread at least as good as its current client's
// (every task keeps its optimal spread, placed after), and:
//   - a task touching a partition without racks, or on a client without a
//     rack, stays;
//   - a task some client holds state of goes only to its previous client, a
//     client caught up on it, or back to where balanceActives put it;
//   - a task no client holds any state of may go anywhere.
//
// Two passes alternate until neither improves (at most four rounds).
//
// Swaps: each restricted task trades places with the task, on one of its
// allowed clients, whose swap saves the most, when both may go and the sum
// falls; partners are looked at best bound first, at most swapScan per
// client: O(tasks x groups x log tasks + sum over tasks of allowed clients x
// swapScan) per pass.
//
// Cycles: a free task's cost depends only on its client's cell (rack group
// and spread rank), so with the rest fixed the free tasks form a
// transportation problem over cells, solved exactly by cancelling negative
// cycles found by Bellman-Ford over the cells, each edge the best task of a
// heap: O(moves x (cells^3 + cells x log tasks)).
func (pl *placement) rackActives() {
	m := pl.m
	if !pl.rackAware || m.numTasks == 0 || len(m.ids) < 2 {
		return
	}
	ro := newRackOpt(pl)
	for round := 0; round < 4; round++ {
		swapped := ro.swaps()
		cycled := ro.cycles()
		if !swapped && !cycled {
			return
		}
	}
}

// rackOpt is the state of rackActives.
type rackOpt struct {
	pl      *placement
	orig    []int32 // per task: its active before the pass
	kind    []uint8
	minRank []int32 // per task: the least spread rank of a client it may go to
	rank    []int32 // per client: the rank of its class's optimal spread
	ranks   int
	tasksOf [][]int32 // per client: its actives
	pos     []int32   // per task: its index in tasksOf[active]
}

func newRackOpt(pl *placement) *rackOpt {
	m := pl.m
	T, n := m.numTasks, len(m.ids)
	ro := &rackOpt{pl: pl, orig: append([]int32(nil), pl.active...), kind: make([]uint8, T),
		minRank: make([]int32, T), tasksOf: make([][]int32, n), pos: make([]int32, T)}
	ro.rankClients()
	rm := m.racks
	for t := 0; t < T; t++ {
		a := pl.active[t]
		ro.pos[t] = int32(len(ro.tasksOf[a]))
		ro.tasksOf[a] = append(ro.tasksOf[a], int32(t))
		ro.minRank[t] = ro.rank[a]
		switch {
		case rm.pinned[t] || rm.grp[a] == rm.unknownGroup:
			ro.kind[t] = kindFixed
		case m.holderStart[t] < m.holderStart[t+1]:
			ro.kind[t] = kindRestricted
		default:
			ro.kind[t] = kindFree
		}
	}
	return ro
}

// rankClients ranks every client by the optimal standby spread of a task
// whose active it is: equal spreads share a rank, better ones rank higher.
func (ro *rackOpt) rankClients() {
	m := ro.pl.m
	ro.rank = make([]int32, len(m.ids))
	slots := min(ro.pl.k, len(m.ids)-1)
	ro.ranks = 1
	if slots <= 0 || len(m.dims) == 0 {
		return
	}
	s := newSearcher(m)
	opts := make([][]int, len(m.classes))
	var cands []int32
	for q := range m.classes {
		s.reset([]int32{int32(q)})
		cands = s.order(cands, slots)
		opts[q] = append([]int(nil), s.maximise(cands, slots)...)
	}
	// Rank = the number of distinct spreads worse than one's own.
	distinct := make([][]int, 0, 4)
	for _, o := range opts {
		seen := false
		for _, d := range distinct {
			if CompareSpread(d, o) == 0 {
				seen = true
				break
			}
		}
		if !seen {
			distinct = append(distinct, o)
		}
	}
	ro.ranks = len(distinct)
	classRank := make([]int32, len(m.classes))
	for q, o := range opts {
		for _, d := range distinct {
			if CompareSpread(d, o) < 0 {
				classRank[q]++
			}
		}
	}
	for c := range ro.rank {
		ro.rank[c] = classRank[m.class[c]]
	}
}

// cost is task t's active cost on client c.
func (ro *rackOpt) cost(t int, c int32) int64 {
	m := ro.pl.m
	rm := m.racks
	x := rm.actCost[t*rm.G+int(rm.grp[c])]
	if c != m.prevActive[t] {
		x += rm.move
	}
	return x
}

// allowed reports whether task t may be active on client c.
func (ro *rackOpt) allowed(t int, c int32) bool {
	m := ro.pl.m
	if c == ro.orig[t] {
		return true
	}
	if ro.kind[t] == kindFixed || m.racks.grp[c] == m.racks.unknownGroup || ro.rank[c] < ro.minRank[t] {
		return false
	}
	return ro.kind[t] == kindFree || c == m.prevActive[t] || m.lagOf(t, c) <= m.acceptable
}

// swapActives exchanges the clients of tasks t and u.
func (ro *rackOpt) swapActives(t, u int) {
	pl := ro.pl
	a, b := pl.active[t], pl.active[u]
	pl.active[t], pl.active[u] = b, a
	pt, pu := ro.pos[t], ro.pos[u]
	ro.tasksOf[a][pt], ro.tasksOf[b][pu] = int32(u), int32(t)
	ro.pos[t], ro.pos[u] = pu, pt
}

// swapScan bounds the partners one swap looks at on one client.
const swapScan = 64

// partner is a task u on client b with key cost(u, b) - actCost(u, g): an
// upper bound of what u saves by moving to a client of group g.
type partner struct {
	key int64
	u   int32
}

// partners lists, for every client b and group g at b*G+g, the movable
// tasks on b by key, greatest first (smallest task on ties), as of the start
// of a pass of swaps.
func (ro *rackOpt) partners() [][]partner {
	m := ro.pl.m
	rm := m.racks
	G := rm.G
	idx := make([][]partner, len(m.ids)*G)
	flat := make([]partner, 0, m.numTasks*(G-1))
	for b := range m.ids {
		for g := 0; g < G; g++ {
			if int32(g) == rm.unknownGroup {
				continue
			}
			at := len(flat)
			for _, u := range ro.tasksOf[b] {
				if ro.kind[u] != kindFixed {
					flat = append(flat, partner{ro.cost(int(u), int32(b)) - rm.actCost[int(u)*G+g], u})
				}
			}
			l := flat[at:len(flat):len(flat)]
			slices.SortFunc(l, func(x, y partner) int {
				if x.key != y.key {
					return cmp.Compare(y.key, x.key)
				}
				return cmp.Compare(x.u, y.u)
			})
			idx[b*G+g] = l
		}
	}
	return idx
}

// swaps runs one pass of swaps over the restricted tasks; it reports
// whether any was made. Each restricted task t on client a tries each
// client b it may go to, and on b the partners by key, stopping at the
// first whose key cannot beat the best swap so far, or after swapScan.
func (ro *rackOpt) swaps() bool {
	pl, m := ro.pl, ro.pl.m
	G := m.racks.G
	idx := ro.partners()
	any := false
	for t := 0; t < m.numTasks; t++ {
		if ro.kind[t] != kindRestricted {
			continue
		}
		a := pl.active[t]
		ga := int(m.racks.grp[a])
		bestGain, bestU := int64(0), -1
		try := func(b int32) {
			if b < 0 || b == a || !ro.allowed(t, b) {
				return
			}
			d := ro.cost(t, a) - ro.cost(t, b)
			for i, e := range idx[int(b)*G+ga] {
				if i == swapScan || d+e.key <= bestGain {
					return
				}
				u := int(e.u)
				if pl.active[u] != b || !ro.allowed(u, a) {
					continue // moved since the index was built, or may not go to a
				}
				if g := d + ro.cost(u, b) - ro.cost(u, a); g > bestGain {
					bestGain, bestU = g, u
				}
			}
		}
		try(ro.orig[t])
		if p := m.prevActive[t]; p != ro.orig[t] {
			try(p)
		}
		for i := m.holderStart[t]; i < m.holderStart[t+1] && m.holderLag[i] <= m.acceptable; i++ {
			if c := m.holderClient[i]; c != ro.orig[t] && c != m.prevActive[t] {
				try(c)
			}
		}
		if bestU >= 0 {
			ro.swapActives(t, bestU)
			any = true
		}
	}
	return any
}

// cycles moves free tasks between cells along negative cycles until none
// is left; it reports whether any was moved.
func (ro *rackOpt) cycles() bool {
	pl, m := ro.pl, ro.pl.m
	rm := m.racks
	// Cells: (group, rank) pairs that have clients with a rack.
	cellOf := make([]int32, len(m.ids))
	cellIdx := make(map[int32]int32)
	var cellGroup, cellRank []int32
	for c := range m.ids {
		g := rm.grp[c]
		if g == rm.unknownGroup {
			cellOf[c] = -1
			continue
		}
		key := g*int32(ro.ranks) + ro.rank[c]
		i, ok := cellIdx[key]
		if !ok {
			i = int32(len(cellGroup))
			cellIdx[key] = i
			cellGroup = append(cellGroup, g)
			cellRank = append(cellRank, ro.rank[c])
		}
		cellOf[c] = i
	}
	C := len(cellGroup)
	if C < 2 || C > maxCells {
		return false
	}
	heaps := make([]gainHeap, C*C)
	push := func(t int) {
		x := cellOf[pl.active[t]]
		from := rm.actCost[t*rm.G+int(cellGroup[x])]
		for y := 0; y < C; y++ {
			if int32(y) != x && cellRank[y] >= ro.minRank[t] {
				heaps[int(x)*C+y].push(from-rm.actCost[t*rm.G+int(cellGroup[y])], int32(t))
			}
		}
	}
	for t := 0; t < m.numTasks; t++ {
		if ro.kind[t] == kindFree {
			push(t)
		}
	}
	// top returns the best task still in cell x for the edge x -> y.
	top := func(x, y int) (int64, int32, bool) {
		h := &heaps[x*C+y]
		for h.len() > 0 {
			g, t := h.peek()
			if cellOf[pl.active[t]] == int32(x) {
				return g, t, true
			}
			h.pop()
		}
		return 0, 0, false
	}
	dist := make([]int64, C)
	pred := make([]int32, C)
	onCycle := make([]int32, C)
	moved := false
	for {
		for i := range dist {
			dist[i], pred[i] = 0, -1
		}
		last := -1
		for it := 0; it < C; it++ {
			last = -1
			for x := 0; x < C; x++ {
				for y := 0; y < C; y++ {
					if x == y {
						continue
					}
					g, _, ok := top(x, y)
					if ok && dist[x]-g < dist[y] {
						dist[y], pred[y], last = dist[x]-g, int32(x), y
					}
				}
			}
			if last < 0 {
				break
			}
		}
		if last < 0 {
			return moved
		}
		// Walk back into the cycle, then collect it.
		v := int32(last)
		for i := 0; i < C && v >= 0; i++ {
			v = pred[v]
		}
		if v < 0 {
			return moved
		}
		cyc := onCycle[:0]
		for u := v; ; {
			cyc = append(cyc, u)
			if u = pred[u]; u == v {
				break
			}
			if u < 0 || len(cyc) == C {
				return moved
			}
		}
		// cyc runs backwards: pred[cyc[i]] = cyc[i+1], so tasks go from
		// cell cyc[i+1] to cyc[i].
		L := len(cyc)
		ts := make([]int32, L)
		var gain int64
		for i := 0; i < L; i++ {
			from, to := cyc[(i+1)%L], cyc[i]
			g, t, _ := top(int(from), int(to))
			ts[i], gain = t, gain+g
		}
		if gain <= 0 {
			return moved
		}
		// Task ts[i] leaves cell cyc[i+1] for cyc[i], onto the client that
		// the task leaving cyc[i] (ts[i-1]) frees.
		clients := make([]int32, L)
		for i, t := range ts {
			clients[i] = pl.active[t]
		}
		for i, t := range ts {
			dst := clients[(i-1+L)%L]
			ro.place(int(t), dst)
		}
		for _, t := range ts {
			push(int(t))
		}
		moved = true
	}
}

// place puts task t on client c, keeping tasksOf; counts are the caller's
// (a cycle keeps every client's count).
func (ro *rackOpt) place(t int, c int32) {
	pl := ro.pl
	a := pl.active[t]
	// Remove t from a's list: the last entry fills its slot.
	l := ro.tasksOf[a]
	i := ro.pos[t]
	last := l[len(l)-1]
	l[i] = last
	ro.pos[last] = i
	ro.tasksOf[a] = l[:len(l)-1]
	pl.active[t] = c
	ro.pos[t] = int32(len(ro.tasksOf[c]))
	ro.tasksOf[c] = append(ro.tasksOf[c], int32(t))
}

// gainHeap is a max-heap of (gain, task), the smallest task first on equal
// gains.
type gainHeap struct {
	g []int64
	t []int32
}

func (h *gainHeap) len() int             { return len(h.g) }
func (h *gainHeap) peek() (int64, int32) { return h.g[0], h.t[0] }
func (h *gainHeap) before(i, j int) bool {
	return h.g[i] > h.g[j] || h.g[i] == h.g[j] && h.t[i] < h.t[j]
}
func (h *gainHeap) swap(i, j int) { h.g[i], h.g[j] = h.g[j], h.g[i]; h.t[i], h.t[j] = h.t[j], h.t[i] }
func (h *gainHeap) push(g int64, t int32) {
	h.g, h.t = append(h.g, g), append(h.t, t)
	for i := len(h.g) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.before(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *gainHeap) pop() {
	n := len(h.g) - 1
	h.swap(0, n)
	h.g, h.t = h.g[:n], h.t[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && h.before(r, l) {
			j = r
		}
		if !h.before(j, i) {
			return
		}
		h.swap(i, j)
		i = j
	}
}
