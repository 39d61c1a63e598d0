package assignor

import (
	"fmt"
	"strconv"
)

// placement is a plan under construction (or a plan read back for Measure)
// over a model: replicas by client index, loads by client.
type placement struct {
	m *model
	k int // standby slots per task

	active  []int32 // per task
	standby []int32 // task t's standbys are standby[t*k : t*k+k], -1 = none
	warmup  []int32 // per task: one warmup client or -1
	probing bool
	// rackAware runs the rack-aware passes (a min_traffic strategy).
	rackAware bool

	actives  []int64 // per client
	replicas []int64 // per client: actives + standbys + warmups
	standbyN []int64 // per client: standbys
	warmupN  []int64 // per client: warmups

	// Slabs for the standby placer's cached allowed sets.
	sets      []allowedSet
	slab64    []uint64
	slab32    []int32
	scratch32 []int32
}

func newPlacement(m *model) *placement {
	// Standby slots per task: never more than the other clients, however
	// large num.standby.replicas is.
	n, T := len(m.ids), m.numTasks
	k := min(m.standbys, max(n-1, 0))
	pl := &placement{
		m:        m,
		k:        k,
		active:   make([]int32, T),
		standby:  make([]int32, T*k),
		warmup:   make([]int32, T),
		actives:  make([]int64, n),
		replicas: make([]int64, n),
		standbyN: make([]int64, n),
		warmupN:  make([]int64, n),
	}
	for i := range pl.active {
		pl.active[i] = -1
		pl.warmup[i] = -1
	}
	for i := range pl.standby {
		pl.standby[i] = -1
	}
	return pl
}

// placementOf reads p's task placements back over m, checking them.
func placementOf(m *model, p *Plan) (*placement, error) {
	k := min(m.standbys, max(len(m.ids)-1, 0))
	for _, tp := range p.Tasks {
		k = max(k, len(tp.Standby))
	}
	pl := newPlacement(m)
	pl.k = k
	pl.standby = make([]int32, m.numTasks*k)
	for i := range pl.standby {
		pl.standby[i] = -1
	}
	for i, tp := range p.Tasks {
		f := "tasks[" + strconv.Itoa(i) + "]"
		if tp.Task < 0 || tp.Task >= m.numTasks {
			return nil, fieldErr(f+".task", "task %d out of range [0, %d)", tp.Task, m.numTasks)
		}
		if pl.active[tp.Task] >= 0 {
			return nil, fieldErr(f+".task", "task %d placed twice", tp.Task)
		}
		cs, err := m.replicaIndexes(tp, f)
		if err != nil {
			return nil, err
		}
		pl.setActive(tp.Task, cs[0])
		for j, c := range cs[1:] {
			pl.standby[tp.Task*k+j] = c
			pl.standbyN[c]++
			pl.replicas[c]++
		}
		for j, id := range tp.Warmup {
			c, ok := m.byID[id]
			if !ok {
				return nil, fieldErr(fmt.Sprintf("%s.warmup[%d]", f, j), "unknown client %q", id)
			}
			if j == 0 {
				pl.warmup[tp.Task] = c
			}
			pl.warmupN[c]++
			pl.replicas[c]++
		}
	}
	for t, c := range pl.active {
		if c < 0 {
			return nil, fieldErr("tasks", "task %d has no placement", t)
		}
	}
	return pl, nil
}

func (pl *placement) setActive(t int, c int32) {
	pl.active[t] = c
	pl.actives[c]++
	pl.replicas[c]++
}

func (pl *placement) moveActive(t int, to int32) {
	from := pl.active[t]
	pl.actives[from]--
	pl.replicas[from]--
	pl.setActive(t, to)
}

// lessLoad reports whether a/capA < b/capB.
func lessLoad(a, capA, b, capB int64) bool { return a*capB < b*capA }

// plan renders the placement as a Plan: tasks in order, clients by id,
// lists sorted. Few allocations: the lists are windows of shared arrays.
func (pl *placement) plan() *Plan {
	m := pl.m
	T, n := m.numTasks, len(m.ids)
	p := &Plan{
		Tasks:                  make([]TaskPlacement, T),
		Clients:                make([]ClientPlacement, n),
		ProbingRebalanceNeeded: pl.probing,
	}
	var nStandby, nWarmup int
	for _, c := range pl.standby {
		if c >= 0 {
			nStandby++
		}
	}
	for _, c := range pl.warmup {
		if c >= 0 {
			nWarmup++
		}
	}
	ids := make([]string, nStandby+nWarmup)
	tasks := make([]int, T+nStandby+nWarmup)
	// Per-client windows into tasks, filled in task order so they come sorted.
	aAt, sAt, wAt := make([]int, n), make([]int, n), make([]int, n)
	at := 0
	for c := 0; c < n; c++ {
		aAt[c] = at
		at += int(pl.actives[c])
		sAt[c] = at
		at += int(pl.standbyN[c])
		wAt[c] = at
		at += int(pl.warmupN[c])
	}
	for c := 0; c < n; c++ {
		cp := &p.Clients[c]
		cp.ID, cp.Tags = m.ids[c], m.tags[c]
		cp.Active = tasks[aAt[c]:aAt[c]:sAt[c]]
		cp.Standby = tasks[sAt[c]:sAt[c]:wAt[c]]
		cp.Warmup = tasks[wAt[c] : wAt[c] : wAt[c]+int(pl.warmupN[c])]
	}
	at = 0
	for t := 0; t < T; t++ {
		tp := &p.Tasks[t]
		tp.Task = t
		a := pl.active[t]
		tp.Active = m.ids[a]
		p.Clients[a].Active = append(p.Clients[a].Active, t)
		start := at
		// Client indexes are in id order: sorting indexes sorts ids.
		sb := pl.standby[t*pl.k : t*pl.k+pl.k]
		sortInt32(sb)
		for _, c := range sb {
			if c >= 0 {
				ids[at] = m.ids[c]
				at++
				p.Clients[c].Standby = append(p.Clients[c].Standby, t)
			}
		}
		tp.Standby = ids[start:at:at]
		start = at
		if w := pl.warmup[t]; w >= 0 {
			ids[at] = m.ids[w]
			at++
			p.Clients[w].Warmup = append(p.Clients[w].Warmup, t)
		}
		tp.Warmup = ids[start:at:at]
	}
	p.Quality = pl.quality()
	if m.racks != nil {
		p.CrossZone = pl.crossZone()
	}
	return p
}

// sortInt32 sorts a short slice with -1 (none) last.
func sortInt32(s []int32) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && less32(s[j], s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func less32(a, b int32) bool {
	if a < 0 {
		return false
	}
	return b < 0 || a < b
}

// quality measures the placement (see Quality).
func (pl *placement) quality() Quality {
	m := pl.m
	T, n, D := m.numTasks, len(m.ids), len(m.dims)
	q := Quality{Dimensions: make([]DimensionQuality, D)}
	reps := make([]int32, 0, 1+pl.k)
	spread := make([]int, D)
	for d, key := range m.dims {
		q.Dimensions[d] = DimensionQuality{Tag: key, Values: len(m.values[d])}
	}
	for t := 0; t < T; t++ {
		reps = pl.replicasOf(t, reps[:0])
		q.StandbyShortfall += max(m.standbys-(len(reps)-1), 0)
		m.spread(reps, spread)
		for d := range m.dims {
			if spread[d] < min(len(reps), len(m.values[d])) {
				q.Dimensions[d].TasksRepeating++
			}
		}
	}
	if n > 0 {
		a0, r0 := pl.actives[0], pl.actives[0]+pl.standbyN[0]
		q.ActiveLoad = LoadRange{float64(a0) / float64(m.capa[0]), float64(a0) / float64(m.capa[0])}
		q.ReplicaLoad = LoadRange{float64(r0) / float64(m.capa[0]), float64(r0) / float64(m.capa[0])}
		for c := 1; c < n; c++ {
			a := float64(pl.actives[c]) / float64(m.capa[c])
			r := float64(pl.actives[c]+pl.standbyN[c]) / float64(m.capa[c])
			q.ActiveLoad.Min, q.ActiveLoad.Max = min(q.ActiveLoad.Min, a), max(q.ActiveLoad.Max, a)
			q.ReplicaLoad.Min, q.ReplicaLoad.Max = min(q.ReplicaLoad.Min, r), max(q.ReplicaLoad.Max, r)
		}
	}
	q.Exposure = pl.exposure()
	return q
}

// replicasOf appends task t's active and standbys to dst.
func (pl *placement) replicasOf(t int, dst []int32) []int32 {
	dst = append(dst, pl.active[t])
	for _, c := range pl.standby[t*pl.k : t*pl.k+pl.k] {
		if c >= 0 {
			dst = append(dst, c)
		}
	}
	return dst
}

// exposureKeys returns the rack-aware keys in priority order, then every
// other key some client carries, by name.
func (m *model) exposureKeys() []string {
	keys := append([]string(nil), m.dims...)
	other := make(map[string]struct{})
	for _, tg := range m.tags {
		for k := range tg {
			other[k] = struct{}{}
		}
	}
	for _, k := range m.dims {
		delete(other, k)
	}
	return append(keys, sortedKeys(other)...)
}

// exposure lists, per tag key and value, the tasks all of whose replicas
// carry that value.
func (pl *placement) exposure() []Exposure {
	m := pl.m
	keys := m.exposureKeys()
	out := make([]Exposure, 0)
	reps := make([]int32, 0, 1+pl.k)
	for _, key := range keys {
		vals := make(map[string]struct{})
		for _, tg := range m.tags {
			if v, ok := tg[key]; ok {
				vals[v] = struct{}{}
			}
		}
		byVal := make(map[string][]int, len(vals))
		for t := 0; t < m.numTasks; t++ {
			reps = pl.replicasOf(t, reps[:0])
			v, ok := m.tags[reps[0]][key]
			if !ok {
				continue
			}
			all := true
			for _, c := range reps[1:] {
				if w, ok := m.tags[c][key]; !ok || w != v {
					all = false
					break
				}
			}
			if all {
				byVal[v] = append(byVal[v], t)
			}
		}
		for _, v := range sortedKeys(vals) {
			ts := byVal[v]
			if ts == nil {
				ts = []int{}
			}
			out = append(out, Exposure{Tag: key, Value: v, TasksWithoutReplica: ts})
		}
	}
	return out
}
