package balancer

import (
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/tags"
)

func goldenSubscription(v uint8) Subscription {
	s := Subscription{
		Version: v, LatestSupported: max(v, 2), ProcessID: "p1", Endpoint: "h:1",
		Tags: tags.MustSet("zone", "a"), Capacity: 2, PlanGeneration: 7,
		PlanActive: []int32{0, 3}, PlanStandby: []int32{1}, PlanWarmup: nil,
		ProbeSeq: 1, Checkpoints: []Checkpoint{{Task: 1, Offset: 300}, {Task: 3, Offset: 5}},
		Build: "b",
	}
	if v >= Version5 {
		s.Rates = []TaskRate{{Task: 1, Input: 100, Changelog: 20}, {Task: 3, Input: 300, Output: 7}}
	}
	return s
}

func goldenAssignment(v uint8) AssignmentData {
	p := &Placement{
		Generation: 8,
		Members: []Member{
			{ProcessID: "p1", Endpoint: "h:1", Tags: tags.MustSet("zone", "a"), Capacity: 1, Build: "b"},
			{ProcessID: "p2", Endpoint: "h:2", Tags: tags.MustSet("zone", "b"), Capacity: 1},
		},
		Tasks: []Replicas{
			{Active: 0, Standbys: []int{1}},
			{Active: NoMember, Standbys: nil, Warmups: []int{1}},
		},
		Quality: assignor.Quality{StandbyShortfall: 1},
	}
	return AssignmentData{
		Version: v, CommonVersion: v, Generation: 8,
		Active: []int32{0}, Pending: []int32{1}, ProbingDeadline: 1000,
		Placement: p,
	}
}

// goldenAssignmentV3 is p2's assignment in the placement of
// goldenAssignment: a standby and a warmup, both probe triggers.
func goldenAssignmentV3() AssignmentData {
	a := goldenAssignment(Version3)
	a.Active, a.Pending = nil, nil
	a.Standby, a.Warmup, a.ProbeTriggers = []int32{0}, []int32{1}, []int32{0, 1}
	return a
}

// goldenAssignmentV4 is goldenAssignmentV3 with the leader's settings in
// its placement.
func goldenAssignmentV4() AssignmentData {
	a := goldenAssignmentV3()
	a.Version, a.CommonVersion = Version4, Version4
	p := *a.Placement
	p.Settings = &assignor.Settings{NumStandbyReplicas: 1, AcceptableRecoveryLag: 10000, MaxWarmupReplicas: 2, RackAwareAssignmentTags: tags.Keys{"zone"}}
	a.Placement = &p
	return a
}

// goldenAssignmentV5 is goldenAssignmentV4 in version 5.
func goldenAssignmentV5() AssignmentData {
	a := goldenAssignmentV4()
	a.Version, a.CommonVersion = Version5, Version5
	return a
}

func unixMilli(ms int64) time.Time { return time.UnixMilli(ms) }
