package balancer

import (
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/tags"
)

func goldenSubscription(v uint8) Subscription {
	return Subscription{
		Version: v, LatestSupported: 2, ProcessID: "p1", Endpoint: "h:1",
		Tags: tags.MustSet("zone", "a"), Capacity: 2, PlanGeneration: 7,
		PlanActive: []int32{0, 3}, PlanStandby: []int32{1}, PlanWarmup: nil,
		ProbeSeq: 1, Checkpoints: []Checkpoint{{Task: 1, Offset: 300}, {Task: 3, Offset: 5}},
		Build: "b",
	}
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

func unixMilli(ms int64) time.Time { return time.UnixMilli(ms) }
