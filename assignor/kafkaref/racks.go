package kafkaref

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/rackstream/rackstream/assignor"
)

// RackScenarioSeed and RackScenarioCount define the committed list of
// rack-aware scenarios, testdata/rack_scenarios.jsonl, under the same rules
// as ScenarioSeed and ScenarioCount.
const (
	RackScenarioSeed  = 925
	RackScenarioCount = 200
)

// GenerateRackScenarios returns n fresh scenarios (no previous roles) with
// partition racks, drawn from seed: 2 to 4 broker racks; 3 to 24 clients
// over unevenly weighted zones, sometimes one more zone than there are
// broker racks (a zone holding no replica); zone, zone and cluster, or no
// rack-aware keys; 0 to 2 standbys; per task one or two input partitions at
// a replication factor below the number of racks (mostly one below) and
// one changelog partition at replication factor 1. Strategy min_traffic
// with traffic_cost 10 and non_overlap_cost 0: the comparison is of traffic
// alone.
//
// Changelogs have one replica because Kafka Streams counts an active's
// changelog partition as crossing zones when no replica is in its rack, and
// Rackstream when its leader is not: with one replica the two agree, so
// both sides minimise the same function.
func GenerateRackScenarios(seed uint64, n int) []Scenario {
	rng := rand.New(rand.NewPCG(seed, 0x6b69702d393235)) // "kip-925"
	out := make([]Scenario, n)
	for i := range out {
		out[i] = generateRackScenario(rng, fmt.Sprintf("r%03d", i))
	}
	return out
}

func generateRackScenario(rng *rand.Rand, name string) Scenario {
	R := 2 + rng.IntN(3)
	racks := make([]string, R)
	for i := range racks {
		racks[i] = fmt.Sprintf("zone-%c", 'a'+i)
	}
	zones := slices.Clone(racks)
	if rng.IntN(4) == 0 {
		zones = append(zones, fmt.Sprintf("zone-%c", 'a'+R)) // no broker there
	}
	weights := make([]float64, len(zones))
	for i := range weights {
		weights[i] = 0.2 + rng.Float64()
	}
	s := Scenario{Name: name, NumStandbyReplicas: rng.IntN(3), Tasks: 4 + rng.IntN(45)}
	switch rng.IntN(3) {
	case 0:
		s.RackAwareAssignmentTags = []string{"zone"}
	case 1:
		s.RackAwareAssignmentTags = []string{"zone", "cluster"}
	}
	clusters := 1 + rng.IntN(3)
	s.Clients = make([]Client, 3+rng.IntN(22))
	for c := range s.Clients {
		cl := Client{ID: fmt.Sprintf("n%02d", c+1), Capacity: 1, Tags: map[string]string{
			"zone":    zones[weighted(rng, weights)],
			"cluster": "cluster-" + strconv.Itoa(rng.IntN(clusters)),
		}}
		if rng.IntN(6) == 0 {
			cl.Capacity = 2
		}
		s.Clients[c] = cl
	}
	replicas := func(rf int) []string {
		perm := rng.Perm(R)
		rs := make([]string, rf)
		for i := range rs {
			rs[i] = racks[perm[i]]
		}
		return rs
	}
	ra := &assignor.RackAwareness{RackAwareStrategy: assignor.StrategyMinTraffic, TrafficCost: 10, NonOverlapCost: 0,
		ClientRackTag: "zone", Tasks: make([]assignor.TaskRacks, s.Tasks)}
	for t := range ra.Tasks {
		var ps []assignor.PartitionRacks
		for i := range 1 + rng.IntN(2) {
			rf := R - 1
			if rng.IntN(3) == 0 {
				rf = 1 + rng.IntN(R-1)
			}
			rs := replicas(rf)
			ps = append(ps, assignor.PartitionRacks{Topic: "input-" + strconv.Itoa(i), Partition: int32(t),
				Role: assignor.RoleInput, Replicas: rs, Leader: rs[0]})
		}
		rs := replicas(1)
		ps = append(ps, assignor.PartitionRacks{Topic: "changelog", Partition: int32(t),
			Role: assignor.RoleChangelog, Replicas: rs, Leader: rs[0]})
		ra.Tasks[t] = assignor.TaskRacks{Task: t, Partitions: ps}
	}
	s.RackAwareness = ra
	return s
}

// KafkaCost is Kafka Streams' rack-aware cost of plan p of scenario s with
// non_overlap_cost 0: traffic_cost for every input and changelog partition
// of a task with no replica in its active's rack (KafkaActiveCost), and for
// every changelog partition with none in a standby's rack. A client without
// a rack matches none.
func KafkaCost(s Scenario, p *assignor.Plan) int {
	return kafkaCost(s, p, true)
}

// KafkaActiveCost is KafkaCost of the actives alone.
func KafkaActiveCost(s Scenario, p *assignor.Plan) int {
	return kafkaCost(s, p, false)
}

func kafkaCost(s Scenario, p *assignor.Plan, standbys bool) int {
	ra := s.RackAwareness
	rack := map[string]string{}
	for _, c := range s.Clients {
		rack[c.ID] = c.Tags[ra.ClientRackTag]
	}
	parts := map[int][]assignor.PartitionRacks{}
	for _, tr := range ra.Tasks {
		parts[tr.Task] = tr.Partitions
	}
	cost := 0
	crossing := func(task int, client string, standby bool) {
		for _, pr := range parts[task] {
			counted := pr.Role == assignor.RoleChangelog || !standby && pr.Role == assignor.RoleInput
			if counted && !slices.Contains(pr.Replicas, rack[client]) {
				cost += ra.TrafficCost
			}
		}
	}
	for _, tp := range p.Tasks {
		crossing(tp.Task, tp.Active, false)
		if standbys {
			for _, sb := range tp.Standby {
				crossing(tp.Task, sb, true)
			}
		}
	}
	return cost
}
