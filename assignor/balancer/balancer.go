package balancer

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Balancer is one member's side of Rackstream's group protocol: a
// kgo.GroupBalancer (it balances when this member leads), the source of the
// member's join metadata, and the keeper of the placement the member
// receives. Create it with [New], install [Balancer.Opts] on the group's
// kgo client, and read [Balancer.Placement] or subscribe with
// [Settings.OnAssignment].
type Balancer struct {
	s   Settings
	log *slog.Logger

	rejectedMembers     atomic.Uint64
	rejectedAssignments atomic.Uint64
	published           atomic.Uint64
	probes              atomic.Uint64
	endOffsetFailures   atomic.Uint64
	lastGenBytes        atomic.Int64
	beyondEnd           atomic.Uint64
	badEndpoints        atomic.Uint64

	mu        sync.Mutex
	cl        *kgo.Client
	aux       *kgo.Client // publisher / reader of the placement topic, lazily
	staticErr error
	version   uint8 // the version our join metadata is written in
	probeSeq  uint64
	plan      lastPlan        // reported in join metadata
	pending   *AssignmentData // parsed at sync, applied in OnPartitionsAssigned
	cur       Assignment
	placement *Placement
	changed   chan struct{} // closed and replaced whenever cur changes
	warned    map[string]bool
	noted     map[string]map[string]bool // kind of warning -> member ids warned (distrust.go)
	// probing state of this member
	probedFor      map[int32]bool  // triggers and warmups we asked a probing rebalance for, this generation
	probedRoles    *roles          // our roles when we asked, until the next assignment shows the effect
	probeBackoff   time.Duration   // how long to wait after a probe that changed nothing
	nextProbe      time.Time       // no trigger probe before this
	probedDeadline int64           // the deadline we already probed for
	unread         *AssignmentData // the current assignment, while its published placement is unread
	retryAt        time.Time       // leader: rebalance again at this time (end offsets failed)
	endFailStreak  int             // leader: consecutive plans made without end offsets
	loopStop       chan struct{}
	loopDone       chan struct{}
	racksDone      chan struct{}
	// connected closes at the client's first broker connection: the
	// client is fully built then (kgo calls OnNewClient before it is).
	connected      chan struct{}
	connectedOnce  sync.Once
	closeConnected sync.Once

	racks          atomic.Pointer[Racks] // the background loop's latest read (racks.go)
	rackOff        map[string]int        // leader: what rack-aware placement was off for, by reason
	rackOffSummary string                // rackOff as last logged
}

// minProbeBackoff is the first wait after a probing rebalance that left this
// member's roles unchanged; it doubles up to the probing interval.
const minProbeBackoff = time.Second

// roles are one member's tasks in one assignment.
type roles struct{ active, pending, standby, warmup []int32 }

func rolesOf(a *Assignment) *roles {
	return &roles{a.Active, a.Pending, a.Standby, a.Warmup}
}

func (r *roles) same(a *Assignment) bool {
	return slices.Equal(r.active, a.Active) && slices.Equal(r.pending, a.Pending) &&
		slices.Equal(r.standby, a.Standby) && slices.Equal(r.warmup, a.Warmup)
}

// lastPlan is this member's share of the last plan it received.
type lastPlan struct {
	generation              int32
	active, standby, warmup []int32
}

var (
	_ kgo.GroupBalancer      = (*Balancer)(nil)
	_ kgo.HookNewClient      = (*Balancer)(nil)
	_ kgo.HookClientClosed   = (*Balancer)(nil)
	_ kgo.IntoSyncAssignment = (*syncAssignment)(nil)
)

// New returns the balancer for one member, or an error naming every invalid
// setting.
func New(s Settings) (*Balancer, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	s.InputTopics = slices.Clone(s.InputTopics)
	s.ChangelogTopics = slices.Clone(s.ChangelogTopics)
	if _, err := checkEndpoint(s.Endpoint); err != nil {
		s.Logger.Warn("application.server is not a plain host:port: group leaders will drop it and no query will be forwarded to this instance",
			"application_server", quoteForLog(s.Endpoint), "reason", err.Error())
	}
	return &Balancer{
		s:         s,
		log:       s.Logger.With("group", s.ApplicationID, "process_id", s.ProcessID),
		version:   s.wireVersion,
		plan:      lastPlan{generation: -1},
		changed:   make(chan struct{}),
		warned:    make(map[string]bool),
		noted:     make(map[string]map[string]bool),
		probedFor: make(map[int32]bool),
	}, nil
}

// Opts returns the kgo options that make a client a member of the group
// with this balancer: the group id, the input topics, the balancer itself,
// the heartbeat interval, an OnPartitionsAssigned hook and the client hooks
// through which the balancer learns its client. A caller that installs its
// own OnPartitionsAssigned after these must call
// [Balancer.OnPartitionsAssigned] first in it.
//
// The client must not set group.instance.id: see [ErrStaticMembership].
func (b *Balancer) Opts() []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumerGroup(b.s.ApplicationID),
		kgo.ConsumeTopics(b.s.InputTopics...),
		kgo.Balancers(b),
		kgo.HeartbeatInterval(b.s.HeartbeatInterval),
		kgo.OnPartitionsAssigned(b.OnPartitionsAssigned),
		kgo.WithHooks(b),
	}
}

// PlacementTopic is the topic large groups publish their placement to.
func (b *Balancer) PlacementTopic() string { return b.s.ApplicationID + "-placement" }

// Placement returns the latest placement this member knows, nil before the
// first.
func (b *Balancer) Placement() *Placement {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.placement
}

// Assignment returns this member's latest assignment and a channel that is
// closed when a newer one replaces it.
func (b *Balancer) Assignment() (Assignment, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur, b.changed
}

// Stats returns the balancer's counters.
func (b *Balancer) Stats() Stats {
	return Stats{
		RejectedMembers:      b.rejectedMembers.Load(),
		RejectedAssignments:  b.rejectedAssignments.Load(),
		PlacementsPublished:  b.published.Load(),
		ProbingRebalances:    b.probes.Load(),
		EndOffsetFailures:    b.endOffsetFailures.Load(),
		LastGenerationBytes:  int(b.lastGenBytes.Load()),
		CheckpointsBeyondEnd: b.beyondEnd.Load(),
		InvalidEndpoints:     b.badEndpoints.Load(),
		RackAwarenessOff:     b.rackAwarenessOff(),
	}
}

// rackAwarenessOff returns a copy of what the last plan this member led
// kept out of rack-aware placement, by reason.
func (b *Balancer) rackAwarenessOff() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.rackOff)
}

// Err returns ErrStaticMembership if the client was configured with
// group.instance.id (the balancer then refuses every assignment), else nil.
func (b *Balancer) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.staticErr
}

// ProtocolName implements kgo.GroupBalancer.
func (*Balancer) ProtocolName() string { return ProtocolName }

// IsCooperative implements kgo.GroupBalancer: partitions move by revoke,
// then assign in a follow-up rebalance (KIP-429).
func (*Balancer) IsCooperative() bool { return true }

// JoinGroupMetadata implements kgo.GroupBalancer: a ConsumerMemberMetadata
// whose UserData is this member's [Subscription].
func (b *Balancer) JoinGroupMetadata(topics []string, current map[string][]int32, generation int32) []byte {
	sub := b.subscription()
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 2 // owned partitions and generation; kgo bumps it to 3 to add a rack
	meta.Topics = topics
	meta.UserData = sub.AppendTo(nil)
	for _, t := range slices.Sorted(maps.Keys(current)) {
		owned := kmsg.NewConsumerMemberMetadataOwnedPartition()
		owned.Topic = t
		owned.Partitions = current[t]
		meta.OwnedPartitions = append(meta.OwnedPartitions, owned)
	}
	meta.Generation = generation
	return meta.AppendTo(nil)
}

// subscription returns this member's join metadata as of now.
func (b *Balancer) subscription() Subscription {
	var cps map[int32]int64
	if b.s.Checkpoints != nil {
		cps = b.s.Checkpoints()
	}
	var rates []TaskRate
	if b.s.Rates != nil {
		rates = wireRates(b.s.Rates())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	sub := Subscription{
		Version:         b.version,
		LatestSupported: b.s.wireVersion,
		ProcessID:       b.s.ProcessID,
		Endpoint:        b.s.Endpoint,
		Tags:            b.s.Tags,
		Capacity:        b.s.Capacity,
		PlanGeneration:  b.plan.generation,
		PlanActive:      b.plan.active,
		PlanStandby:     b.plan.standby,
		PlanWarmup:      b.plan.warmup,
		ProbeSeq:        b.probeSeq,
		Build:           Build,
	}
	for _, t := range slices.Sorted(maps.Keys(cps)) {
		if t >= 0 && t < maxTask && cps[t] >= 0 {
			sub.Checkpoints = append(sub.Checkpoints, Checkpoint{Task: t, Offset: cps[t]})
		}
	}
	for _, r := range rates { // only the tasks it runs active
		if _, ok := slices.BinarySearch(b.plan.active, r.Task); ok {
			sub.Rates = append(sub.Rates, r)
		}
	}
	return sub
}

// Build is the build string members of wire version 2 and up announce.
var Build = "rackstream-dev"

// ParseSyncAssignment implements kgo.GroupBalancer. It validates the
// assignment's user data (an error makes kgo fail the sync and rejoin) and
// keeps it for OnPartitionsAssigned.
func (b *Balancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	if err := b.Err(); err != nil {
		return nil, err
	}
	assigned, a, err := b.parseSync(assignment)
	if err != nil {
		b.rejectedAssignments.Add(1)
		b.log.Warn("rejecting the leader's assignment; rejoining", "err", err)
		return nil, fmt.Errorf("rackstream assignment: %w", err)
	}
	b.mu.Lock()
	b.pending = &a
	b.plan = lastPlan{
		generation: a.Generation,
		active:     mergeTasks(a.Active, a.Pending),
		standby:    a.Standby,
		warmup:     a.Warmup,
	}
	b.mu.Unlock()
	return assigned, nil
}

// parseSync decodes and checks one assignment.
func (b *Balancer) parseSync(assignment []byte) (map[string][]int32, AssignmentData, error) {
	var ka kmsg.ConsumerMemberAssignment
	if err := ka.ReadFrom(assignment); err != nil {
		return nil, AssignmentData{}, fmt.Errorf("not a consumer member assignment: %w", err)
	}
	a, err := DecodeAssignment(ka.UserData, b.s.wireVersion, b.s.ProcessID)
	if err != nil {
		return nil, a, err
	}
	// The partitions must be exactly those of the active tasks, in topics
	// we consume.
	want := make(map[int32]bool, len(a.Active))
	for _, t := range a.Active {
		want[t] = true
	}
	assigned := make(map[string][]int32, len(ka.Topics))
	for _, t := range ka.Topics {
		if !slices.Contains(b.s.InputTopics, t.Topic) {
			return nil, a, fmt.Errorf("assignment gives partitions of %q, not an input topic", t.Topic)
		}
		if _, dup := assigned[t.Topic]; dup {
			return nil, a, fmt.Errorf("assignment lists topic %q twice", t.Topic)
		}
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		for i, p := range ps {
			if !want[p] {
				return nil, a, fmt.Errorf("assignment gives partition %s/%d, but task %d is not among its active tasks %v", t.Topic, p, p, a.Active)
			}
			if i > 0 && ps[i-1] == p {
				return nil, a, fmt.Errorf("assignment gives partition %s/%d twice", t.Topic, p)
			}
		}
		assigned[t.Topic] = ps
	}
	for _, task := range a.Active {
		found := false
		for _, ps := range assigned {
			if _, ok := slices.BinarySearch(ps, task); ok {
				found = true
				break
			}
		}
		if !found {
			return nil, a, fmt.Errorf("assignment makes task %d active without any of its partitions", task)
		}
	}
	return assigned, a, nil
}

// OnPartitionsAssigned applies the assignment parsed at this generation's
// sync: it reads a published placement if need be, makes the placement
// current, calls Settings.OnAssignment, and rejoins when the group's wire
// version changed for this member.
func (b *Balancer) OnPartitionsAssigned(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
	b.mu.Lock()
	a := b.pending
	b.pending = nil
	b.mu.Unlock()
	if a == nil {
		return
	}
	p := a.Placement
	var unread *AssignmentData
	if a.Ref != nil {
		var err error
		if p, err = b.readPlacement(ctx, a); err != nil {
			b.log.Error("cannot read the published placement; keeping the previous one and retrying", "generation", a.Generation, "err", err)
			unread = a
		}
	}
	if p != nil && a.ProbingDeadline > 0 {
		p.ProbingDeadline = time.UnixMilli(a.ProbingDeadline)
	}
	asg := Assignment{
		Generation:    a.Generation,
		Active:        a.Active,
		Pending:       a.Pending,
		Standby:       a.Standby,
		Warmup:        a.Warmup,
		ProbeTriggers: a.ProbeTriggers,
		Placement:     p,
	}
	want := min(a.CommonVersion, b.s.wireVersion)
	b.mu.Lock()
	b.cur = asg
	b.unread = unread
	if p != nil {
		b.placement = p
	}
	close(b.changed)
	b.changed = make(chan struct{})
	clear(b.probedFor) // a new plan: its triggers are new catch-ups to wait for
	if b.probedRoles != nil {
		// The first assignment after our probe shows whether it moved
		// anything; if not, back off so that a lag hovering around the
		// bound cannot make us rebalance the group in a loop.
		if b.probedRoles.same(&asg) {
			b.probeBackoff = min(max(2*b.probeBackoff, minProbeBackoff), b.s.ProbingInterval)
			b.nextProbe = time.Now().Add(b.probeBackoff)
			b.log.Info("the probing rebalance we asked for left our tasks unchanged; backing off",
				"generation", a.Generation, "next_probe_in", b.probeBackoff)
		} else {
			b.probeBackoff, b.nextProbe = 0, time.Time{}
		}
		b.probedRoles = nil
	}
	rejoin := a.Rejoin
	if rejoin {
		b.log.Debug("rejoining at once: the plan has tasks in transit, handed over in the next round", "generation", a.Generation)
	}
	if want != b.version {
		b.log.Info("switching wire version and rejoining", "from", b.version, "to", want, "generation", a.Generation)
		b.version = want
		rejoin = true
	}
	b.mu.Unlock()
	if b.s.OnAssignment != nil {
		b.s.OnAssignment(asg)
	}
	if rejoin && cl != nil {
		cl.ForceRebalance()
	}
}

// loop asks for probing rebalances: when a warmup of ours has caught up, when
// the plan's probing deadline passes while we hold warmups, and when the
// leader must retry a plan made without end offsets.
func (b *Balancer) loop(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(b.s.WarmupCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		b.retryRead(stop)
		if why := b.probeReason(stop); why != "" {
			b.probes.Add(1)
			b.log.Info("asking for a probing rebalance", "why", why)
			b.mu.Lock()
			b.probeSeq++
			cl := b.cl
			b.mu.Unlock()
			cl.ForceRebalance()
		}
	}
}

// stoppable returns a context that ends after timeout or when stop closes.
func stoppable(stop <-chan struct{}, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// retryRead tries again to read a published placement the member could not
// read when its assignment arrived.
func (b *Balancer) retryRead(stop chan struct{}) {
	b.mu.Lock()
	a := b.unread
	b.mu.Unlock()
	if a == nil {
		return
	}
	ctx, cancel := stoppable(stop, b.s.readTimeout)
	defer cancel()
	p, err := b.readPlacement(ctx, a)
	if err != nil {
		b.log.Warn("still cannot read the published placement", "generation", a.Generation, "err", err)
		return
	}
	if a.ProbingDeadline > 0 {
		p.ProbingDeadline = time.UnixMilli(a.ProbingDeadline)
	}
	b.mu.Lock()
	if b.unread != a { // a newer assignment arrived meanwhile
		b.mu.Unlock()
		return
	}
	b.unread = nil
	b.cur.Placement = p
	b.placement = p
	asg := b.cur
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
	b.log.Info("read the published placement on retry", "generation", a.Generation)
	if b.s.OnAssignment != nil {
		b.s.OnAssignment(asg)
	}
}

// probeReason returns why a probing rebalance is due, or "". A rebalance
// is due when the leader must retry a plan; when the plan's probing
// deadline has passed (asked once per deadline, by members that wait for a
// catch-up and by the placement's first member, so that some member asks
// even when no catch-up is awaited); and when one of this member's probe
// triggers or warmups has caught up: once per task and generation, one
// probe in flight at a time, and not before the backoff after a probe that
// changed nothing.
func (b *Balancer) probeReason(stop chan struct{}) string {
	b.mu.Lock()
	cur := b.cur
	retry := !b.retryAt.IsZero() && time.Now().After(b.retryAt)
	if retry {
		b.retryAt = time.Time{}
	}
	b.mu.Unlock()
	if retry {
		return "retrying a plan made without changelog end offsets or a published placement"
	}
	watch := mergeTasks(cur.Warmup, cur.ProbeTriggers)
	if p := cur.Placement; p != nil && !p.ProbingDeadline.IsZero() && time.Now().After(p.ProbingDeadline) &&
		(len(watch) > 0 || p.MemberIndex(b.s.ProcessID) == 0) {
		b.mu.Lock()
		first := b.probedDeadline != p.ProbingDeadline.UnixMilli()
		b.probedDeadline = p.ProbingDeadline.UnixMilli()
		b.mu.Unlock()
		if first {
			return "probing.rebalance.interval.ms elapsed with moves pending"
		}
	}
	if len(watch) == 0 {
		return ""
	}
	b.mu.Lock()
	wait := b.probedRoles != nil || time.Now().Before(b.nextProbe)
	b.mu.Unlock()
	if wait {
		return ""
	}
	ctx, cancel := stoppable(stop, DefaultEndOffsetsTimeout)
	defer cancel()
	ends, err := b.endOffsets(ctx)
	if err != nil {
		b.log.Debug("catch-up check: end offsets unavailable", "err", err)
		return ""
	}
	var cps map[int32]int64
	if b.s.Checkpoints != nil {
		cps = b.s.Checkpoints()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur.Generation != cur.Generation || b.probedRoles != nil {
		return "" // a newer assignment, or another probe, came meanwhile
	}
	var caught []int32
	for _, t := range watch {
		if !b.probedFor[t] && max(0, ends.sum(t)-cps[t]) <= b.s.Placement.AcceptableRecoveryLag {
			caught = append(caught, t)
		}
	}
	if len(caught) == 0 {
		return ""
	}
	for _, t := range caught {
		b.probedFor[t] = true
	}
	b.probedRoles = rolesOf(&cur)
	return fmt.Sprintf("replica tasks %v of generation %d caught up (lag <= acceptable.recovery.lag %d)",
		caught, cur.Generation, b.s.Placement.AcceptableRecoveryLag)
}

// mergeTasks returns the sorted union of two sorted task lists.
func mergeTasks(a, b []int32) []int32 {
	if len(b) == 0 {
		return a
	}
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
