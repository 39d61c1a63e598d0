package assignor

import (
	"fmt"
	"sort"
)

// Assign computes the placement of in: a pure, deterministic function of its
// input (the order of in.Clients and of their lists does not matter). It
// returns a *FieldError when in is not a valid scenario. in is not modified;
// the plan shares the clients' Tags maps.
func Assign(in Input) (*Plan, error) {
	m, err := newModel(&in)
	if err != nil {
		return nil, err
	}
	return place(m).plan(), nil
}

// Validate reports why Assign would reject in, naming the field at fault
// (a *FieldError), or nil.
func (in *Input) Validate() error {
	_, err := newModel(in)
	return err
}

// Measure computes the quality of the placement p.Tasks for the live clients
// and settings of in (p.Clients and p.Quality are ignored). Every task of in
// must appear once in p.Tasks, and every client p names must be a client of
// in; a client may not hold two replicas of one task.
func Measure(in Input, p *Plan) (Quality, error) {
	m, err := newModel(&in)
	if err != nil {
		return Quality{}, err
	}
	pl, err := placementOf(m, p)
	if err != nil {
		return Quality{}, err
	}
	return pl.quality(), nil
}

// Spread returns the spread of task t's replicas (its active and standbys;
// warmups don't count): for each key of in.RackAwareAssignmentTags in order,
// the number of distinct values among them. Compare spreads with
// CompareSpread.
func Spread(in Input, t TaskPlacement) ([]int, error) {
	m, err := newModel(&in)
	if err != nil {
		return nil, err
	}
	cs, err := m.replicaIndexes(t, "task")
	if err != nil {
		return nil, err
	}
	return m.spread(cs, make([]int, len(m.dims))), nil
}

// CompareSpread compares spreads lexicographically (the first key matters
// most): -1 when a is worse than b, 0 when equal, +1 when better. A missing
// trailing entry counts as 0.
func CompareSpread(a, b []int) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// replicaIndexes resolves a task's active and standbys to client indexes.
func (m *model) replicaIndexes(t TaskPlacement, field string) ([]int32, error) {
	cs := make([]int32, 0, 1+len(t.Standby))
	c, ok := m.byID[t.Active]
	if !ok {
		return nil, fieldErr(field+".active", "unknown client %q", t.Active)
	}
	cs = append(cs, c)
	for i, id := range t.Standby {
		c, ok := m.byID[id]
		if !ok {
			return nil, fieldErr(fmt.Sprintf("%s.standby[%d]", field, i), "unknown client %q", id)
		}
		for _, o := range cs {
			if o == c {
				return nil, fieldErr(fmt.Sprintf("%s.standby[%d]", field, i), "client %q already holds a replica of task %d", id, t.Task)
			}
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// spread fills out[d] with the number of distinct values of dims[d] among
// the clients cs.
func (m *model) spread(cs []int32, out []int) []int {
	for d := range m.dims {
		n := 0
		for i, c := range cs {
			v := m.val[d][c]
			dup := false
			for _, o := range cs[:i] {
				if m.val[d][o] == v {
					dup = true
					break
				}
			}
			if !dup {
				n++
			}
		}
		out[d] = n
	}
	return out
}

// sortedKeys returns the keys of a set of strings, sorted.
func sortedKeys(set map[string]struct{}) []string {
	ks := make([]string, 0, len(set))
	for k := range set {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
