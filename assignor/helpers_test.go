package assignor

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"testing"
)

// client builds a test client with tags given as "key=value" pairs.
func client(id string, kv ...string) Client {
	tg := make(map[string]string, len(kv))
	for _, p := range kv {
		for i := 0; i < len(p); i++ {
			if p[i] == '=' {
				tg[p[:i]] = p[i+1:]
				break
			}
		}
	}
	return Client{ID: id, Tags: tg, Capacity: 1}
}

func withActive(c Client, tasks ...int) Client  { c.PreviousActive = tasks; return c }
func withStandby(c Client, tasks ...int) Client { c.PreviousStandby = tasks; return c }
func withLags(c Client, kv map[int]int64) Client {
	c.Lags = kv
	return c
}

func input(tasks, standbys int, dims []string, clients ...Client) Input {
	in := Input{Settings: DefaultSettings(), Tasks: tasks, Clients: clients}
	in.NumStandbyReplicas, in.RackAwareAssignmentTags = standbys, dims
	return in
}

func mustAssign(t testing.TB, in Input) *Plan {
	t.Helper()
	p, err := Assign(in)
	if err != nil {
		t.Fatalf("Assign: %v", err)
	}
	checkInvariants(t, in, p)
	return p
}

// checkActives fails t unless task i's active is want[i], for each i.
func checkActives(t testing.TB, p *Plan, want []string) {
	t.Helper()
	for task, w := range want {
		if got := p.Tasks[task].Active; got != w {
			t.Fatalf("task %d active = %s, want %s (%s)", task, got, w, describe(p))
		}
	}
}

func tagsOf(in Input) map[string]map[string]string {
	m := make(map[string]map[string]string, len(in.Clients))
	for _, c := range in.Clients {
		m[c.ID] = c.Tags
	}
	return m
}

// distinct counts the distinct values of key among the task's replicas
// (active and standbys).
func distinct(in Input, tp TaskPlacement, key string) int {
	tg := tagsOf(in)
	seen := map[string]bool{tg[tp.Active][key]: true}
	for _, s := range tp.Standby {
		seen[tg[s][key]] = true
	}
	return len(seen)
}

// checkInvariants asserts what every plan must satisfy, whatever the input.
func checkInvariants(t testing.TB, in Input, p *Plan) {
	t.Helper()
	ids := map[string]bool{}
	for _, c := range in.Clients {
		ids[c.ID] = true
	}
	if len(p.Tasks) != in.Tasks {
		t.Fatalf("plan has %d tasks, want %d", len(p.Tasks), in.Tasks)
	}
	wantStandbys := min(in.NumStandbyReplicas, len(in.Clients)-1)
	warmups, shortfall := 0, 0
	perClient := map[string][3][]int{}
	for i, tp := range p.Tasks {
		if tp.Task != i {
			t.Fatalf("tasks[%d].task = %d: tasks out of order", i, tp.Task)
		}
		if !ids[tp.Active] {
			t.Fatalf("task %d: active %q is not a live client", i, tp.Active)
		}
		holders := map[string]bool{tp.Active: true}
		if len(tp.Standby) != wantStandbys {
			t.Fatalf("task %d: %d standbys, want %d", i, len(tp.Standby), wantStandbys)
		}
		if !sort.StringsAreSorted(tp.Standby) || !sort.StringsAreSorted(tp.Warmup) {
			t.Fatalf("task %d: lists not sorted: %v %v", i, tp.Standby, tp.Warmup)
		}
		for _, s := range tp.Standby {
			if !ids[s] || holders[s] {
				t.Fatalf("task %d: standby %q unknown or holds another replica (%+v)", i, s, tp)
			}
			holders[s] = true
		}
		for _, w := range tp.Warmup {
			if !ids[w] || holders[w] {
				t.Fatalf("task %d: warmup %q unknown or on a replica holder (%+v)", i, w, tp)
			}
			holders[w] = true
		}
		warmups += len(tp.Warmup)
		shortfall += in.NumStandbyReplicas - len(tp.Standby)
		e := perClient[tp.Active]
		e[0] = append(e[0], i)
		perClient[tp.Active] = e
		for _, s := range tp.Standby {
			e := perClient[s]
			e[1] = append(e[1], i)
			perClient[s] = e
		}
		for _, w := range tp.Warmup {
			e := perClient[w]
			e[2] = append(e[2], i)
			perClient[w] = e
		}
	}
	if warmups > in.MaxWarmupReplicas {
		t.Fatalf("%d warmups, max %d", warmups, in.MaxWarmupReplicas)
	}
	if warmups > 0 && !p.ProbingRebalanceNeeded {
		t.Fatalf("%d warmups but probing_rebalance_needed=%v", warmups, p.ProbingRebalanceNeeded)
	}
	if p.Quality.StandbyShortfall != shortfall {
		t.Fatalf("standby_shortfall = %d, want %d", p.Quality.StandbyShortfall, shortfall)
	}
	if len(p.Clients) != len(in.Clients) {
		t.Fatalf("plan has %d clients, want %d", len(p.Clients), len(in.Clients))
	}
	for i, cp := range p.Clients {
		if i > 0 && p.Clients[i-1].ID >= cp.ID {
			t.Fatalf("clients not sorted by id: %q then %q", p.Clients[i-1].ID, cp.ID)
		}
		e := perClient[cp.ID]
		if !slices.Equal(nz(cp.Active), nz(e[0])) || !slices.Equal(nz(cp.Standby), nz(e[1])) || !slices.Equal(nz(cp.Warmup), nz(e[2])) {
			t.Fatalf("client %s: lists %v/%v/%v disagree with the task view %v", cp.ID, cp.Active, cp.Standby, cp.Warmup, e)
		}
	}
	q, err := Measure(in, p)
	if err != nil {
		t.Fatalf("Measure(plan): %v", err)
	}
	a, _ := json.Marshal(q)
	b, _ := json.Marshal(p.Quality)
	if string(a) != string(b) {
		t.Fatalf("Measure disagrees with the plan's quality:\n%s\n%s", a, b)
	}
}

func nz(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// bruteBestSpread returns the best spread over every choice of
// min(standbys, clients-1) standbys besides the active: exhaustive.
func bruteBestSpread(in Input, active string) []int {
	var others []Client
	var act Client
	for _, c := range in.Clients {
		if c.ID == active {
			act = c
		} else {
			others = append(others, c)
		}
	}
	k := min(in.NumStandbyReplicas, len(others))
	best := make([]int, len(in.RackAwareAssignmentTags))
	chosen := []Client{act}
	var rec func(start int)
	rec = func(start int) {
		if len(chosen) == k+1 {
			sp := make([]int, len(in.RackAwareAssignmentTags))
			for d, key := range in.RackAwareAssignmentTags {
				seen := map[string]bool{}
				for _, c := range chosen {
					seen[c.Tags[key]] = true
				}
				sp[d] = len(seen)
			}
			if CompareSpread(sp, best) > 0 {
				best = sp
			}
			return
		}
		for i := start; i < len(others); i++ {
			chosen = append(chosen, others[i])
			rec(i + 1)
			chosen = chosen[:len(chosen)-1]
		}
	}
	rec(0)
	return best
}

// loadScenario decodes a scenario file.
func loadScenario(t testing.TB, path string) Input {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	in, err := DecodeInput(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return in
}

func planJSON(t testing.TB, p *Plan) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// feedBack turns a plan into the next input: the same clients and settings,
// the plan's roles as previous roles, lag 0 for every replica and warmup.
func feedBack(in Input, p *Plan) Input {
	next := in
	next.Clients = make([]Client, len(in.Clients))
	byID := map[string]ClientPlacement{}
	for _, cp := range p.Clients {
		byID[cp.ID] = cp
	}
	for i, c := range in.Clients {
		cp := byID[c.ID]
		nc := Client{ID: c.ID, Tags: c.Tags, Capacity: c.Capacity,
			PreviousActive: cp.Active, PreviousStandby: cp.Standby, PreviousWarmup: cp.Warmup,
			Lags: map[int]int64{}}
		for _, l := range [][]int{cp.Active, cp.Standby, cp.Warmup} {
			for _, task := range l {
				nc.Lags[task] = 0
			}
		}
		next.Clients[i] = nc
	}
	return next
}

func activeLoads(in Input, p *Plan) (lo, hi float64) {
	capa := map[string]float64{}
	for _, c := range in.Clients {
		capa[c.ID] = float64(max(c.Capacity, 1))
	}
	for i, cp := range p.Clients {
		l := float64(len(cp.Active)) / capa[cp.ID]
		if i == 0 || l < lo {
			lo = l
		}
		if i == 0 || l > hi {
			hi = l
		}
	}
	return lo, hi
}

func describe(p *Plan) string {
	s := ""
	for _, tp := range p.Tasks {
		s += fmt.Sprintf("%d:%s%v%v ", tp.Task, tp.Active, tp.Standby, tp.Warmup)
	}
	return s
}

// replicaLoads returns the least and greatest replica load (actives and
// standbys per unit of capacity) over the plan's clients.
func replicaLoads(in Input, p *Plan) (lo, hi float64) {
	capa := map[string]float64{}
	for _, c := range in.Clients {
		capa[c.ID] = float64(max(c.Capacity, 1))
	}
	for i, cp := range p.Clients {
		l := float64(len(cp.Active)+len(cp.Standby)) / capa[cp.ID]
		if i == 0 || l < lo {
			lo = l
		}
		if i == 0 || l > hi {
			hi = l
		}
	}
	return lo, hi
}

// evenerMove looks, by brute force, for a single standby move that would
// lower the load gap while keeping the task's spread: a standby of task t on
// client c that could go to a client v holding no replica of t, with t's
// spread unchanged, where v's load after taking it would be below c's
// before ((replicas(v)+1)/capacity(v) < replicas(c)/capacity(c)). It
// describes the first such move, or returns "" when there is none: the plan
// is as even as single moves can make it.
func evenerMove(in Input, p *Plan) string {
	capa := map[string]int{}
	for _, c := range in.Clients {
		capa[c.ID] = max(c.Capacity, 1)
	}
	load := map[string]int{} // replicas: actives, standbys and warmups
	for _, cp := range p.Clients {
		load[cp.ID] = len(cp.Active) + len(cp.Standby) + len(cp.Warmup)
	}
	tags := tagsOf(in)
	spreadOf := func(ids []string) []int {
		sp := make([]int, len(in.RackAwareAssignmentTags))
		for d, key := range in.RackAwareAssignmentTags {
			seen := map[string]bool{}
			for _, id := range ids {
				seen[tags[id][key]] = true
			}
			sp[d] = len(seen)
		}
		return sp
	}
	for _, tp := range p.Tasks {
		reps := append([]string{tp.Active}, tp.Standby...)
		holds := map[string]bool{}
		for _, id := range append(reps, tp.Warmup...) {
			holds[id] = true
		}
		sp := spreadOf(reps)
		for j, c := range tp.Standby {
			for _, cl := range in.Clients {
				v := cl.ID
				if holds[v] || (load[v]+1)*capa[c] >= load[c]*capa[v] {
					continue
				}
				moved := append([]string(nil), reps...)
				moved[1+j] = v
				if CompareSpread(spreadOf(moved), sp) >= 0 {
					return fmt.Sprintf("task %d: standby on %s (load %d/%d) could go to %s (load %d/%d) with spread %v kept",
						tp.Task, c, load[c], capa[c], v, load[v], capa[v], sp)
				}
			}
		}
	}
	return ""
}

// settle feeds p back into in (its warmups caught up) until the plan stops
// changing, and returns the last input, its plan and the number of plans
// that changed something. It fails the test if that takes more than rounds
// plans.
func settle(t testing.TB, in Input, p *Plan, rounds int) (Input, *Plan, int) {
	t.Helper()
	for round := 0; ; round++ {
		if round > rounds {
			t.Fatalf("plan still changing after %d rounds: %s", rounds, describe(p))
		}
		next := feedBack(in, p)
		np := mustAssign(t, next)
		if planJSON(t, np) == planJSON(t, p) && !np.ProbingRebalanceNeeded {
			return next, np, round
		}
		in, p = next, np
	}
}

// evenerSetMove is evenerMove for whole standby sets, by brute force: it
// looks for a task whose standbys could be replaced by another set with the
// same spread such that every client the new set adds ends lighter than the
// heaviest client it relieves was. It describes the first such trade, or
// returns "". Exponential: for small scenarios only.
func evenerSetMove(in Input, p *Plan) string {
	capa := map[string]int{}
	for _, c := range in.Clients {
		capa[c.ID] = max(c.Capacity, 1)
	}
	load := map[string]int{}
	for _, cp := range p.Clients {
		load[cp.ID] = len(cp.Active) + len(cp.Standby) + len(cp.Warmup)
	}
	heavier := func(a, b string, da, db int) bool { // (load[a]+da)/capa[a] > (load[b]+db)/capa[b]
		return (load[a]+da)*capa[b] > (load[b]+db)*capa[a]
	}
	for _, tp := range p.Tasks {
		k := len(tp.Standby)
		if k == 0 {
			continue
		}
		old := map[string]bool{}
		for _, s := range tp.Standby {
			old[s] = true
		}
		warm := map[string]bool{}
		for _, w := range tp.Warmup {
			warm[w] = true
		}
		var others []string
		for _, c := range in.Clients {
			if c.ID != tp.Active && !warm[c.ID] {
				others = append(others, c.ID)
			}
		}
		sp, _ := Spread(in, tp)
		var found string
		chosen := []string{}
		var rec func(start int)
		rec = func(start int) {
			if found != "" {
				return
			}
			if len(chosen) == k {
				giver := ""
				for _, s := range tp.Standby {
					if !slices.Contains(chosen, s) && (giver == "" || heavier(s, giver, 0, 0)) {
						giver = s
					}
				}
				if giver == "" {
					return
				}
				for _, v := range chosen {
					if !old[v] && !heavier(giver, v, 0, 1) {
						return
					}
				}
				alt := TaskPlacement{Task: tp.Task, Active: tp.Active, Standby: chosen}
				if got, _ := Spread(in, alt); CompareSpread(got, sp) >= 0 {
					found = fmt.Sprintf("task %d: standbys %v could become %v with spread %v kept, relieving %s (load %d/%d)",
						tp.Task, tp.Standby, chosen, sp, giver, load[giver], capa[giver])
				}
				return
			}
			for i := start; i < len(others); i++ {
				chosen = append(chosen, others[i])
				rec(i + 1)
				chosen = chosen[:len(chosen)-1]
			}
		}
		rec(0)
		if found != "" {
			return found
		}
	}
	return ""
}
