package assignor

import (
	"fmt"
	"math/rand"
	"testing"
)

// part is a partition of role with its leader's rack and its replicas'.
func part(role, leader string, replicas ...string) PartitionRacks {
	return PartitionRacks{Topic: role, Role: role, Leader: leader, Replicas: replicas}
}

// taskParts names task t's partitions, numbering them by task.
func taskParts(t int, parts ...PartitionRacks) TaskRacks {
	for i := range parts {
		parts[i].Partition = int32(t)
	}
	return TaskRacks{Task: t, Partitions: parts}
}

// withRacks sets in's rack awareness: strategy, the default costs, the
// client rack in tag "zone".
func withRacks(in Input, strategy string, tasks ...TaskRacks) Input {
	in.RackAwareness = &RackAwareness{RackAwareStrategy: strategy, TrafficCost: DefaultTrafficCost,
		NonOverlapCost: DefaultNonOverlapCost, ClientRackTag: "zone", Tasks: tasks}
	return in
}

// withStrategy returns in with another strategy, the rest shared.
func withStrategy(in Input, strategy string) Input {
	ra := *in.RackAwareness
	ra.RackAwareStrategy = strategy
	in.RackAwareness = &ra
	return in
}

// objective is what min_traffic minimises for plan p of in: every active's
// and standby's integer cost (see rackActives and rackStandbys).
func objective(t testing.TB, in Input, p *Plan) int64 {
	t.Helper()
	m, err := newModel(&in)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := placementOf(m, p)
	if err != nil {
		t.Fatal(err)
	}
	return pl.rackCost()
}

// randomRacks adds random rack awareness to a scenario of randomInput: the
// client rack in tag "zone" (added where the scenario has none, sometimes
// missing), 1 to 4 broker racks named like the zones, each task's input,
// changelog and output partitions with 1 to all of them as replicas,
// sometimes a broker without a rack, a task without racks, byte rates.
func randomRacks(r *rand.Rand, in Input, strategy string) Input {
	zoneDim := false
	for _, k := range in.RackAwareAssignmentTags {
		zoneDim = zoneDim || k == "zone"
	}
	R := 1 + r.Intn(4)
	clients := make([]Client, len(in.Clients))
	for i, c := range in.Clients {
		if _, ok := c.Tags["zone"]; !ok {
			tg := make(map[string]string, len(c.Tags)+1)
			for k, v := range c.Tags {
				tg[k] = v
			}
			if zoneDim || r.Intn(12) > 0 {
				tg["zone"] = fmt.Sprintf("z%d", r.Intn(R+1))
			}
			c.Tags = tg
		}
		clients[i] = c
	}
	in.Clients = clients
	racks := func() ([]string, string) {
		n := 1 + r.Intn(R)
		perm := r.Perm(R)
		reps := make([]string, n)
		for i := range reps {
			reps[i] = fmt.Sprintf("z%d", perm[i])
			if r.Intn(60) == 0 {
				reps[i] = ""
			}
		}
		return reps, reps[r.Intn(n)]
	}
	ra := &RackAwareness{RackAwareStrategy: strategy, TrafficCost: 1 + r.Intn(10), NonOverlapCost: r.Intn(3),
		ClientRackTag: "zone"}
	rated := r.Intn(2) == 0
	for t := 0; t < in.Tasks; t++ {
		if r.Intn(40) == 0 {
			continue
		}
		tr := TaskRacks{Task: t}
		for _, role := range []string{RoleInput, RoleInput, RoleChangelog, RoleOutput} {
			if r.Intn(3) == 0 {
				continue
			}
			reps, leader := racks()
			tr.Partitions = append(tr.Partitions, PartitionRacks{Topic: role, Partition: int32(t), Role: role, Replicas: reps, Leader: leader})
		}
		if rated && r.Intn(4) > 0 {
			tr.Rates = &TaskRates{Input: float64(r.Intn(5000)), Changelog: float64(r.Intn(2000)), Output: float64(r.Intn(3000))}
		}
		ra.Tasks = append(ra.Tasks, tr)
	}
	in.RackAwareness = ra
	return in
}
