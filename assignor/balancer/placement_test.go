package balancer

import (
	"fmt"
	"testing"
)

func TestTasksWithoutStandbyCountsTasksWhoseOnlyReplicaIsTheActive(t *testing.T) {
	p := &Placement{Tasks: []Replicas{
		{Active: 0, Standbys: []int{1}},
		{Active: 1},                           // no standby
		{Active: NoMember, Warmups: []int{0}}, // in transit, a warmup only: no standby
		{Active: NoMember, Standbys: []int{0, 1}},
	}}
	if got := p.TasksWithoutStandby(); got != 2 {
		t.Fatalf("TasksWithoutStandby() = %d, want 2", got)
	}
}

func TestPlacementCarriesQualityNumbersForMetrics(t *testing.T) {
	o := newOffsets()
	s := newSim(t, 6)
	// Three members in two zones with two standbys: every task's three
	// replicas repeat a zone, none lacks a standby.
	for i := range 3 {
		st := simSettings(fmt.Sprintf("p%d", i), zoneCluster(i%2), o)
		s.add(fmt.Sprintf("m%d", i), st)
	}
	s.settle("m0", 3)
	for _, m := range s.members {
		p := m.b.Placement()
		q := p.Quality
		if len(q.Dimensions) != 2 || q.Dimensions[0].Tag != "zone" || q.Dimensions[1].Tag != "cluster" {
			t.Fatalf("%s: quality dimensions %+v, want zone then cluster", m.id, q.Dimensions)
		}
		if q.Dimensions[0].Values != 2 || q.Dimensions[0].TasksRepeating != 0 {
			t.Fatalf("%s: zone quality %+v, want 2 values and no task repeating beyond what 2 zones force", m.id, q.Dimensions[0])
		}
		if q.StandbyShortfall != 0 || p.TasksWithoutStandby() != 0 {
			t.Fatalf("%s: standby shortfall %d, tasks without standby %d, want 0 and 0", m.id, q.StandbyShortfall, p.TasksWithoutStandby())
		}
	}
	// Down to one member: every task loses both standbys.
	s.remove("m1")
	s.remove("m2")
	s.settle("m0", 3)
	p := s.member("m0").b.Placement()
	if p.Quality.StandbyShortfall != 12 || p.TasksWithoutStandby() != 6 {
		t.Fatalf("alone: standby shortfall %d, tasks without standby %d, want 12 and 6", p.Quality.StandbyShortfall, p.TasksWithoutStandby())
	}
}
