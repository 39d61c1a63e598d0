package assignor

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rackstream/rackstream/tags"
)

// unknownLag ranks a client that had a task in the previous plan but reports
// no lag for it: it may hold some state, so it beats a client with none.
const (
	unknownLag = math.MaxInt64 - 1
	noState    = math.MaxInt64
)

// model is a validated Input in the shape the placement works on: clients
// sorted by id and named by index, tag values interned per rack-aware key,
// clients grouped into classes of identical rack-aware tag tuples, and for
// every task the clients holding its state.
type model struct {
	in         *Input
	numTasks   int
	standbys   int // num.standby.replicas
	acceptable int64
	maxWarmups int

	ids  []string
	tags []map[string]string
	capa []int64 // capacity, >= 1
	// equalCapacity is set when every client has the same capacity.
	equalCapacity bool
	inIdx         []int // index of each client in in.Clients
	byID          map[string]int32
	dims          []string   // rack-aware keys in priority order
	values        [][]string // values[d]: the distinct values of dims[d], sorted
	val           [][]int32  // val[d][c]: client c's value index of dims[d]

	class     []int32   // class of each client
	classes   [][]int32 // members of each class, ascending
	classVals [][]int32 // classVals[k][d]: class k's value of dims[d]

	// holders of task t are holderClient[holderStart[t]:holderStart[t+1]],
	// with their lag (unknownLag when the client held the task in the
	// previous plan but reported no lag), sorted by lag then client.
	holderStart  []int32
	holderClient []int32
	holderLag    []int64

	prevActive []int32 // per task: the live previous active, or -1
	prevWarmup []int32 // per task: one live previous warmup (smallest id), or -1

	racks *rackModel // nil without Input.RackAwareness
}

// lagOf returns client c's lag for task t: noState when it holds nothing.
func (m *model) lagOf(t int, c int32) int64 {
	for i := m.holderStart[t]; i < m.holderStart[t+1]; i++ {
		if m.holderClient[i] == c {
			return m.holderLag[i]
		}
	}
	return noState
}

// newModel validates in and builds its model. Errors are *FieldError.
func newModel(in *Input) (*model, error) {
	if in.Tasks < 0 || in.Tasks > MaxTasks {
		return nil, fieldErr("tasks", "must be between 0 and %d, got %d", MaxTasks, in.Tasks)
	}
	if err := in.Settings.Validate(); err != nil {
		return nil, err
	}
	if in.Tasks > 0 && len(in.Clients) == 0 {
		return nil, fieldErr("clients", "no live client to place %d tasks on", in.Tasks)
	}

	n := len(in.Clients)
	m := &model{
		in:         in,
		numTasks:   in.Tasks,
		standbys:   in.NumStandbyReplicas,
		acceptable: in.AcceptableRecoveryLag,
		maxWarmups: in.MaxWarmupReplicas,
		ids:        make([]string, n),
		tags:       make([]map[string]string, n),
		capa:       make([]int64, n),
		inIdx:      make([]int, n),
		byID:       make(map[string]int32, n),
		dims:       in.RackAwareAssignmentTags,
	}
	for i := range in.Clients {
		m.inIdx[i] = i
	}
	sort.Slice(m.inIdx, func(a, b int) bool { return in.Clients[m.inIdx[a]].ID < in.Clients[m.inIdx[b]].ID })
	for c, i := range m.inIdx {
		cl := &in.Clients[i]
		f := "clients[" + strconv.Itoa(i) + "]"
		if cl.ID == "" {
			return nil, fieldErr(f+".id", "required")
		}
		if c > 0 && m.ids[c-1] == cl.ID {
			return nil, fieldErr(f+".id", "duplicate id %q (also clients[%d])", cl.ID, m.inIdx[c-1])
		}
		if cl.Capacity < 0 {
			return nil, fieldErr(f+".capacity", "must be at least 0 (0 means 1), got %d", cl.Capacity)
		}
		if errs := tags.CheckTags(sortedTags(cl.Tags)); errs != nil {
			return nil, fieldErr(f+".tags", "%s", errs.Error())
		}
		for _, k := range m.dims {
			if _, ok := cl.Tags[k]; !ok {
				return nil, fieldErr(f+".tags", "client %q lacks key %q named in rack_aware_assignment_tags", cl.ID, k)
			}
		}
		m.ids[c] = cl.ID
		m.tags[c] = cl.Tags
		m.capa[c] = max(int64(cl.Capacity), 1)
		m.byID[cl.ID] = int32(c)
	}

	m.equalCapacity = true
	for _, c := range m.capa {
		m.equalCapacity = m.equalCapacity && c == m.capa[0]
	}
	m.internTags()
	if err := m.indexState(); err != nil {
		return nil, err
	}
	racks, err := newRackModel(m)
	if err != nil {
		return nil, err
	}
	m.racks = racks
	return m, nil
}

// internTags numbers the values of every rack-aware key and groups clients
// into classes of identical value tuples, numbered in order of their
// smallest member.
func (m *model) internTags() {
	n := len(m.ids)
	m.values = make([][]string, len(m.dims))
	m.val = make([][]int32, len(m.dims))
	for d, k := range m.dims {
		seen := make(map[string]struct{})
		for c := 0; c < n; c++ {
			seen[m.tags[c][k]] = struct{}{}
		}
		vs := make([]string, 0, len(seen))
		for v := range seen {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		idx := make(map[string]int32, len(vs))
		for i, v := range vs {
			idx[v] = int32(i)
		}
		m.values[d] = vs
		m.val[d] = make([]int32, n)
		for c := 0; c < n; c++ {
			m.val[d][c] = idx[m.tags[c][k]]
		}
	}
	m.class = make([]int32, n)
	key := make([]byte, 0, 4*len(m.dims))
	byTuple := make(map[string]int32)
	for c := 0; c < n; c++ {
		key = key[:0]
		for d := range m.dims {
			v := m.val[d][c]
			key = append(key, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
		}
		k, ok := byTuple[string(key)]
		if !ok {
			k = int32(len(m.classes))
			byTuple[string(key)] = k
			m.classes = append(m.classes, nil)
			tuple := make([]int32, len(m.dims))
			for d := range m.dims {
				tuple[d] = m.val[d][c]
			}
			m.classVals = append(m.classVals, tuple)
		}
		m.class[c] = k
		m.classes[k] = append(m.classes[k], int32(c))
	}
}

// indexState validates the previous roles and lags and builds the holders
// of every task.
func (m *model) indexState() error {
	T := m.numTasks
	type holding struct {
		task   int32
		client int32
		lag    int64
	}
	size := 0
	for _, cl := range m.in.Clients {
		size += len(cl.Lags) + len(cl.PreviousActive) + len(cl.PreviousStandby) + len(cl.PreviousWarmup)
	}
	hs := make([]holding, 0, size)
	m.prevActive = make([]int32, T)
	m.prevWarmup = make([]int32, T)
	for t := range m.prevActive {
		m.prevActive[t] = -1
		m.prevWarmup[t] = -1
	}
	// stamp[t] is 1 + the client whose lists named t last, role[t] the list:
	// a task named twice for one client is an error.
	stamp := make([]int32, T)
	role := make([]uint8, T)
	roleNames := [...]string{"previous_active", "previous_standby", "previous_warmup"}
	for c, i := range m.inIdx {
		cl := &m.in.Clients[i]
		for r, tasks := range [...][]int{cl.PreviousActive, cl.PreviousStandby, cl.PreviousWarmup} {
			for j, t := range tasks {
				if t < 0 || t >= T {
					return fieldErr(fmt.Sprintf("clients[%d].%s[%d]", i, roleNames[r], j), "task %d out of range [0, %d)", t, T)
				}
				if stamp[t] == int32(c)+1 {
					return fieldErr(fmt.Sprintf("clients[%d].%s[%d]", i, roleNames[r], j),
						"task %d listed twice for client %q (also in %s)", t, cl.ID, roleNames[role[t]])
				}
				stamp[t], role[t] = int32(c)+1, uint8(r)
				if _, ok := cl.Lags[t]; !ok {
					hs = append(hs, holding{int32(t), int32(c), unknownLag})
				}
			}
		}
		bad, found := 0, false // report the smallest bad task: map order is random
		for t, lag := range cl.Lags {
			if t < 0 || t >= T || lag < 0 {
				if !found || t < bad {
					bad, found = t, true
				}
				continue
			}
			hs = append(hs, holding{int32(t), int32(c), lag})
		}
		if found {
			f := fmt.Sprintf("clients[%d].lags[\"%d\"]", i, bad)
			if bad < 0 || bad >= T {
				return fieldErr(f, "task %d out of range [0, %d)", bad, T)
			}
			return fieldErr(f, "lag must be at least 0, got %d", cl.Lags[bad])
		}
		for _, t := range cl.PreviousActive {
			// Two live clients claiming one task (a zombie, a hand-off in
			// flight): the least lag keeps it, then the smallest id.
			if p := m.prevActive[t]; p < 0 || m.lagOfRaw(m.in, int32(c), t) < m.lagOfRaw(m.in, p, t) {
				m.prevActive[t] = int32(c)
			}
		}
		for _, t := range cl.PreviousWarmup {
			if m.prevWarmup[t] < 0 {
				m.prevWarmup[t] = int32(c)
			}
		}
	}
	// Bucket by task, then order each (short) bucket by lag and client.
	m.holderStart = make([]int32, T+1)
	for _, h := range hs {
		m.holderStart[h.task+1]++
	}
	for t := 0; t < T; t++ {
		m.holderStart[t+1] += m.holderStart[t]
	}
	m.holderClient = make([]int32, len(hs))
	m.holderLag = make([]int64, len(hs))
	next := stamp // reuse: the next free slot of each task's bucket
	copy(next, m.holderStart[:T])
	for _, h := range hs {
		at := next[h.task]
		next[h.task]++
		m.holderClient[at], m.holderLag[at] = h.client, h.lag
	}
	for t := 0; t < T; t++ {
		cs, ls := m.holderClient[m.holderStart[t]:m.holderStart[t+1]], m.holderLag[m.holderStart[t]:m.holderStart[t+1]]
		for i := 1; i < len(cs); i++ {
			for j := i; j > 0 && (ls[j] < ls[j-1] || ls[j] == ls[j-1] && cs[j] < cs[j-1]); j-- {
				cs[j], cs[j-1] = cs[j-1], cs[j]
				ls[j], ls[j-1] = ls[j-1], ls[j]
			}
		}
	}
	return nil
}

// lagOfRaw reads client c's lag for task t from the input, before the
// holder index exists.
func (m *model) lagOfRaw(in *Input, c int32, t int) int64 {
	if c < 0 {
		return noState
	}
	if lag, ok := in.Clients[m.inIdx[c]].Lags[t]; ok {
		return lag
	}
	return unknownLag
}

// sortedTags returns a client's tags in key order, so that the first
// violation reported is the same on every run.
func sortedTags(m map[string]string) []tags.Tag {
	ts := make([]tags.Tag, 0, len(m))
	for k, v := range m {
		ts = append(ts, tags.Tag{Key: k, Value: v})
	}
	slices.SortFunc(ts, func(a, b tags.Tag) int { return strings.Compare(a.Key, b.Key) })
	return ts
}
