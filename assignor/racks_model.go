package assignor

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// weightScale is the integer weight of a partition flow of mean bytes: the
// optimiser compares integers, so that sums and ties are exact.
const weightScale = 1000

// rackModel is a validated RackAwareness over a model: every client in a
// rack group, every task's cost and bytes in each group.
//
// Groups are the racks holding some replica or leader, by name, then
// "other" (a known rack holding none: every flow crosses), then "unknown"
// (a client without a rack: kept out of the optimisation).
type rackModel struct {
	strategy string
	optimise bool // the strategy moves replicas
	unknown  []string

	G      int     // groups
	grp    []int32 // per client
	pinned []bool  // per task: touches a partition without racks

	// Per task t and group g at t*G+g: the integer cost of the active or a
	// standby there (traffic_cost x scaled cross-zone weight), its
	// cross-zone bytes and whether it is local (see TaskCrossZone).
	actCost, sbCost     []int64
	actFetch, actProd   []float64
	sbFetch             []float64
	actLocal, sbLocal   []bool
	move                int64 // non_overlap_cost, scaled
	unknownGroup, other int32
}

// flow is one partition of a task with its weight.
type flow struct {
	p *PartitionRacks
	w float64
}

// newRackModel validates in.RackAwareness and builds its model; nil when
// the input has none.
func newRackModel(m *model) (*rackModel, error) {
	ra := m.in.RackAwareness
	if ra == nil {
		return nil, nil
	}
	rm := &rackModel{strategy: ra.RackAwareStrategy}
	switch ra.RackAwareStrategy {
	case "", StrategyNone:
		rm.strategy = StrategyNone
	case StrategyMinTraffic, StrategyBalanceSubtopology:
		rm.optimise = true
	default:
		return nil, fieldErr("rack_awareness.strategy", "must be %s, %s or %s, got %q",
			StrategyNone, StrategyMinTraffic, StrategyBalanceSubtopology, ra.RackAwareStrategy)
	}
	byTask, err := checkRackTasks(ra, m.numTasks)
	if err != nil {
		return nil, err
	}
	names := rm.groupClients(m, ra)
	rm.pinTasks(ra, byTask)
	rm.costs(m, ra, byTask, names)
	return rm, nil
}

// checkRackTasks checks the costs and the tasks of ra and returns, per
// task, 1 + its index in ra.Tasks (0 when not listed).
func checkRackTasks(ra *RackAwareness, T int) ([]int32, error) {
	const f = "rack_awareness"
	if ra.TrafficCost < 0 {
		return nil, fieldErr(f+".traffic_cost", "must be at least 0, got %d", ra.TrafficCost)
	}
	if ra.NonOverlapCost < 0 {
		return nil, fieldErr(f+".non_overlap_cost", "must be at least 0, got %d", ra.NonOverlapCost)
	}
	byTask := make([]int32, T)
	for i := range ra.Tasks {
		tr := &ra.Tasks[i]
		ft := f + ".tasks[" + strconv.Itoa(i) + "]"
		if tr.Task < 0 || tr.Task >= T {
			return nil, fieldErr(ft+".task", "task %d out of range [0, %d)", tr.Task, T)
		}
		if j := byTask[tr.Task]; j > 0 {
			return nil, fieldErr(ft+".task", "task %d listed twice (also tasks[%d])", tr.Task, j-1)
		}
		byTask[tr.Task] = int32(i) + 1
		if r := tr.Rates; r != nil {
			for _, x := range [...]struct {
				name string
				v    float64
			}{{"input", r.Input}, {"changelog", r.Changelog}, {"output", r.Output}} {
				if !(x.v >= 0) || math.IsInf(x.v, 0) {
					return nil, fieldErr(ft+".rates."+x.name, "must be a finite rate of at least 0, got %v", x.v)
				}
			}
		}
		for j, p := range tr.Partitions {
			switch p.Role {
			case RoleInput, RoleChangelog, RoleOutput:
			default:
				return nil, fieldErr(fmt.Sprintf("%s.partitions[%d].role", ft, j), "must be %s, %s or %s, got %q",
					RoleInput, RoleChangelog, RoleOutput, p.Role)
			}
		}
	}
	return byTask, nil
}

// groupClients numbers the groups (the racks of some replica or leader by
// name, then other, then unknown), puts every client in one, names the
// clients without a rack, and returns the racks' names.
func (rm *rackModel) groupClients(m *model, ra *RackAwareness) []string {
	racks := make(map[string]struct{})
	for _, tr := range ra.Tasks {
		for _, p := range tr.Partitions {
			for _, r := range p.Replicas {
				racks[r] = struct{}{}
			}
			racks[p.Leader] = struct{}{}
		}
	}
	delete(racks, "")
	names := sortedKeys(racks)
	index := make(map[string]int32, len(names))
	for i, r := range names {
		index[r] = int32(i)
	}
	rm.other, rm.unknownGroup = int32(len(names)), int32(len(names))+1
	rm.G = len(names) + 2
	rm.grp = make([]int32, len(m.ids))
	var rackless []string
	for c := range m.ids {
		v, ok := m.tags[c][ra.ClientRackTag]
		switch g, known := index[v]; {
		case ra.ClientRackTag == "" || !ok || v == "":
			rm.grp[c] = rm.unknownGroup
			rackless = append(rackless, m.ids[c])
		case known:
			rm.grp[c] = g
		default:
			rm.grp[c] = rm.other
		}
	}
	if len(rackless) > 0 {
		what := fmt.Sprintf("tag %q", ra.ClientRackTag)
		if ra.ClientRackTag == "" {
			what = "client_rack_tag (none configured)"
		}
		rm.unknown = append(rm.unknown, fmt.Sprintf("%d clients without a rack, by %s: rack-aware placement moves no replica to or from them: %s",
			len(rackless), what, listSome(rackless)))
	}
	return names
}

// pinTasks pins the tasks without partition racks and those with a
// partition whose replica or leader has no rack, naming them.
func (rm *rackModel) pinTasks(ra *RackAwareness, byTask []int32) {
	rm.pinned = make([]bool, len(byTask))
	var unlisted, brokerless []string
	for t, i := range byTask {
		if i == 0 {
			rm.pinned[t] = true
			unlisted = append(unlisted, strconv.Itoa(t))
			continue
		}
		for _, p := range ra.Tasks[i-1].Partitions {
			if partitionRackUnknown(&p) {
				rm.pinned[t] = true
				brokerless = append(brokerless, fmt.Sprintf("%d (%s-%d)", t, p.Topic, p.Partition))
				break
			}
		}
	}
	if len(unlisted) > 0 {
		rm.unknown = append(rm.unknown, fmt.Sprintf("%d tasks without partition racks: they stay where placed: %s",
			len(unlisted), listSome(unlisted)))
	}
	if len(brokerless) > 0 {
		rm.unknown = append(rm.unknown, fmt.Sprintf("%d tasks with a partition whose replica or leader has no broker.rack: they stay where placed: %s",
			len(brokerless), listSome(brokerless)))
	}
}

// partitionRackUnknown reports whether a partition has no replica, a
// replica without a rack or a leader without one.
func partitionRackUnknown(p *PartitionRacks) bool {
	if len(p.Replicas) == 0 || p.Leader == "" {
		return true
	}
	for _, r := range p.Replicas {
		if r == "" {
			return true
		}
	}
	return false
}

// costs fills the per task and group costs and bytes.
//
// Each partition flow weighs its task's rate of the flow's role split evenly
// among the task's partitions of that role. A task without rates takes the
// mean flow weight of the tasks with rates, or 1 when none has any. Costs
// scale weights by the mean flow weight over all tasks, so that a flow of
// mean weight costs traffic_cost, as one partition does in Kafka Streams.
func (rm *rackModel) costs(m *model, ra *RackAwareness, byTask []int32, names []string) {
	T, G := m.numTasks, rm.G
	flows := make([][]flow, T)
	var ratedSum float64
	var ratedFlows int
	for t := 0; t < T; t++ {
		if byTask[t] == 0 {
			continue
		}
		tr := &ra.Tasks[byTask[t]-1]
		var count [3]int
		for j := range tr.Partitions {
			count[roleIndex(tr.Partitions[j].Role)]++
		}
		fs := make([]flow, len(tr.Partitions))
		for j := range tr.Partitions {
			p := &tr.Partitions[j]
			w := math.NaN() // unknown until the mean is known
			if r := tr.Rates; r != nil {
				w = [...]float64{r.Input, r.Changelog, r.Output}[roleIndex(p.Role)] / float64(count[roleIndex(p.Role)])
				ratedSum += w
				ratedFlows++
			}
			fs[j] = flow{p: p, w: w}
		}
		flows[t] = fs
	}
	fallback := 1.0
	if ratedFlows > 0 {
		fallback = ratedSum / float64(ratedFlows)
	}
	var sum float64
	var all int
	for _, fs := range flows {
		for j := range fs {
			if math.IsNaN(fs[j].w) {
				fs[j].w = fallback
			}
			sum += fs[j].w
			all++
		}
	}
	unit := 1.0
	if all > 0 && sum > 0 {
		unit = sum / float64(all)
	}
	tc := int64(ra.TrafficCost)
	rm.move = int64(ra.NonOverlapCost) * weightScale
	rm.actCost, rm.sbCost = make([]int64, T*G), make([]int64, T*G)
	rm.actFetch, rm.actProd, rm.sbFetch = make([]float64, T*G), make([]float64, T*G), make([]float64, T*G)
	rm.actLocal, rm.sbLocal = make([]bool, T*G), make([]bool, T*G)
	for t := 0; t < T; t++ {
		for g := 0; g < G; g++ {
			rack := ""
			if g < len(names) {
				rack = names[g]
			}
			i := t*G + g
			rm.actLocal[i], rm.sbLocal[i] = true, true
			for _, fl := range flows[t] {
				wi := tc * int64(math.Round(fl.w/unit*weightScale))
				p := fl.p
				hasReplica := rack != "" && containsString(p.Replicas, rack)
				// The active fetches inputs, produces changelogs and
				// outputs; a standby fetches changelogs.
				if p.Role == RoleInput && !hasReplica {
					rm.actFetch[i] += fl.w
					rm.actCost[i] += wi
					rm.actLocal[i] = false
				}
				if p.Role != RoleInput && (rack == "" || p.Leader != rack) {
					rm.actProd[i] += fl.w
					rm.actCost[i] += wi
				}
				if p.Role == RoleChangelog && !hasReplica {
					rm.sbFetch[i] += fl.w
					rm.sbCost[i] += wi
					rm.sbLocal[i] = false
				}
			}
		}
	}
}

func roleIndex(role string) int {
	switch role {
	case RoleChangelog:
		return 1
	case RoleOutput:
		return 2
	}
	return 0
}

func containsString(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// listSome joins the first ten items and says how many more there are.
func listSome(items []string) string {
	const most = 10
	if len(items) <= most {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:most], ", ") + fmt.Sprintf(" and %d more", len(items)-most)
}

// crossZone reports the traffic of the placement.
func (pl *placement) crossZone() *CrossZone {
	m, rm := pl.m, pl.m.racks
	G := rm.G
	cz := &CrossZone{Strategy: rm.strategy, Unknown: append([]string{}, rm.unknown...), Tasks: make([]TaskCrossZone, m.numTasks)}
	sb := make([]int32, 0, pl.k)
	for t := 0; t < m.numTasks; t++ {
		a := int(rm.grp[pl.active[t]])
		tc := &cz.Tasks[t]
		tc.Task = t
		tc.Fetch = rm.actFetch[t*G+a]
		tc.Produce = rm.actProd[t*G+a]
		tc.ActiveLocal = rm.actLocal[t*G+a]
		sb = append(sb[:0], pl.standby[t*pl.k:t*pl.k+pl.k]...)
		sortInt32(sb) // the order of TaskPlacement.Standby
		tc.StandbyLocal = make([]bool, 0, len(sb))
		for _, c := range sb {
			if c < 0 {
				continue
			}
			g := int(rm.grp[c])
			tc.Fetch += rm.sbFetch[t*G+g]
			tc.StandbyLocal = append(tc.StandbyLocal, rm.sbLocal[t*G+g])
		}
		tc.Bytes = tc.Fetch + tc.Produce
		cz.Fetch += tc.Fetch
		cz.Produce += tc.Produce
	}
	cz.Total = cz.Fetch + cz.Produce
	return cz
}

// place computes the placement of m. With a min_traffic strategy it also
// computes today's placement and keeps the rack-aware one only when it
// costs less: the passes trade actives by their own cost, and the standbys
// placed around the new actives may cost more than the actives saved.
func place(m *model) *placement {
	pl := newPlacement(m)
	if m.racks == nil || !m.racks.optimise {
		pl.run()
		return pl
	}
	pl.rackAware = true
	pl.run()
	today := newPlacement(m)
	today.run()
	if today.rackCost() <= pl.rackCost() {
		return today
	}
	return pl
}

// rackCost is what the rack-aware passes minimise: every active's cost (its
// traffic, and non_overlap_cost off its previous client) and every
// standby's (its traffic, and non_overlap_cost on a client holding none of
// the task's state).
func (pl *placement) rackCost() int64 {
	m := pl.m
	rm := m.racks
	var sum int64
	for t := 0; t < m.numTasks; t++ {
		a := pl.active[t]
		sum += rm.actCost[t*rm.G+int(rm.grp[a])]
		if a != m.prevActive[t] {
			sum += rm.move
		}
		for _, c := range pl.standby[t*pl.k : t*pl.k+pl.k] {
			if c < 0 {
				continue
			}
			sum += rm.sbCost[t*rm.G+int(rm.grp[c])]
			if m.lagOf(t, c) == noState {
				sum += rm.move
			}
		}
	}
	return sum
}

// CrossZoneOf computes the cross-zone traffic of the placement p.Tasks for
// the clients and rack awareness of in, as Measure computes its quality: of
// a plan read back, of Kafka's placement, of a plan after a loss. in must
// have RackAwareness.
func CrossZoneOf(in Input, p *Plan) (*CrossZone, error) {
	if in.RackAwareness == nil {
		return nil, fieldErr("rack_awareness", "required to measure cross-zone traffic")
	}
	m, err := newModel(&in)
	if err != nil {
		return nil, err
	}
	pl, err := placementOf(m, p)
	if err != nil {
		return nil, err
	}
	return pl.crossZone(), nil
}
