package balancer

import (
	"slices"
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/tags"
)

// Member is one instance in a placement.
type Member struct {
	// ProcessID is the instance's stable id.
	ProcessID string
	// Endpoint is its application.server (host:port), possibly empty:
	// empty too when the member announced one that is not a plain
	// host:port (the leader drops it; see internal/endpoint).
	Endpoint string
	// Tags are its client tags.
	Tags tags.Set
	// Capacity is its num.stream.threads.
	Capacity int
	// Build is the member's software build string (wire version 2 and up;
	// empty from version-1 members).
	Build string
}

// NoMember is the index of a task's active while the task is in transit
// (revoked from its previous owner, not yet assigned to the next) or when
// the group has no members.
const NoMember = -1

// Replicas says where one task's replicas are, as indexes into
// Placement.Members.
type Replicas struct {
	// Active is the member processing the task, or NoMember.
	Active int
	// Standbys keep a copy of the task's state, in member order.
	Standbys []int
	// Warmups are restoring the task's state ahead of becoming its active.
	Warmups []int
}

// Placement is the whole placement of one generation, as every member of the
// group sees it: identical bytes on every member. It is immutable once
// published: share it freely, never modify it.
type Placement struct {
	// Generation is the group generation the placement belongs to.
	Generation int32
	// Members are the instances, in process-id order.
	Members []Member
	// Tasks[i] is task i (partition slot i).
	Tasks []Replicas
	// Quality is the plan's quality (package assignor's JSON shape).
	Quality assignor.Quality
	// ProbingDeadline, when not zero, is when members will rebalance to
	// complete pending moves if no warmup has caught up sooner.
	ProbingDeadline time.Time
	// Settings are the assignment settings the leader planned this
	// generation with, so that every member (and a replan of this
	// placement) knows them rather than guessing from its own
	// configuration; nil when the group speaks wire version 3 or older.
	Settings *assignor.Settings
	// CrossZone is the plan's expected cross-zone traffic, as the leader
	// computed it from the partition racks and byte rates it knew (package
	// assignor's JSON shape); nil when it knew no racks or the group
	// speaks wire version 4 or older.
	CrossZone *assignor.CrossZone
}

// placementSettings returns a copy of s.Placement for a placement to carry.
func (s *Settings) placementSettings() *assignor.Settings {
	p := s.Placement
	p.RackAwareAssignmentTags = slices.Clone(p.RackAwareAssignmentTags)
	return &p
}

// MemberIndex returns the index of the member with the given process id, or
// NoMember.
func (p *Placement) MemberIndex(processID string) int {
	i, ok := slices.BinarySearchFunc(p.Members, processID, func(m Member, id string) int {
		switch {
		case m.ProcessID < id:
			return -1
		case m.ProcessID > id:
			return 1
		}
		return 0
	})
	if !ok {
		return NoMember
	}
	return i
}

// Active returns the member processing task and whether it has one (a task
// in transit or out of range has none).
func (p *Placement) Active(task int32) (Member, bool) {
	if task < 0 || int(task) >= len(p.Tasks) || p.Tasks[task].Active == NoMember {
		return Member{}, false
	}
	return p.Members[p.Tasks[task].Active], true
}

// Standbys returns the members keeping standbys of task.
func (p *Placement) Standbys(task int32) []Member {
	if task < 0 || int(task) >= len(p.Tasks) {
		return nil
	}
	out := make([]Member, len(p.Tasks[task].Standbys))
	for i, m := range p.Tasks[task].Standbys {
		out[i] = p.Members[m]
	}
	return out
}

// TasksWithoutStandby counts the tasks that have no standby at all (a
// warmup is no standby): each would have to restore its state from the
// changelog if its active were lost. With num.standby.replicas=0 it is every
// task. It complements Quality.StandbyShortfall, which sums the standbys
// missing over all tasks, and Quality.Dimensions[i].TasksRepeating, which
// counts tasks whose replicas share a tag value more than they must: metrics
// export all three.
func (p *Placement) TasksWithoutStandby() int {
	n := 0
	for i := range p.Tasks {
		if len(p.Tasks[i].Standbys) == 0 {
			n++
		}
	}
	return n
}

// Assignment is what one member was given in one generation.
type Assignment struct {
	// Generation is the group generation.
	Generation int32
	// Active are the tasks whose input partitions this member owns from
	// this generation on.
	Active []int32
	// Pending are tasks planned to become active here once their previous
	// owner has revoked them (a cooperative hand-off in progress): they
	// arrive in a follow-up rebalance.
	Pending []int32
	// Standby are the tasks whose changelogs this member tails.
	Standby []int32
	// Warmup are the tasks this member restores ahead of a move.
	Warmup []int32
	// ProbeTriggers are those of its standby and warmup tasks that lagged
	// at plan time and whose catch-up lets the plan move an active here:
	// the member asks for a probing rebalance once one has caught up.
	ProbeTriggers []int32
	// Placement is the whole placement of this generation. It is nil only
	// when a published placement could not be read (the member keeps
	// retrying; [Balancer.Placement] then still returns the previous one).
	Placement *Placement
}

// Stats are counters of the balancer's life, for metrics.
type Stats struct {
	// RejectedMembers counts, on a leader, members whose join metadata
	// could not be used (undecodable, or a duplicated process id): each got
	// an empty assignment.
	RejectedMembers uint64
	// RejectedAssignments counts assignments this member rejected as
	// invalid (it then rejoined).
	RejectedAssignments uint64
	// PlacementsPublished counts placements this member, as leader, wrote
	// to the placement topic.
	PlacementsPublished uint64
	// ProbingRebalances counts rebalances this member asked for because a
	// probe trigger or warmup caught up, the probing interval elapsed, or
	// (as leader) a plan must be retried.
	ProbingRebalances uint64
	// EndOffsetFailures counts leader plans made without fresh end offsets
	// (the previous placement was kept and a retry scheduled).
	EndOffsetFailures uint64
	// LastGenerationBytes is, on the last leader, the subscription plus
	// assignment bytes of the last generation it balanced: what the broker
	// stores in one group-metadata record.
	LastGenerationBytes int
	// CheckpointsBeyondEnd counts, on a leader, members that claimed a
	// store checkpoint beyond the changelog end (their lag on those tasks
	// counted as unknown), once per member while it stays in the group.
	CheckpointsBeyondEnd uint64
	// RackAwarenessOff is, on the last leader, what rack-aware placement
	// was off for in the last plan it made, by reason (Off...): a gauge,
	// empty when it saw every rack.
	RackAwarenessOff map[string]int
	// InvalidEndpoints counts, on a leader, members whose announced
	// endpoint was not a plain host:port (it was dropped from the
	// placement: no query is forwarded to them), once per member while it
	// stays in the group.
	InvalidEndpoints uint64
}
