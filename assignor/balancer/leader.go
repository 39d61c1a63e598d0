package balancer

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rackstream/rackstream/assignor"
)

// memberOverheadBytes is what the broker stores per member besides its
// subscription and assignment (member id, client id and host, timeouts),
// counted generously when deciding whether the placement fits inline.
const memberOverheadBytes = 256

// brokerGroupRecordBytes is the broker's default limit on one generation's
// group-metadata record: __consumer_offsets' max.message.bytes, 1048588
// (calibrated in docs/lab/balancer.md).
const brokerGroupRecordBytes = 1048588

// memberState is the leader's reading of one member's join metadata.
type memberState struct {
	id     string
	sub    *Subscription // nil: rejected or newer than the leader
	future bool          // joined with a version newer than the leader's
	reason string        // why it was rejected
}

// groupBalancer is the leader's balancer of one generation.
type groupBalancer struct {
	b       *Balancer
	cb      *kgo.ConsumerBalancer
	members map[string]*memberState
	order   []string // member ids as the coordinator listed them
	rawSize int      // bytes of every member's join metadata
	racks   Racks    // the partition racks this generation plans with; nil: none known
}

// MemberBalancer implements kgo.GroupBalancer. It decodes every member's
// metadata before kgo.NewConsumerBalancer sees it: a member whose metadata
// is not a ConsumerMemberMetadata, whose UserData is not a Subscription, or
// whose process id another member already uses is replaced by an empty
// ConsumerMemberMetadata (no topics, no owned partitions), so that it gets
// an empty assignment, its claims cause no revocation, and the group goes on.
func (b *Balancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	if err := b.Err(); err != nil {
		return nil, nil, err
	}
	_, cb, err := b.newGroupBalancer(members)
	if err != nil {
		return nil, nil, err
	}
	topics := maps.Clone(cb.MemberTopics())
	if topics == nil {
		topics = make(map[string]struct{})
	}
	for _, t := range b.s.InputTopics {
		topics[t] = struct{}{}
	}
	return cb, topics, nil
}

// newGroupBalancer reads the members' join metadata into the balancer of
// one generation, and kgo's consumer balancer around it.
func (b *Balancer) newGroupBalancer(members []kmsg.JoinGroupResponseMember) (*groupBalancer, *kgo.ConsumerBalancer, error) {
	g := &groupBalancer{b: b, members: make(map[string]*memberState, len(members))}
	sanitized := make([]kmsg.JoinGroupResponseMember, 0, len(members))
	byProcess := make(map[string]string)
	empty := kmsg.NewConsumerMemberMetadata()
	emptyBytes := empty.AppendTo(nil)
	// Members arrive sorted by member id; the first of a duplicated
	// process id keeps it.
	for _, m := range members {
		if _, dup := g.members[m.MemberID]; dup {
			continue // kgo drops repeated member ids too
		}
		g.rawSize += len(m.ProtocolMetadata) + memberOverheadBytes
		st := &memberState{id: m.MemberID}
		g.members[m.MemberID] = st
		g.order = append(g.order, m.MemberID)
		meta := kmsg.NewConsumerMemberMetadata()
		if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
			st.reason = fmt.Sprintf("join metadata is not a consumer member metadata (%d bytes): %v", len(m.ProtocolMetadata), err)
		} else if sub, err := DecodeSubscription(meta.UserData, b.s.wireVersion); errors.Is(err, ErrNewerVersion) {
			st.future = true
			st.sub = nil
			b.log.Info("member joined with a newer wire version; answering in ours so that it rejoins in it",
				"member_id", m.MemberID, "its_version", sub.Version, "our_version", b.s.wireVersion)
		} else if err != nil {
			st.reason = err.Error()
		} else if other, dup := byProcess[sub.ProcessID]; dup {
			st.reason = fmt.Sprintf("process id %q is already used by member %s", sub.ProcessID, other)
		} else if missing := b.missingKeys(&sub); missing != "" {
			st.reason = fmt.Sprintf("process %q lacks the client tag %q that rack.aware.assignment.tags names", sub.ProcessID, missing)
		} else {
			byProcess[sub.ProcessID] = m.MemberID
			if ep, err := checkEndpoint(sub.Endpoint); err != nil {
				b.noteBadEndpoint(m.MemberID, sub.ProcessID, sub.Endpoint, err)
				sub.Endpoint = ep
			}
			st.sub = &sub
		}
		if st.sub == nil {
			m.ProtocolMetadata = emptyBytes
		}
		sanitized = append(sanitized, m)
	}
	b.warnRejected(g)
	cb, err := kgo.NewConsumerBalancer(g, sanitized)
	if err != nil { // unreachable: every metadata decodes
		return nil, nil, fmt.Errorf("rackstream balancer: %w", err)
	}
	g.cb = cb
	return g, cb, nil
}

// missingKeys returns a rack-aware key the subscription's tags lack, or "".
func (b *Balancer) missingKeys(sub *Subscription) string {
	for _, k := range b.s.Placement.RackAwareAssignmentTags {
		if _, ok := sub.Tags.Get(k); !ok {
			return k
		}
	}
	return ""
}

// warnRejected logs one warning and counts once per rejected member id.
func (b *Balancer) warnRejected(g *groupBalancer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range b.warned {
		if _, ok := g.members[id]; !ok {
			delete(b.warned, id)
		}
	}
	b.forgetNotes(g.members)
	for _, id := range g.order {
		st := g.members[id]
		if st.sub != nil || st.future || b.warned[id] {
			continue
		}
		b.warned[id] = true
		b.rejectedMembers.Add(1)
		b.log.Warn("member's join metadata is unusable: it gets an empty assignment and its owned-partition claims are ignored",
			"member_id", id, "reason", st.reason)
	}
}

// rejectFromTheFuture rejects members whose metadata claims a generation
// that has not happened yet: their owned partitions or last plan cannot be
// real, and honouring them would revoke partitions from their true owners.
// (Claims of past generations stay: a member that missed rebalances may
// really still own what it claims, and revoking it is the safe side.)
func (g *groupBalancer) rejectFromTheFuture(cb *kgo.ConsumerBalancer, generation int32) {
	rejected := false
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		st := g.members[m.MemberID]
		if st == nil || st.sub == nil {
			return
		}
		switch {
		case meta.Generation >= generation:
			st.reason = fmt.Sprintf("claims to own partitions as of generation %d while generation %d is being balanced", meta.Generation, generation)
		case st.sub.PlanGeneration >= generation:
			st.reason = fmt.Sprintf("reports a plan of generation %d while generation %d is being balanced", st.sub.PlanGeneration, generation)
		default:
			return
		}
		st.sub = nil
		meta.Topics = nil
		meta.OwnedPartitions = nil
		rejected = true
	})
	if rejected {
		g.b.warnRejected(g)
	}
}

// Balance implements kgo.ConsumerBalancerBalance; errors go to cb.SetError.
func (g *groupBalancer) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	into, err := g.balance(cb, topics)
	if err != nil {
		g.b.log.Error("balance failed", "err", err)
		cb.SetError(err)
		return nil
	}
	return into
}

func (g *groupBalancer) balance(cb *kgo.ConsumerBalancer, topics map[string]int32) (kgo.IntoSyncAssignment, error) {
	generation := cb.Info().Generation
	g.rejectFromTheFuture(cb, generation)
	g.warnCoPartitioning(topics)
	ends, endErr := g.b.fetchEnds()
	g.racks = g.b.partitionRacks()
	gp, err := g.plan(cb, topics, generation, ends, endErr == nil)
	if err != nil {
		return nil, err
	}
	for pid, ts := range gp.beyond {
		g.b.noteBeyondEnd(gp.memberOf[pid], pid, ts)
	}
	return g.deliver(gp), nil
}

// taskCount is the number of tasks: the most partitions of any input.
func (g *groupBalancer) taskCount(topics map[string]int32) int {
	n := 0
	for _, t := range g.b.s.InputTopics {
		n = max(n, int(topics[t]))
	}
	return n
}

// warnCoPartitioning logs the inputs whose partition count is not the
// task count.
func (g *groupBalancer) warnCoPartitioning(topics map[string]int32) {
	numTasks := g.taskCount(topics)
	for _, t := range g.b.s.InputTopics {
		if int(topics[t]) != numTasks {
			g.b.log.Error("input topics are not co-partitioned; tasks beyond a topic's partition count get no partition of it",
				"topic", t, "partitions", topics[t], "tasks", numTasks)
		}
	}
}

// probeTriggers returns, per process id, the standby and warmup tasks
// whose catch-up would let a plan that asks for probing progress: those the
// process lagged on beyond acceptable.recovery.lag at plan time (or whose
// lag is unknown) and whose active is more loaded, per unit of capacity,
// than the process would be with one more active, the assignor's own test
// for a balancing move. Tasks are ascending.
func probeTriggers(plan *assignor.Plan, in *assignor.Input) map[string][]int32 {
	if !plan.ProbingRebalanceNeeded {
		return nil
	}
	idx := make(map[string]int, len(in.Clients))
	for i := range in.Clients {
		idx[in.Clients[i].ID] = i
	}
	load := make([]int64, len(in.Clients))
	for _, tp := range plan.Tasks {
		if i, ok := idx[tp.Active]; ok {
			load[i]++
		}
	}
	capa := func(i int) int64 { return int64(max(in.Clients[i].Capacity, 1)) }
	out := make(map[string][]int32)
	for _, tp := range plan.Tasks { // in task order: lists come out ascending
		src, ok := idx[tp.Active]
		if !ok {
			continue
		}
		for _, ids := range [2][]string{tp.Standby, tp.Warmup} {
			for _, id := range ids {
				dst, ok := idx[id]
				if !ok || dst == src {
					continue
				}
				if lag, known := in.Clients[dst].Lags[tp.Task]; known && lag <= in.AcceptableRecoveryLag {
					continue
				}
				if (load[dst]+1)*capa(src) < load[src]*capa(dst) {
					out[id] = append(out[id], int32(tp.Task))
				}
			}
		}
	}
	return out
}

func activeOf(plan *assignor.Plan, task int) string {
	if task < len(plan.Tasks) {
		return plan.Tasks[task].Active
	}
	return ""
}

// partitionsBytes estimates the consumer-protocol bytes of an assignment's
// topic partitions.
func partitionsBytes(ts map[string][]int32) int {
	n := 16
	for t, ps := range ts {
		n += 8 + len(t) + 4*len(ps)
	}
	return n
}

// input builds the assignor's input from the members' subscriptions. It
// also returns, per process id, the tasks whose checkpoint claims lie beyond
// the changelog end (claimedLag): their lag is left unknown.
func (g *groupBalancer) input(subs []*Subscription, numTasks int, ends endSums, haveEnds bool) (assignor.Input, map[string][]int32) {
	s := &g.b.s
	in := assignor.Input{Settings: s.Placement, Tasks: numTasks}
	// A task's previous active is the claim of the newest plan.
	type claim struct {
		gen int32
		pid string
	}
	actives := make(map[int32]claim)
	for _, sub := range subs {
		for _, t := range sub.PlanActive {
			if c, ok := actives[t]; !ok || sub.PlanGeneration > c.gen {
				actives[t] = claim{sub.PlanGeneration, sub.ProcessID}
			}
		}
	}
	beyond := make(map[string][]int32)
	stateless := len(s.ChangelogTopics) == 0
	var empty []int // tasks whose changelogs are empty: caught up anywhere
	if haveEnds && !stateless {
		for t := range numTasks {
			if ends.sum(int32(t)) == 0 {
				empty = append(empty, t)
			}
		}
	}
	for _, sub := range subs {
		c := assignor.Client{
			ID:       sub.ProcessID,
			Tags:     sub.Tags.Map(),
			Capacity: sub.Capacity,
			Lags:     make(map[int]int64),
		}
		roles := make(map[int32]bool)
		for _, t := range sub.PlanActive {
			if int(t) < numTasks && actives[t].pid == sub.ProcessID {
				c.PreviousActive = append(c.PreviousActive, int(t))
				roles[t] = true
			}
		}
		for _, t := range sub.PlanStandby {
			if int(t) < numTasks && !roles[t] {
				c.PreviousStandby = append(c.PreviousStandby, int(t))
				roles[t] = true
			}
		}
		for _, t := range sub.PlanWarmup {
			if int(t) < numTasks && !roles[t] {
				c.PreviousWarmup = append(c.PreviousWarmup, int(t))
				roles[t] = true
			}
		}
		switch {
		case stateless:
			for t := range numTasks {
				c.Lags[t] = 0
			}
		case haveEnds:
			for _, t := range empty {
				c.Lags[t] = 0
			}
			for _, cp := range sub.Checkpoints {
				if int(cp.Task) >= numTasks {
					continue
				}
				if lag, known := claimedLag(ends.sum(cp.Task), cp.Offset); known {
					c.Lags[int(cp.Task)] = lag
				} else {
					delete(c.Lags, int(cp.Task)) // not even an empty changelog's 0
					beyond[sub.ProcessID] = append(beyond[sub.ProcessID], cp.Task)
				}
			}
		default: // no end offsets: what each member held counts as caught up
			for _, t := range c.PreviousActive {
				c.Lags[t] = 0
			}
			for _, t := range c.PreviousStandby {
				c.Lags[t] = 0
			}
		}
		in.Clients = append(in.Clients, c)
	}
	return in, beyond
}

// placement turns the plan into the wire placement after the hand-off.
func (g *groupBalancer) placement(plan *assignor.Plan, subs []*Subscription, held map[int]bool, generation int32, numTasks int) *Placement {
	p := &Placement{Generation: generation, Quality: plan.Quality, Settings: g.b.s.placementSettings(), CrossZone: plan.CrossZone}
	idx := make(map[string]int, len(subs))
	for i, sub := range subs {
		idx[sub.ProcessID] = i
		p.Members = append(p.Members, Member{
			ProcessID: sub.ProcessID,
			Endpoint:  sub.Endpoint,
			Tags:      sub.Tags,
			Capacity:  sub.Capacity,
			Build:     sub.Build,
		})
	}
	if numTasks > 0 {
		p.Tasks = make([]Replicas, numTasks)
	}
	for i := range p.Tasks {
		p.Tasks[i].Active = NoMember
	}
	for _, tp := range plan.Tasks {
		if tp.Task < 0 || tp.Task >= numTasks {
			continue
		}
		r := &p.Tasks[tp.Task]
		if a, ok := idx[tp.Active]; ok && !held[tp.Task] {
			r.Active = a
		}
		for _, id := range tp.Standby {
			r.Standbys = append(r.Standbys, idx[id])
		}
		for _, id := range tp.Warmup {
			r.Warmups = append(r.Warmups, idx[id])
		}
		slices.Sort(r.Standbys)
		slices.Sort(r.Warmups)
	}
	return p
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// syncAssignment is the leader's answer: kgo's consumer assignments with our
// user data, one for every member (a member left out would get nil bytes).
type syncAssignment struct {
	plan     map[string]map[string][]int32
	userData map[string][]byte
}

// IntoSyncAssignment implements kgo.IntoSyncAssignment.
func (s *syncAssignment) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment {
	ids := slices.Sorted(maps.Keys(s.userData))
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(ids))
	for _, id := range ids {
		var ka kmsg.ConsumerMemberAssignment
		for _, t := range slices.Sorted(maps.Keys(s.plan[id])) {
			ps := s.plan[id][t]
			if len(ps) == 0 {
				continue
			}
			slices.Sort(ps)
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic = t
			at.Partitions = ps
			ka.Topics = append(ka.Topics, at)
		}
		ka.UserData = s.userData[id]
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID = id
		sa.MemberAssignment = ka.AppendTo(nil)
		out = append(out, sa)
	}
	return out
}
