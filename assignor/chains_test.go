package assignor

import (
	"slices"
	"testing"
)

// TestActivesMoveAlongAChain pins the balance step's chains of moves: when
// no client lighter than a loaded one is caught up on its tasks, a chain
// of moves between caught-up clients balances now, with no warmup and no
// probing rebalance; only where no chain exists does a warmup wait.
func TestActivesMoveAlongAChain(t *testing.T) {
	caught := func(c Client, tasks ...int) Client {
		c.Lags = map[int]int64{}
		for _, task := range tasks {
			c.Lags[task] = 0
		}
		return c
	}
	tests := []struct {
		name string
		in   Input
		// wantActive per task; nil: only balance and the rest are checked.
		wantActive  []string
		wantWarmups int
		wantProbing bool
	}{
		{
			// a runs 0 and 1, b runs 2, c runs none. No single move helps
			// (b at 1 taking one from a at 2 would reach 2; c only holds
			// task 2), but a -> b (task 0) -> c (task 2) does.
			name: "two hops: a gives b a task b is caught up on, b gives c one c is caught up on",
			in: input(3, 0, nil,
				withActive(caught(client("a"), 0, 1), 0, 1),
				withActive(caught(client("b"), 0, 2), 2),
				caught(client("c"), 2)),
			wantActive: []string{"b", "a", "c"},
		},
		{
			name: "three hops: a -> b -> c -> d",
			in: input(4, 0, nil,
				withActive(caught(client("a"), 0, 1), 0, 1),
				withActive(caught(client("b"), 0, 2), 2),
				withActive(caught(client("c"), 2, 3), 3),
				caught(client("d"), 3)),
			wantActive: []string{"b", "a", "c", "d"},
		},
		{
			name: "no chain: b is caught up on nothing of a's, so c still gets a warmup",
			in: input(3, 0, nil,
				withActive(caught(client("a"), 0, 1), 0, 1),
				withActive(caught(client("b"), 2), 2),
				caught(client("c"), 2)),
			wantActive:  []string{"a", "a", "b"},
			wantWarmups: 1,
			wantProbing: true,
		},
		{
			// Task 1 is an orphan placed on a in this plan; handing it on
			// moves no task off the client it ran on before, whereas task 0
			// would, although b lags less on 0.
			name: "a hop hands on a task placed anew in this plan before one its giver ran before",
			in: input(3, 0, nil,
				withActive(caught(client("a"), 0, 1), 0),
				withActive(withLags(client("b"), map[int]int64{0: 0, 1: 100, 2: 0}), 2),
				caught(client("c"), 2)),
			wantActive: []string{"a", "b", "c"},
		},
		{
			// Loads compare per unit of capacity: c (2 threads, 2 tasks, 1.0)
			// taking one reaches 1.5, below a's 2.0, so the chain a -> b -> c
			// is worth making; b (1 thread, 1 task) taking one would not be.
			name: "capacity: the chain ends on a 2-thread client that stays below the source",
			in: func() Input {
				in := input(5, 0, nil,
					withActive(caught(client("a"), 0, 1), 0, 1),
					withActive(caught(client("b"), 0, 2), 2),
					withActive(caught(client("c"), 2, 3, 4), 3, 4))
				in.Clients[2].Capacity = 2
				return in
			}(),
			wantActive: []string{"b", "a", "c", "c", "c"},
		},
		{
			// The chaos test's generation 8: 6 clients, 12 tasks; i1 keeps 3
			// actives and i4 has 1 but holds none of i1's tasks' state.
			// i1 -> i2 (task 5) -> i4 (task 2) balances at 2 each.
			name: "chaos generation 8: i1 -> i2 -> i4 instead of a warmup on i4",
			in:   loadScenario(t, "testdata/actives-need-a-chain.json"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustAssign(t, tt.in)
			checkActives(t, p, tt.wantActive)
			warmups := 0
			for _, tp := range p.Tasks {
				warmups += len(tp.Warmup)
			}
			if warmups != tt.wantWarmups {
				t.Fatalf("%d warmups, want %d (%s)", warmups, tt.wantWarmups, describe(p))
			}
			if p.ProbingRebalanceNeeded != tt.wantProbing {
				t.Fatalf("probing_rebalance_needed = %v, want %v (%s)", p.ProbingRebalanceNeeded, tt.wantProbing, describe(p))
			}
			if lo, hi := activeLoads(tt.in, p); !tt.wantProbing && hi-lo > 1 {
				t.Fatalf("active load %v..%v, want within 1 (%s)", lo, hi, describe(p))
			}
			if ch := chainLeft(tt.in, p); ch != "" {
				t.Fatalf("chain left undone: %s (%s)", ch, describe(p))
			}
			// Every active that left a live client went to one caught up.
			prev := map[int]string{}
			for _, c := range tt.in.Clients {
				for _, task := range c.PreviousActive {
					prev[task] = c.ID
				}
			}
			for _, tp := range p.Tasks {
				if from, ok := prev[tp.Task]; ok && from != tp.Active && !caughtUpOn(tt.in, tp.Active, tp.Task) {
					t.Fatalf("task %d moved from %s to %s, which is not caught up (%s)", tp.Task, from, tp.Active, describe(p))
				}
			}
		})
	}
}

// TestActivesChainInGeneration8 pins the chaos generation's plan: the
// moves are those of a plan with no warmup (i2 takes 4 and 5, i4 takes 2
// and 6), as many as the plan that waited for a warmup made, and the
// standbys keep the full spread.
func TestActivesChainInGeneration8(t *testing.T) {
	in := loadScenario(t, "testdata/actives-need-a-chain.json")
	p := mustAssign(t, in)
	byID := map[string][]int{}
	for _, cp := range p.Clients {
		byID[cp.ID[len(cp.ID)-2:]] = cp.Active
	}
	want := map[string][]int{"i0": {10, 11}, "i1": {3, 9}, "i2": {4, 5}, "i3": {7, 8}, "i4": {2, 6}, "i5": {0, 1}}
	for id, w := range want {
		if !slices.Equal(byID[id], w) {
			t.Errorf("%s actives = %v, want %v (%s)", id, byID[id], w, describe(p))
		}
	}
	for _, dq := range p.Quality.Dimensions {
		if dq.TasksRepeating != 0 {
			t.Errorf("dimension %s: %d tasks repeating, want 0", dq.Tag, dq.TasksRepeating)
		}
	}
}

// chainLeft describes a chain of active moves that p leaves undone: from a
// client src, through clients each caught up on a task the previous one
// runs in p, to a client dst that taking one more active would leave below
// src's load per unit of capacity. It returns "" when there is none: then
// no balance move is possible without a warmup.
func chainLeft(in Input, p *Plan) string {
	capa, load := map[string]int64{}, map[string]int64{}
	for _, c := range in.Clients {
		capa[c.ID] = int64(max(c.Capacity, 1))
	}
	runs := map[string][]int{}
	for _, cp := range p.Clients {
		load[cp.ID] = int64(len(cp.Active))
		runs[cp.ID] = cp.Active
	}
	worth := func(src, dst string) bool { return src != dst && (load[dst]+1)*capa[src] < load[src]*capa[dst] }
	for _, src := range p.Clients {
		from := map[string]string{src.ID: ""}
		queue := []string{src.ID}
		for len(queue) > 0 {
			a := queue[0]
			queue = queue[1:]
			for _, b := range p.Clients {
				if _, seen := from[b.ID]; seen {
					continue
				}
				for _, task := range runs[a] {
					if caughtUpOn(in, b.ID, task) {
						from[b.ID] = a
						queue = append(queue, b.ID)
						break
					}
				}
				if _, seen := from[b.ID]; seen && worth(src.ID, b.ID) {
					path := b.ID
					for c := a; c != ""; c = from[c] {
						path = c + " -> " + path
					}
					return path
				}
			}
		}
	}
	return ""
}
