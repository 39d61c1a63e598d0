package assignor

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
