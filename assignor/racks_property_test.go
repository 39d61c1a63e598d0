package assignor

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"
)

// shuffledRacks is shuffled, also reordering the rack awareness' tasks.
func shuffledRacks(r *rand.Rand, in Input) Input {
	out := shuffled(r, in)
	ra := *in.RackAwareness
	ra.Tasks = append([]TaskRacks(nil), ra.Tasks...)
	r.Shuffle(len(ra.Tasks), func(i, j int) { ra.Tasks[i], ra.Tasks[j] = ra.Tasks[j], ra.Tasks[i] })
	out.RackAwareness = &ra
	return out
}

// checkRackAware asserts what min_traffic promises against none on the same
// input: today's plan exactly under none; never a higher cost; every
// client's active count unchanged; no task's spread worse, and on small
// scenarios optimal by brute force; no task moved to a client that is not
// caught up while one that is lives; tasks without racks and clients
// without a rack keep today's actives.
func checkRackAware(t *testing.T, in Input) (p, none *Plan) {
	t.Helper()
	p = mustAssign(t, in)
	none = mustAssign(t, withStrategy(in, StrategyNone))
	plain := in
	plain.RackAwareness = nil
	today := mustAssign(t, plain)
	stripped := *none
	stripped.CrossZone = nil
	if a, b := planJSON(t, &stripped), planJSON(t, today); a != b {
		t.Fatalf("none with racks differs from today:\n%s\n%s", a, b)
	}
	if a, b := objective(t, in, p), objective(t, in, none); a > b {
		t.Fatalf("min_traffic costs %d, none %d:\n%s\n%s", a, b, describe(p), describe(none))
	}
	for i := range p.Clients {
		if a, b := len(p.Clients[i].Active), len(none.Clients[i].Active); a != b {
			t.Fatalf("client %s: %d actives, none gives it %d", p.Clients[i].ID, a, b)
		}
	}
	rackless := map[string]bool{}
	for _, c := range in.Clients {
		if v, ok := c.Tags[in.RackAwareness.ClientRackTag]; !ok || v == "" {
			rackless[c.ID] = true
		}
	}
	unknownTask := map[int]bool{}
	listed := map[int]bool{}
	for _, tr := range in.RackAwareness.Tasks {
		listed[tr.Task] = true
		for _, pr := range tr.Partitions {
			unknownTask[tr.Task] = unknownTask[tr.Task] || partitionRackUnknown(&pr)
		}
	}
	prevActive := map[int]string{}
	for _, c := range in.Clients {
		for _, task := range c.PreviousActive {
			prevActive[task] = c.ID
		}
	}
	for i, tp := range p.Tasks {
		was := none.Tasks[i]
		if (unknownTask[i] || !listed[i] || rackless[was.Active] || rackless[tp.Active]) && tp.Active != was.Active {
			t.Fatalf("task %d moved from %s to %s although a rack is unknown", i, was.Active, tp.Active)
		}
		a, _ := Spread(in, tp)
		b, _ := Spread(in, was)
		if CompareSpread(a, b) < 0 {
			t.Fatalf("task %d: spread %v, none %v", i, a, b)
		}
		if len(in.Clients) <= 9 {
			if best := bruteBestSpread(in, tp.Active); CompareSpread(a, best) != 0 {
				t.Fatalf("task %d: spread %v, brute force finds %v (%s)", i, a, best, describe(p))
			}
		}
		if tp.Active != was.Active && tp.Active != prevActive[i] && !caughtUpOn(in, tp.Active, i) {
			for _, c := range in.Clients {
				if caughtUpOn(in, c.ID, i) {
					t.Fatalf("task %d went to cold %s although %s is caught up (%s)", i, tp.Active, c.ID, describe(p))
				}
			}
		}
	}
	return p, none
}

func TestRackAwarePropertiesOverRandomScenarios(t *testing.T) {
	r := rand.New(rand.NewSource(20261206))
	for i := 0; i < 300; i++ {
		maxClients, maxTasks := 8, 12
		if i%4 == 3 {
			maxClients, maxTasks = 30, 60
		}
		in := randomRacks(r, randomInput(r, maxClients, maxTasks), StrategyMinTraffic)
		t.Run(fmt.Sprintf("scenario%03d", i), func(t *testing.T) {
			p, _ := checkRackAware(t, in)
			want := planJSON(t, p)
			for j := 0; j < 2; j++ {
				if got := planJSON(t, mustAssign(t, shuffledRacks(r, in))); got != want {
					t.Fatalf("plan depends on input order:\n%s\n%s", want, got)
				}
			}
			// Settled (fed back, every replica caught up, until the plan
			// stops changing: clients that catch up open trades), the plan
			// keeps today's balance: actives within one per unit of
			// capacity, no standby that a lighter eligible client could
			// take.
			cur, cp, _ := settle(t, in, p, 2*in.Tasks+4)
			if lo, hi := activeLoads(cur, cp); hi-lo > 1 {
				t.Fatalf("settled plan unbalanced: active load %v..%v: %s", lo, hi, describe(cp))
			}
			if mv := evenerMove(cur, cp); mv != "" {
				t.Fatalf("settled plan leaves standby load uneven: %s (%s)", mv, describe(cp))
			}
			checkRackAware(t, cur)
		})
	}
}

// FuzzAssignRacks plans the random rack-aware scenario a fuzzed seed
// generates: no panic, every invariant, and what checkRackAware asserts.
func FuzzAssignRacks(f *testing.F) {
	for _, seed := range []int64{1, 36, 20261206} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		r := rand.New(rand.NewSource(seed))
		strategy := []string{StrategyMinTraffic, StrategyBalanceSubtopology}[r.Intn(2)]
		in := randomRacks(r, randomInput(r, 8, 16), strategy)
		p, _ := checkRackAware(t, in)
		if a, b := planJSON(t, p), planJSON(t, mustAssign(t, shuffledRacks(r, in))); a != b {
			t.Fatalf("plan depends on input order:\n%s\n%s", a, b)
		}
	})
}

// FuzzAssignRacksDocument decodes arbitrary bytes as a rack-aware scenario
// document and plans it: no panic, a rejected one is a *FieldError or a
// decoding error, an accepted one keeps every invariant and reports a
// cross-zone entry per task.
func FuzzAssignRacksDocument(f *testing.F) {
	f.Add([]byte(`{"tasks": 2, "num_standby_replicas": 1, "rack_aware_assignment_tags": ["zone"],
	 "clients": [{"id": "a", "tags": {"zone": "a"}}, {"id": "b", "tags": {"zone": "b"}}, {"id": "c", "tags": {"zone": "c"}}],
	 "rack_awareness": {"strategy": "min_traffic", "client_rack_tag": "zone",
	  "tasks": [{"task": 0, "rates": {"input": 5, "changelog": 2, "output": 1}, "partitions": [
	    {"topic": "in", "partition": 0, "role": "input", "replicas": ["b", "c"], "leader": "b"},
	    {"topic": "cl", "partition": 0, "role": "changelog", "replicas": ["c"], "leader": "c"},
	    {"topic": "out", "partition": 0, "role": "output", "replicas": ["a", ""], "leader": "a"}]},
	   {"task": 1, "partitions": [{"topic": "in", "partition": 1, "role": "input", "replicas": ["a"], "leader": "a"}]}]}}`))
	f.Add([]byte(`{"tasks": 1, "clients": [{"id": "x", "tags": {}}], "rack_awareness": {"strategy": "balance_subtopology", "traffic_cost": 0, "non_overlap_cost": 0, "client_rack_tag": "zone", "tasks": []}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := DecodeInput(data)
		if err != nil || in.Tasks > 200 || len(in.Clients) > 40 || len(in.RackAwareAssignmentTags) > 6 {
			return
		}
		p, err := Assign(in)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Assign error is not a *FieldError: %v", err)
			}
			return
		}
		checkInvariants(t, in, p)
		if in.RackAwareness != nil && len(p.CrossZone.Tasks) != in.Tasks {
			t.Fatalf("%d cross-zone entries for %d tasks", len(p.CrossZone.Tasks), in.Tasks)
		}
	})
}

// TestMinTrafficActivesOptimalWhenFresh checks the exactness of the cycles
// over rack cells: in a fresh group (no client holds any state) without
// standbys or rack-aware keys, min_traffic's actives cost exactly the
// least any placement with the same active count per client costs, by
// brute force over every such placement.
func TestMinTrafficActivesOptimalWhenFresh(t *testing.T) {
	r := rand.New(rand.NewSource(925))
	checked := 0
	for i := 0; i < 150; i++ {
		n, T := 2+r.Intn(3), 1+r.Intn(7)
		var cs []Client
		for c := 0; c < n; c++ {
			cl := client(fmt.Sprintf("c%d", c), fmt.Sprintf("zone=z%d", r.Intn(4)))
			if r.Intn(4) == 0 {
				cl.Capacity = 2
			}
			cs = append(cs, cl)
		}
		in := randomRacks(r, input(T, 0, nil, cs...), StrategyMinTraffic)
		for j := range in.Clients {
			if _, ok := in.Clients[j].Tags["zone"]; !ok { // every client has a rack here
				in.Clients[j].Tags["zone"] = "z0"
			}
		}
		in.RackAwareness.NonOverlapCost = 0
		p := mustAssign(t, in)
		got := objective(t, in, p)
		m, err := newModel(&in)
		if err != nil {
			t.Fatal(err)
		}
		rm := m.racks
		pinned := false
		for _, x := range rm.pinned {
			pinned = pinned || x
		}
		if pinned {
			continue // a pinned task stays where today's placement put it
		}
		left := make([]int, n)
		for _, cp := range p.Clients {
			left[m.byID[cp.ID]] = len(cp.Active)
		}
		best := int64(-1)
		var rec func(task int, sum int64)
		rec = func(task int, sum int64) {
			if task == T {
				if best < 0 || sum < best {
					best = sum
				}
				return
			}
			for c := 0; c < n; c++ {
				if left[c] > 0 {
					left[c]--
					rec(task+1, sum+rm.actCost[task*rm.G+int(rm.grp[c])])
					left[c]++
				}
			}
		}
		rec(0, 0)
		if got != best {
			t.Fatalf("scenario %d: min_traffic costs %d, the best placement %d (%s)", i, got, best, describe(p))
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("only %d of 150 scenarios without pinned tasks", checked)
	}
}
