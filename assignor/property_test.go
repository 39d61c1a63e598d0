package assignor

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
)

// randomInput generates a valid scenario: up to maxClients clients over up
// to 3 rack-aware keys (plus an unlisted "host" tag), previous roles spread
// over clients of which some have since died, random lags and settings.
func randomInput(r *rand.Rand, maxClients, maxTasks int) Input {
	keys := []string{"zone", "cluster", "rack"}
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	dims := keys[:r.Intn(4)]
	nvals := make([]int, len(dims))
	for d := range nvals {
		nvals[d] = 1 + r.Intn(4)
	}
	// Sometimes a rack-aware key unique to each client (a host name): the
	// search's mirror-image reduction at work.
	uniqueHost := r.Intn(4) == 0
	if uniqueHost {
		dims = append(dims, "host")
	}
	total := 1 + r.Intn(maxClients+2)
	all := make([]Client, total)
	for i := range all {
		host := fmt.Sprintf("h%d", r.Intn(3))
		if uniqueHost {
			host = fmt.Sprintf("h%d", i)
		}
		c := Client{ID: fmt.Sprintf("p%02d", i), Tags: map[string]string{"host": host}, Capacity: 1}
		if r.Intn(4) == 0 {
			c.Capacity = 1 + r.Intn(3)
		}
		for d, k := range dims[:len(nvals)] {
			// Skewed values: uneven zones.
			v := r.Intn(nvals[d])
			if r.Intn(3) == 0 {
				v = 0
			}
			c.Tags[k] = fmt.Sprintf("%s%d", k[:1], v)
		}
		all[i] = c
	}
	in := Input{Settings: Settings{
		NumStandbyReplicas:      r.Intn(5),
		RackAwareAssignmentTags: append([]string(nil), dims...),
		AcceptableRecoveryLag:   []int64{0, 100, DefaultAcceptableRecoveryLag}[r.Intn(3)],
		MaxWarmupReplicas:       1 + r.Intn(3),
	}, Tasks: r.Intn(maxTasks + 1)}
	for t := 0; t < in.Tasks; t++ {
		perm := r.Perm(total)
		roles := r.Intn(min(total, 4) + 1)
		for j, ci := range perm[:roles] {
			c := &all[ci]
			switch {
			case j == 0 && r.Intn(5) > 0:
				c.PreviousActive = append(c.PreviousActive, t)
			case r.Intn(4) == 0:
				c.PreviousWarmup = append(c.PreviousWarmup, t)
			default:
				c.PreviousStandby = append(c.PreviousStandby, t)
			}
		}
		for _, ci := range perm[:min(total, roles+r.Intn(2))] {
			if r.Intn(3) > 0 {
				if all[ci].Lags == nil {
					all[ci].Lags = map[int]int64{}
				}
				all[ci].Lags[t] = []int64{0, 50, 5000, 20000}[r.Intn(4)]
			}
		}
	}
	// Some clients died since the previous plan.
	for _, c := range all {
		if len(all) == 1 || r.Intn(5) > 0 {
			in.Clients = append(in.Clients, c)
		}
	}
	if in.Tasks > 0 && len(in.Clients) == 0 {
		in.Clients = all[:1]
	}
	return in
}

// shuffled returns in with its clients and every list in another order.
func shuffled(r *rand.Rand, in Input) Input {
	out := in
	out.Clients = append([]Client(nil), in.Clients...)
	r.Shuffle(len(out.Clients), func(i, j int) { out.Clients[i], out.Clients[j] = out.Clients[j], out.Clients[i] })
	for i := range out.Clients {
		c := &out.Clients[i]
		for _, l := range []*[]int{&c.PreviousActive, &c.PreviousStandby, &c.PreviousWarmup} {
			s := append([]int(nil), (*l)...)
			r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
			*l = s
		}
	}
	return out
}

func caughtUpOn(in Input, id string, task int) bool {
	for _, c := range in.Clients {
		if c.ID == id {
			lag, ok := c.Lags[task]
			return ok && lag <= in.AcceptableRecoveryLag
		}
	}
	return false
}

func TestPropertiesOverRandomScenarios(t *testing.T) {
	r := rand.New(rand.NewSource(20260708))
	for i := 0; i < 400; i++ {
		maxClients, maxTasks := 8, 12
		if i%4 == 3 {
			maxClients, maxTasks = 30, 60
		}
		in := randomInput(r, maxClients, maxTasks)
		t.Run(fmt.Sprintf("scenario%03d", i), func(t *testing.T) {
			before, _ := json.Marshal(in)
			p := mustAssign(t, in) // invariants: one active, no double replica, ...
			want := planJSON(t, p)
			if after, _ := json.Marshal(in); string(after) != string(before) {
				t.Fatalf("Assign modified its input:\n%s\n%s", before, after)
			}

			// Deterministic, whatever the input order.
			for j := 0; j < 3; j++ {
				if got := planJSON(t, mustAssign(t, shuffled(r, in))); got != want {
					t.Fatalf("plan depends on input order:\n%s\n%s", want, got)
				}
			}

			// Per-task spread optimal, by brute force.
			if len(in.Clients) <= 9 {
				for _, tp := range p.Tasks {
					sp, err := Spread(in, tp)
					if err != nil {
						t.Fatal(err)
					}
					if best := bruteBestSpread(in, tp.Active); CompareSpread(sp, best) != 0 {
						t.Fatalf("task %d: spread %v, brute force finds %v (%s)", tp.Task, sp, best, describe(p))
					}
				}
			}

			// No task moved to a cold client while a caught-up one lives.
			live := map[string]bool{}
			prevActive := map[int]string{}
			for _, c := range in.Clients {
				live[c.ID] = true
				for _, task := range c.PreviousActive {
					prevActive[task] = c.ID
				}
			}
			for _, tp := range p.Tasks {
				if tp.Active == prevActive[tp.Task] || caughtUpOn(in, tp.Active, tp.Task) {
					continue
				}
				for _, c := range in.Clients {
					if caughtUpOn(in, c.ID, tp.Task) {
						t.Fatalf("task %d went to cold %s although %s is caught up (%s)", tp.Task, tp.Active, c.ID, describe(p))
					}
				}
			}

			// No balance move left undone that a chain of moves between
			// caught-up clients could make.
			if ch := chainLeft(in, p); ch != "" {
				t.Fatalf("chain of active moves left undone: %s (%s)", ch, describe(p))
			}

			// Convergence: feed plans back with warmups caught up until no
			// probing is asked; then balanced within one task per unit of
			// capacity.
			cur, cp := in, p
			for round := 0; cp.ProbingRebalanceNeeded; round++ {
				if round > 2*in.Tasks+2 {
					t.Fatalf("no convergence after %d rounds: %s", round, describe(cp))
				}
				cur = feedBack(cur, cp)
				cp = mustAssign(t, cur)
			}
			if lo, hi := activeLoads(cur, cp); hi-lo > 1 {
				t.Fatalf("converged plan unbalanced: active load %v..%v: %s", lo, hi, describe(cp))
			}

			// Sticky: the converged plan fed back comes back unchanged.
			again := mustAssign(t, feedBack(cur, cp))
			if a, b := planJSON(t, cp), planJSON(t, again); a != b {
				t.Fatalf("plan fed back changed:\n%s\n%s", a, b)
			}

			// Standby load converges too: in the settled plan, holding a
			// task's state keeps no client more than one replica (per unit
			// of capacity) above a client that could take the standby with
			// the task's spread kept. No single standby move, nor (by
			// brute force, on small scenarios) any trade of a task's whole
			// standby set, would lower a heavier client for a lighter one.
			if mv := evenerMove(cur, cp); mv != "" {
				t.Fatalf("settled plan leaves standby load uneven: %s (%s)", mv, describe(cp))
			}
			if len(in.Clients) <= 9 {
				if mv := evenerSetMove(cur, cp); mv != "" {
					t.Fatalf("settled plan leaves standby load uneven: %s (%s)", mv, describe(cp))
				}
			}
			// Without rack-aware tags every client is eligible: with equal
			// capacities, replica loads differ by at most one.
			equal := true
			for _, c := range in.Clients {
				equal = equal && max(c.Capacity, 1) == max(in.Clients[0].Capacity, 1)
			}
			if lo, hi := replicaLoads(cur, cp); len(in.RackAwareAssignmentTags) == 0 && equal && hi-lo > 1 {
				t.Fatalf("settled plan without tags: replica load %v..%v, want within 1 (%s)", lo, hi, describe(cp))
			}
		})
	}
}
