package assignor

// Bounds of rackStandbys' search for one standby: partners looked at per
// cheaper group, partners tried as the middle of a three-way rotation, and
// third standbys looked at per group for each.
const (
	standbyScan   = 32
	rotationMids  = 4
	rotationThird = 16
)

// rackStandbys lowers the cost of the standbys (cross-zone changelog
// fetches, scaled by traffic_cost, plus non_overlap_cost for a standby on a
// client holding none of the task's state) by rotating standbys of two or
// three tasks between their clients: each goes to the next one's client, so
// counts per client do not change; or by moving one standby from a most
// loaded client to a least loaded one that stays no heavier than the first
// was, which keeps every load within the evenness rule. A change is made only when it lowers
// the sum, no task's spread gets worse (so each stays optimal), no task
// touches a partition without racks nor leaves or reaches a client without
// one, and afterwards no standby of a task moved could go to a lighter
// eligible client (the rule that bounds standby stickiness, see rebalance).
// Three-way rotations matter: with three zones and a standby per task, the
// tasks active in one zone often all keep their standby in one other zone.
//
// Two passes over the standbys; each looks at up to standbyScan partners per
// cheaper group (their clients also being the candidates of a move), and for up to rotationMids of them at rotationThird third
// standbys per group: O(standbys x groups^2 x rotationMids x rotationThird)
// checks of a task's spread.
func (sp *standbyPlacer) rackStandbys() {
	pl, m := sp.pl, sp.pl.m
	rm := m.racks
	if !pl.rackAware || sp.slots == 0 {
		return
	}
	r := &rotator{sp: sp, lists: make([][]int32, rm.G), pos: make([]int32, len(pl.standby)),
		sc: spreadScratch{now: make([]int, len(m.dims)), after: make([]int, len(m.dims))}}
	for s, c := range pl.standby {
		if c >= 0 {
			g := rm.grp[c]
			r.pos[s] = int32(len(r.lists[g]))
			r.lists[g] = append(r.lists[g], int32(s))
		}
	}
	r.loads()
	for pass := 0; pass < 2; pass++ {
		any := false
		for s := range pl.standby {
			if r.improve(int32(s)) {
				any = true
			}
		}
		if !any {
			return
		}
	}
}

// rotator is the state of rackStandbys: standby slots (t*k+j) by the group
// of their client, and each slot's index there.
type rotator struct {
	sp    *standbyPlacer
	lists [][]int32
	pos   []int32
	sc    spreadScratch
	// hi is a most loaded client (replicas per unit of capacity), light
	// the three clients that are lightest after taking one more replica.
	hi    int32
	light [3]int32
}

// loads finds hi and light.
func (r *rotator) loads() {
	pl, m := r.sp.pl, r.sp.pl.m
	after := func(a, b int32) bool { // a lighter than b after one more each
		return lessLoad(pl.replicas[a]+1, m.capa[a], pl.replicas[b]+1, m.capa[b])
	}
	r.hi, r.light = 0, [3]int32{-1, -1, -1}
	for c := int32(0); c < int32(len(m.ids)); c++ {
		if lessLoad(pl.replicas[r.hi], m.capa[r.hi], pl.replicas[c], m.capa[c]) {
			r.hi = c
		}
		x := c
		for i := range r.light {
			if r.light[i] < 0 {
				r.light[i] = x
				break
			}
			if after(x, r.light[i]) {
				r.light[i], x = x, r.light[i]
			}
		}
	}
}

// movable reports whether one standby may move from client c to client v
// with every load kept within the evenness rule: c is a most loaded client,
// and v after taking it is no heavier than c was, nor than any other client
// would be after taking one more.
func (r *rotator) movable(c, v int32) bool {
	pl, m := r.sp.pl, r.sp.pl.m
	rc, rv := pl.replicas[c], pl.replicas[v]+1
	if lessLoad(rc, m.capa[c], pl.replicas[r.hi], m.capa[r.hi]) || lessLoad(rc, m.capa[c], rv, m.capa[v]) {
		return false
	}
	for _, x := range r.light {
		if x >= 0 && x != c && x != v {
			return !lessLoad(pl.replicas[x]+1, m.capa[x], rv, m.capa[v])
		}
	}
	return true
}

// cost is a standby of task t on client c.
func (r *rotator) cost(t int, c int32) int64 {
	m := r.sp.pl.m
	rm := m.racks
	x := rm.sbCost[t*rm.G+int(rm.grp[c])]
	if m.lagOf(t, c) == noState {
		x += rm.move
	}
	return x
}

// fits reports whether slot s may go to client c: its task is not pinned,
// c has a rack and holds no replica of the task, and the task's spread
// does not get worse.
func (r *rotator) fits(s int32, c int32) bool {
	pl := r.sp.pl
	rm := pl.m.racks
	t, j := int(s)/pl.k, int(s)%pl.k
	return !rm.pinned[t] && rm.grp[c] != rm.unknownGroup && !pl.holdsReplica(t, c) && r.sp.spreadKept(t, j, c, &r.sc)
}

// improve applies the best rotation found for slot s; it reports whether it
// made one.
func (r *rotator) improve(s int32) bool {
	pl := r.sp.pl
	rm := pl.m.racks
	k := pl.k
	t, c := int(s)/k, pl.standby[s]
	if c < 0 || rm.pinned[t] || rm.grp[c] == rm.unknownGroup {
		return false
	}
	here := r.cost(t, c)
	var best [3]int32
	bestN, bestGain, moveTo := 0, int64(0), int32(-1)
	for g := int32(0); g < int32(rm.G); g++ {
		L := r.lists[g]
		if g == rm.grp[c] || g == rm.unknownGroup || len(L) == 0 || rm.sbCost[t*rm.G+int(g)] >= here {
			continue
		}
		mids := 0
		off := (t*31 + int(s)%k*17) % len(L)
		for i := 0; i < min(len(L), standbyScan); i++ {
			s2 := L[(off+i)%len(L)]
			u, v := int(s2)/k, pl.standby[s2]
			if u == t || !r.fits(s, v) {
				continue
			}
			if gain := here - r.cost(t, v); gain > bestGain && r.movable(c, v) {
				best, bestN, bestGain, moveTo = [3]int32{s}, 1, gain, v
			}
			base := here + r.cost(u, v) - r.cost(t, v)
			if gain := base - r.cost(u, c); gain > bestGain && r.fits(s2, c) {
				best, bestN, bestGain = [3]int32{s, s2}, 2, gain
			}
			if mids++; mids > rotationMids {
				continue
			}
			// Three-way: u goes to a third slot's client w, whose task goes to c.
			for g3 := int32(0); g3 < int32(rm.G); g3++ {
				L3 := r.lists[g3]
				if g3 == rm.unknownGroup || len(L3) == 0 {
					continue
				}
				off3 := (u*31 + t*7) % len(L3)
				for i3 := 0; i3 < min(len(L3), rotationThird); i3++ {
					s3 := L3[(off3+i3)%len(L3)]
					x, w := int(s3)/k, pl.standby[s3]
					if x == t || x == u || w == c || w == v {
						continue
					}
					gain := base + r.cost(x, w) - r.cost(u, w) - r.cost(x, c)
					if gain > bestGain && r.fits(s2, w) && r.fits(s3, c) {
						best, bestN, bestGain = [3]int32{s, s2, s3}, 3, gain
					}
				}
			}
		}
	}
	switch bestN {
	case 0:
		return false
	case 1:
		return r.move(s, moveTo)
	}
	return r.rotate(best[:bestN])
}

// move moves slot s to client v, unless that leaves a standby load uneven;
// it reports whether it did.
func (r *rotator) move(s, v int32) bool {
	sp, pl := r.sp, r.sp.pl
	rm := pl.m.racks
	c := pl.standby[s]
	shift := func(from, to int32) {
		pl.standby[s] = to
		pl.standbyN[from]--
		pl.replicas[from]--
		pl.standbyN[to]++
		pl.replicas[to]++
		sp.heaps.raised(to)
		sp.heaps.lowered(from)
	}
	shift(c, v)
	if !sp.evenAfterMove(int(s) / pl.k) {
		shift(v, c)
		return false
	}
	// s leaves c's group list (the last entry takes its place) for v's.
	gc, gv := rm.grp[c], rm.grp[v]
	l := r.lists[gc]
	last := l[len(l)-1]
	l[r.pos[s]] = last
	r.pos[last] = r.pos[s]
	r.lists[gc] = l[:len(l)-1]
	r.pos[s] = int32(len(r.lists[gv]))
	r.lists[gv] = append(r.lists[gv], s)
	r.loads()
	return true
}

// rotate moves each slot of ss to the client of the next (the last to the
// first's), unless that leaves a standby load uneven; it reports whether it
// did.
func (r *rotator) rotate(ss []int32) bool {
	pl := r.sp.pl
	rm := pl.m.racks
	var was [3]int32
	for i, s := range ss {
		was[i] = pl.standby[s]
	}
	L := len(ss)
	for i, s := range ss {
		pl.standby[s] = was[(i+1)%L]
	}
	for _, s := range ss {
		if !r.sp.evenAfterMove(int(s) / pl.k) {
			for i, s := range ss {
				pl.standby[s] = was[i]
			}
			return false
		}
	}
	// Slot i takes the list entry of slot i+1, whose client it took.
	var at [3]int32
	for i := range ss {
		at[i] = r.pos[ss[(i+1)%L]]
	}
	for i, s := range ss {
		r.lists[rm.grp[was[(i+1)%L]]][at[i]] = s
		r.pos[s] = at[i]
	}
	return true
}

// spreadScratch is spreadKept's scratch.
type spreadScratch struct {
	reps       []int32
	now, after []int
}

// spreadKept reports whether task t's spread with client v in standby slot
// j is at least its spread now.
func (sp *standbyPlacer) spreadKept(t, j int, v int32, sc *spreadScratch) bool {
	pl, m := sp.pl, sp.pl.m
	sc.reps = pl.replicasOf(t, sc.reps[:0])
	m.spread(sc.reps, sc.now)
	// reps holds the active, then the non-empty standbys in slot order.
	at := 1
	for i := 0; i < j; i++ {
		if pl.standby[t*pl.k+i] >= 0 {
			at++
		}
	}
	sc.reps[at] = v
	m.spread(sc.reps, sc.after)
	return CompareSpread(sc.after, sc.now) >= 0
}

// evenAfterMove reports whether no standby slot of task t has an eligible
// client lighter than its holder would be with it (the move rebalance
// makes).
func (sp *standbyPlacer) evenAfterMove(t int) bool {
	pl, m := sp.pl, sp.pl.m
	for j := 0; j < sp.slots; j++ {
		c := pl.standby[t*pl.k+j]
		if c < 0 {
			continue
		}
		al := sp.allowedFor(t, sp.slots, j)
		sp.excl = append(sp.excl, c)
		if r := sp.receiver(al); r >= 0 && lessLoad(pl.replicas[r]+1, m.capa[r], pl.replicas[c], m.capa[c]) {
			return false
		}
	}
	return true
}
