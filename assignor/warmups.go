package assignor

import "sort"

// placeWarmups plans the balance moves that balanceActives could not make
// because no caught-up client could take them, directly or along a chain of
// moves (chains.go): the receiver gets a warmup
// replica of a task of an overloaded client (one that holds no replica of
// it yet, preferring the task it already restores, then least lag, then the
// most loaded source, then the smallest task), at most max.warmup.replicas
// in the plan, and the plan asks for a probing rebalance. Once the warmup
// has caught up, the next plan makes the move.
func (pl *placement) placeWarmups() {
	m := pl.m
	n := int32(len(m.ids))
	if n < 2 {
		return
	}
	// Virtual loads: actives as if the planned warmups had become moves.
	load := append([]int64(nil), pl.actives...)
	worth := func(src, dst int32) bool {
		return src != dst && lessLoad(load[dst]+1, m.capa[dst], load[src], m.capa[src])
	}
	var dsts []int32
	for placed := 0; placed < m.maxWarmups; placed++ {
		hi := int32(0)
		for c := int32(1); c < n; c++ {
			if lessLoad(load[hi], m.capa[hi], load[c], m.capa[c]) {
				hi = c
			}
		}
		// Receivers least loaded first (smallest id on ties); the first one
		// with a candidate task gets the warmup.
		dsts = dsts[:0]
		for dst := int32(0); dst < n; dst++ {
			if worth(hi, dst) {
				dsts = append(dsts, dst)
			}
		}
		sort.Slice(dsts, func(i, j int) bool {
			a, b := dsts[i], dsts[j]
			if lessLoad(load[a], m.capa[a], load[b], m.capa[b]) {
				return true
			}
			return !lessLoad(load[b], m.capa[b], load[a], m.capa[a]) && a < b
		})
		bestT, bestDst := -1, int32(-1)
		for _, dst := range dsts {
			if t := pl.warmupCandidate(dst, worth); t >= 0 {
				bestT, bestDst = t, dst
				break
			}
		}
		if bestT < 0 {
			return
		}
		pl.warmup[bestT] = bestDst
		pl.warmupN[bestDst]++
		pl.replicas[bestDst]++
		load[pl.active[bestT]]--
		load[bestDst]++
		pl.probing = true
	}
}

// warmupCandidate picks the task to warm up on dst: among tasks without a
// warmup, whose active is a client dst may relieve, and of which dst holds
// no replica: dst's previous warmup first, then least lag on dst, then the
// most loaded source, then the smallest task. It returns -1 if none.
func (pl *placement) warmupCandidate(dst int32, worth func(src, dst int32) bool) int {
	m := pl.m
	best, bestLag := -1, int64(0)
	var bestSrc int32
	for t := 0; t < m.numTasks; t++ {
		src := pl.active[t]
		if pl.warmup[t] >= 0 || !worth(src, dst) || pl.holdsReplica(t, dst) {
			continue
		}
		lag := m.lagOf(t, dst)
		if m.prevWarmup[t] == dst {
			lag = -1
		}
		better := best < 0 || lag < bestLag ||
			(lag == bestLag && lessLoad(pl.actives[bestSrc], m.capa[bestSrc], pl.actives[src], m.capa[src]))
		if better {
			best, bestLag, bestSrc = t, lag, src
		}
	}
	return best
}

// holdsReplica reports whether c is task t's active or one of its standbys.
func (pl *placement) holdsReplica(t int, c int32) bool {
	if pl.active[t] == c {
		return true
	}
	for _, s := range pl.standby[t*pl.k : t*pl.k+pl.k] {
		if s == c {
			return true
		}
	}
	return false
}
