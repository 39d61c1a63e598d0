package balancer

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The leader's balance, in two steps (leader.go's balance calls them):
// plan decides the generation from what the leader read (the members'
// subscriptions, the topics' partition counts, the changelogs' end
// offsets) with no I/O of its own, and deliver does the I/O the decision
// needs: publishing a placement too large to travel inline, and
// encoding every member's assignment.

// generationPlan is what the leader decided for one generation.
type generationPlan struct {
	generation int32
	// common is the wire version every member understands.
	common uint8
	// placement is the placement after the cooperative hand-off.
	placement *Placement
	// deadline is the probing rebalance's, in Unix milliseconds (0: none).
	deadline int64
	// partitions are kgo's member id -> topic -> partitions, with the
	// partitions their previous owner must first revoke held back.
	partitions map[string]map[string][]int32
	// owns are the members' assignments by member id, without their
	// placement (deliver attaches it, inline or published).
	owns map[string]AssignmentData
	// body is the placement encoded in common, shared by every inline
	// assignment.
	body []byte
	// inline reports that the generation, placement inline in every
	// assignment, fits under Settings.MaxInlineBytes; bytes is its size so.
	inline bool
	bytes  int
	// beyond are, per process id, the tasks whose claimed checkpoints lie
	// beyond the changelog end; memberOf maps process ids to member ids.
	beyond   map[string][]int32
	memberOf map[string]string
}

// plan decides the generation: each task's active, standbys and warmups
// (package assignor's plan over the usable members), the partitions kgo
// hands out after holding back those in transit, the placement and every
// member's assignment. It reads the balancer's settings and the members'
// subscriptions and does no I/O.
func (g *groupBalancer) plan(cb *kgo.ConsumerBalancer, topics map[string]int32, generation int32, ends endSums, haveEnds bool) (*generationPlan, error) {
	s := &g.b.s
	numTasks := g.taskCount(topics)

	// The usable members, in process-id order.
	var subs []*Subscription
	memberOf := make(map[string]string) // process id -> member id
	common := s.wireVersion
	for _, id := range g.order {
		if st := g.members[id]; st.sub != nil {
			subs = append(subs, st.sub)
			memberOf[st.sub.ProcessID] = id
			common = min(common, st.sub.LatestSupported)
		}
	}
	slices.SortFunc(subs, func(a, b *Subscription) int { return cmpString(a.ProcessID, b.ProcessID) })

	in, beyond := g.input(subs, numTasks, ends, haveEnds)
	var off map[string]int
	in.RackAwareness, off = rackAwareness(s, g.racks, subs, numTasks)
	plan, err := s.assign(in)
	if err != nil {
		return nil, fmt.Errorf("placement of generation %d: %w", generation, err)
	}
	var unknown []string
	if plan.CrossZone != nil {
		unknown = plan.CrossZone.Unknown
	}
	g.b.noteRackAwareness(off, unknown)

	// Partitions of each task go to its active; AdjustCooperative then
	// holds back those their current owner must first revoke.
	bp := cb.NewPlan()
	byID := make(map[string]*kmsg.JoinGroupResponseMember)
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, _ *kmsg.ConsumerMemberMetadata) { byID[m.MemberID] = m })
	for _, tp := range plan.Tasks {
		m := byID[memberOf[tp.Active]]
		if m == nil {
			continue
		}
		for _, t := range s.InputTopics {
			if int32(tp.Task) < topics[t] {
				bp.AddPartition(m, t, int32(tp.Task))
			}
		}
	}
	bp.AdjustCooperative(cb)
	held := make(map[int]bool) // tasks in transit
	asMap := bp.AsMemberIDMap()
	assignedTo := make(map[string]map[int32]string, len(s.InputTopics)) // topic -> partition -> member id
	for mid, ts := range asMap {
		for t, ps := range ts {
			if assignedTo[t] == nil {
				assignedTo[t] = make(map[int32]string)
			}
			for _, p := range ps {
				assignedTo[t][p] = mid
			}
		}
	}
	for _, tp := range plan.Tasks {
		mid := memberOf[tp.Active]
		for _, t := range s.InputTopics {
			if int32(tp.Task) < topics[t] && assignedTo[t][int32(tp.Task)] != mid {
				held[tp.Task] = true
			}
		}
	}
	for mid, ts := range asMap { // a task moves whole: hold all its partitions
		for t, ps := range ts {
			ts[t] = slices.DeleteFunc(ps, func(p int32) bool { return held[int(p)] && memberOf[activeOf(plan, int(p))] == mid })
		}
	}

	p := g.placement(plan, subs, held, generation, numTasks)
	if p.CrossZone != nil {
		cz := *p.CrossZone
		cz.RackAwareness = in.RackAwareness // for what-ifs of the live placement
		p.CrossZone = &cz
	}
	var deadline int64
	if plan.ProbingRebalanceNeeded {
		deadline = time.Now().Add(s.ProbingInterval).UnixMilli()
		p.ProbingDeadline = time.UnixMilli(deadline)
	}

	var triggers map[string][]int32
	if common >= Version3 {
		triggers = probeTriggers(plan, &in)
	}

	// Every member's roles, in one pass over the tasks (ascending).
	roles := make([]AssignmentData, len(p.Members))
	for t, r := range p.Tasks {
		if r.Active != NoMember {
			roles[r.Active].Active = append(roles[r.Active].Active, int32(t))
		} else if held[t] {
			if i := p.MemberIndex(activeOf(plan, t)); i != NoMember {
				roles[i].Pending = append(roles[i].Pending, int32(t))
			}
		}
		for _, m := range r.Standbys {
			roles[m].Standby = append(roles[m].Standby, int32(t))
		}
		for _, m := range r.Warmups {
			roles[m].Warmup = append(roles[m].Warmup, int32(t))
		}
	}
	own := func(id string) AssignmentData {
		a := AssignmentData{Version: common, CommonVersion: common, Generation: generation, ProbingDeadline: deadline}
		st := g.members[id]
		if st.sub == nil {
			a.Rejoin = st.future
			return a
		}
		r := roles[p.MemberIndex(st.sub.ProcessID)]
		a.Active, a.Pending, a.Standby, a.Warmup = r.Active, r.Pending, r.Standby, r.Warmup
		// Tasks in transit wait for a second round, which the group
		// starts when their previous owners rejoin after revoking them
		// and ends when every member has joined it: the others only
		// notice at their next heartbeat (up to heartbeat.interval.ms).
		// kgo cancels a revoking member's offset fetch for the tasks it
		// gained in this round (a failover's, after a clean leave) when
		// it rejoins, so they would wait for that second round too, a
		// large part of a failover after SIGTERM. Every member rejoins at
		// once instead.
		a.Rejoin = len(held) > 0
		if deadline > 0 {
			a.ProbeTriggers = triggers[st.sub.ProcessID]
		}
		return a
	}
	// Size the generation with the placement inline: the placement is
	// encoded once and shared by every assignment.
	var body enc
	appendPlacement(&body, p, common)
	owns := make(map[string]AssignmentData, len(g.order))
	total := g.rawSize
	for _, id := range g.order {
		a := own(id)
		owns[id] = a
		total += len(a.AppendTo(nil)) + len(body.b) + partitionsBytes(asMap[id])
	}
	return &generationPlan{
		generation: generation, common: common, placement: p, deadline: deadline,
		partitions: asMap, owns: owns, body: body.b,
		inline: total <= s.MaxInlineBytes, bytes: total,
		beyond: beyond, memberOf: memberOf,
	}, nil
}

// deliver encodes every member's assignment of gp: with the placement
// inline when it fits, else with a reference to the placement it
// publishes to the placement topic (the I/O of a balance). It warns when
// the generation nears the broker's group-metadata record limit.
func (g *groupBalancer) deliver(gp *generationPlan) *syncAssignment {
	b, s := g.b, &g.b.s
	var ref *PlacementRef
	total := gp.bytes
	if !gp.inline {
		publish := b.publish
		if s.publish != nil {
			publish = s.publish
		}
		var err error
		if ref, err = publish(gp.placement, gp.common); err != nil {
			b.log.Error("cannot publish the placement; members keep their previous one and the leader retries",
				"generation", gp.generation, "err", err)
			b.mu.Lock()
			b.retryAt = time.Now().Add(time.Second)
			b.mu.Unlock()
		}
		total = g.rawSize
	}
	out := &syncAssignment{plan: gp.partitions, userData: make(map[string][]byte, len(g.order))}
	for _, id := range g.order {
		a := gp.owns[id]
		if gp.inline {
			a.Placement, a.encodedPlacement = gp.placement, gp.body
		} else {
			a.Ref = ref
		}
		ud := a.AppendTo(nil)
		out.userData[id] = ud
		if !gp.inline {
			total += len(ud) + partitionsBytes(gp.partitions[id])
		}
	}
	b.lastGenBytes.Store(int64(total))
	if total > brokerGroupRecordBytes*9/10 {
		b.log.Error("this generation's subscriptions and assignments approach the broker's group-metadata record limit; "+
			"SyncGroup will fail with UNKNOWN_SERVER_ERROR beyond it (raise __consumer_offsets max.message.bytes or shrink the group)",
			"generation", gp.generation, "bytes", total, "limit", brokerGroupRecordBytes, "members", len(g.order))
	}
	return out
}
