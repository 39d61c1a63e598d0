package assignor

import (
	"fmt"
	"testing"
)

// benchRacks gives the 1,000 x 10,000 layered scenario three broker racks,
// the clients' zones, and per task an input, a changelog and an output
// partition at replication factor 2 over rotating pairs of racks.
func benchRacks(in Input, strategy string) Input {
	zone := func(i int) string { return fmt.Sprintf("eu-central-1%c", 'a'+i%3) }
	ra := &RackAwareness{RackAwareStrategy: strategy, TrafficCost: DefaultTrafficCost, NonOverlapCost: DefaultNonOverlapCost,
		ClientRackTag: "zone", Tasks: make([]TaskRacks, in.Tasks)}
	for t := range ra.Tasks {
		ps := make([]PartitionRacks, 3)
		for i, role := range []string{RoleInput, RoleChangelog, RoleOutput} {
			a, b := zone(t*7+i), zone(t*7+i+1+t%2)
			ps[i] = PartitionRacks{Topic: role, Partition: int32(t), Role: role, Replicas: []string{a, b}, Leader: a}
		}
		ra.Tasks[t] = TaskRacks{Task: t, Partitions: ps}
	}
	in.RackAwareness = ra
	return in
}

// BenchmarkAssignRacks1000x10000 plans the layered 1,000 x 10,000 scenario
// with partition racks, under none and min_traffic: from scratch, steady
// (the plan fed back, every replica caught up) and after losing zone
// eu-central-1b. It reports the plan's cross-zone total in partition flows.
func BenchmarkAssignRacks1000x10000(b *testing.B) {
	for _, strategy := range []string{StrategyNone, StrategyMinTraffic} {
		fresh := benchRacks(benchInput(layered), strategy)
		p, err := Assign(fresh)
		if err != nil {
			b.Fatal(err)
		}
		steady := feedBack(fresh, p)
		lost := steady
		lost.Clients = nil
		for i, c := range steady.Clients {
			if i%3 != 1 {
				lost.Clients = append(lost.Clients, c)
			}
		}
		for _, bc := range []struct {
			name string
			in   Input
		}{{"fresh", fresh}, {"steady", steady}, {"zone-lost", lost}} {
			b.Run(strategy+"/"+bc.name, func(b *testing.B) {
				b.ReportAllocs()
				var p *Plan
				cpu0 := cpuTime()
				for b.Loop() {
					if p, err = Assign(bc.in); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(p.CrossZone.Total, "cross-zone-flows")
			})
		}
	}
}

// BenchmarkAssignRacksFewClients plans 10,000 tasks on 3 clients (one per
// zone) with partition racks under min_traffic, from scratch and steady:
// thousands of actives per client, the swaps' worst case.
func BenchmarkAssignRacksFewClients(b *testing.B) {
	in := benchInput(layered)
	in.Clients = in.Clients[:3]
	fresh := benchRacks(in, StrategyMinTraffic)
	p, err := Assign(fresh)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		in   Input
	}{{"fresh", fresh}, {"steady", feedBack(fresh, p)}} {
		b.Run(bc.name, func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := Assign(bc.in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
