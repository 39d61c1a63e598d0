package balancer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/internal/cutdial"
	"github.com/rackstream/rackstream/tags"
)

// These tests run real kgo clients in one process against kfake, or against
// the real broker when RACKSTREAM_TEST_BROKERS is set.

const (
	testSession   = 2 * time.Second
	testHeartbeat = 200 * time.Millisecond
	waitLong      = 60 * time.Second
)

// group is a test's consumer group: its topics, its members, and a record of
// partition ownership that fails the test when two members own a partition
// at once.
type group struct {
	t         *testing.T
	c         *kafkatest.Cluster
	app       string
	input     string
	changelog string
	tasks     int32
	o         *offsets
	kadmEnds  bool // use the balancer's kadm end offsets instead of o

	mu         sync.Mutex
	owner      map[int32]string   // partition -> process owning it now
	violations []string           // double ownership seen
	revoked    map[string][]int32 // process -> partitions it revoked
	members    map[string]*member
	gens       map[int32]map[string][]int32 // generation -> process -> active tasks
	leaves     map[string]bool              // member ids whose LeaveGroup reached kfake
}

type member struct {
	pid    string
	b      *Balancer
	cl     *kgo.Client
	dialer *cutdial.Dialer
	cancel context.CancelFunc
	closed bool
}

func newGroup(t *testing.T, tasks int32) *group {
	c := kafkatest.New(t)
	g := &group{
		t: t, c: c, tasks: tasks, o: newOffsets(),
		app:     c.Name("bal"),
		owner:   make(map[int32]string),
		revoked: make(map[string][]int32),
		members: make(map[string]*member),
		leaves:  make(map[string]bool),
		gens:    make(map[int32]map[string][]int32),
	}
	g.input = g.app + "-in"
	g.changelog = g.app + "-store-changelog"
	c.CreateTopic(g.input, tasks, nil)
	c.CreateTopic(g.changelog, tasks, nil)
	if c.Fake != nil {
		observe := func(key kmsg.Key, into map[string]bool) {
			c.Fake.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
				g.mu.Lock()
				defer g.mu.Unlock()
				switch r := req.(type) {
				case *kmsg.LeaveGroupRequest:
					into[r.MemberID] = true
					for _, m := range r.Members {
						into[m.MemberID] = true
					}
				}
				return nil, nil, false
			})
		}
		observe(kmsg.LeaveGroup, g.leaves)
	}
	t.Cleanup(func() {
		for _, m := range g.all() {
			g.close(m)
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(g.violations) > 0 {
			t.Errorf("partitions owned by two members at once: %v", g.violations)
		}
		for gen, byPid := range g.gens {
			owner := make(map[int32]string)
			for pid, tasks := range byPid {
				for _, task := range tasks {
					if o, ok := owner[task]; ok {
						t.Errorf("generation %d gives task %d to both %s and %s", gen, task, o, pid)
					}
					owner[task] = pid
				}
			}
		}
	})
	return g
}

func (g *group) settings(pid string, tg tags.Set) Settings {
	s := DefaultSettings()
	s.ApplicationID, s.ProcessID, s.Endpoint, s.Tags = g.app, pid, pid+":8080", tg
	s.InputTopics, s.ChangelogTopics = []string{g.input}, []string{g.changelog}
	s.Placement.NumStandbyReplicas, s.Placement.RackAwareAssignmentTags = 2, tags.Keys{"zone", "cluster"}
	s.Checkpoints, s.EndOffsets = g.o.checkpoints(pid), g.o.endOffsets
	s.HeartbeatInterval, s.Logger = testHeartbeat, testLogger()
	s.OnAssignment = func(a Assignment) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.gens[a.Generation] == nil {
			g.gens[a.Generation] = make(map[string][]int32)
		}
		g.gens[a.Generation][pid] = a.Active
	}
	if g.kadmEnds {
		s.EndOffsets = nil
	}
	return s
}

// start adds a member with the given settings.
func (g *group) start(s Settings) *member {
	g.t.Helper()
	m := &member{pid: s.ProcessID, dialer: new(cutdial.Dialer)}
	return g.startMember(m, s, true)
}

// startMember starts m with settings s; with ownClientOpts the balancer's
// own clients dial through m's dialer too.
func (g *group) startMember(m *member, s Settings, ownClientOpts bool) *member {
	g.t.Helper()
	if ownClientOpts {
		s.ClientOpts = []kgo.Opt{kgo.SeedBrokers(g.c.Brokers...), kgo.Dialer(m.dialer.Dial)}
	}
	b, err := New(s)
	if err != nil {
		g.t.Fatal(err)
	}
	m.b = b
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	opts := append(b.Opts(),
		kgo.SeedBrokers(g.c.Brokers...),
		kgo.Dialer(m.dialer.Dial),
		kgo.WithContext(ctx),
		kgo.SessionTimeout(testSession),
		kgo.RebalanceTimeout(20*time.Second),
		kgo.DisableAutoCommit(), // these tests commit nothing: no request races the kill
		kgo.OnPartitionsAssigned(func(ctx context.Context, cl *kgo.Client, assigned map[string][]int32) {
			b.OnPartitionsAssigned(ctx, cl, assigned)
			g.assigned(m, assigned[g.input])
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
			g.released(m, revoked[g.input], true)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
			g.released(m, lost[g.input], false)
		}),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		g.t.Fatal(err)
	}
	m.cl = cl
	g.mu.Lock()
	g.members[m.pid] = m
	g.mu.Unlock()
	return m
}

func (g *group) assigned(m *member, ps []int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m.closed {
		return
	}
	for _, p := range ps {
		if o, ok := g.owner[p]; ok && o != m.pid {
			g.violations = append(g.violations, fmt.Sprintf("partition %d: %s and %s", p, o, m.pid))
		}
		g.owner[p] = m.pid
	}
}

func (g *group) released(m *member, ps []int32, revoke bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if revoke && len(ps) > 0 {
		g.revoked[m.pid] = append(g.revoked[m.pid], ps...)
	}
	for _, p := range ps {
		if g.owner[p] == m.pid {
			delete(g.owner, p)
		}
	}
}

// kill cuts the member's connections: it can send nothing more, like a
// process killed with SIGKILL. Its partitions are free from then on.
func (g *group) kill(m *member) string {
	id, _ := m.cl.GroupMetadata()
	m.dialer.Cut()
	m.cancel()
	g.mu.Lock()
	m.closed = true
	for p, o := range g.owner {
		if o == m.pid {
			delete(g.owner, p)
		}
	}
	delete(g.members, m.pid)
	g.mu.Unlock()
	m.cl.Close() // after the cut: nothing it tries may reach the broker
	return id
}

// close shuts the member down cleanly: it revokes and sends LeaveGroup.
func (g *group) close(m *member) {
	g.mu.Lock()
	done := m.closed
	m.closed = true
	delete(g.members, m.pid)
	g.mu.Unlock()
	if done {
		return
	}
	m.cl.Close()
	m.cancel()
	g.mu.Lock()
	for p, o := range g.owner {
		if o == m.pid {
			delete(g.owner, p)
		}
	}
	g.mu.Unlock()
}

func (g *group) all() []*member {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *member) int { return cmpString(a.pid, b.pid) })
	return out
}

func (g *group) resetRevoked() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.revoked)
}

func (g *group) revokedCopy() map[string][]int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string][]int32)
	for k, v := range g.revoked {
		out[k] = slices.Clone(v)
	}
	return out
}

// stable reports whether every live member holds the same generation's
// placement, no hand-off is pending, every task has an active among the
// live members, and the owners recorded by the callbacks match it.
func (g *group) stable() (*Placement, bool) {
	ms := g.all()
	var ref *Placement
	var gen int32 = -1
	for _, m := range ms {
		a, _ := m.b.Assignment()
		p := a.Placement
		if p == nil || len(a.Pending) > 0 {
			return nil, false
		}
		if ref == nil {
			ref, gen = p, a.Generation
		} else if a.Generation != gen || !reflect.DeepEqual(p, ref) {
			return nil, false
		}
	}
	if ref == nil || len(ref.Members) != len(ms) || len(ref.Tasks) != int(g.tasks) {
		return nil, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for task, r := range ref.Tasks {
		if r.Active == NoMember || g.owner[int32(task)] != ref.Members[r.Active].ProcessID {
			return nil, false
		}
	}
	return ref, true
}

func (g *group) waitStable(what string) *Placement {
	g.t.Helper()
	var p *Placement
	kafkatest.Eventually(g.t, waitLong, what, func() bool {
		var ok bool
		p, ok = g.stable()
		return ok
	})
	return p
}

// startSix starts six members tagged 3 zones x 2 clusters and waits until
// they agree on a placement.
func (g *group) startSix() *Placement {
	for i := range 6 {
		g.start(g.settings(fmt.Sprintf("p%d", i), zoneCluster(i)))
	}
	return g.waitStable("six members agree on one placement")
}

func checkSpread(t *testing.T, p *Placement) {
	t.Helper()
	for task, r := range p.Tasks {
		if len(r.Standbys) != 2 {
			t.Fatalf("task %d has standbys %v, want 2", task, r.Standbys)
		}
		zones, clusters := map[string]bool{}, map[string]bool{}
		for _, i := range append([]int{r.Active}, r.Standbys...) {
			zones[p.Members[i].Tags.Value("zone")] = true
			clusters[p.Members[i].Tags.Value("cluster")] = true
		}
		if len(zones) != 3 || len(clusters) != 2 {
			t.Fatalf("task %d's replicas span %d zones and %d clusters, want 3 and 2", task, len(zones), len(clusters))
		}
	}
}

func tasksOf(p *Placement, pid string) []int32 {
	var out []int32
	me := p.MemberIndex(pid)
	for t, r := range p.Tasks {
		if r.Active == me {
			out = append(out, int32(t))
		}
	}
	return out
}

func TestGroupSixMembersAgreeAndAClosingMemberMovesOnlyItsTasks(t *testing.T) {
	g := newGroup(t, 12)
	g.kadmEnds = true // end offsets of the real changelog topic, via kadm
	p := g.startSix()
	checkSpread(t, p)
	before := make(map[string][]int32)
	for _, m := range g.all() {
		before[m.pid] = tasksOf(p, m.pid)
	}

	g.resetRevoked()
	leaving := g.members["p4"]
	leavingID, _ := leaving.cl.GroupMetadata()
	g.close(leaving)
	p = g.waitStable("five members agree after p4 left")
	checkSpread(t, p)
	if r := g.revokedCopy(); len(r) > 1 || (len(r) == 1 && r["p4"] == nil) {
		t.Fatalf("members other than p4 revoked partitions: %v", r)
	}
	for pid, ts := range before {
		if pid == "p4" {
			continue
		}
		for _, task := range ts {
			if !slices.Contains(tasksOf(p, pid), task) {
				t.Fatalf("%s lost task %d when p4 left", pid, task)
			}
		}
	}
	if g.c.Fake != nil {
		g.mu.Lock()
		left := g.leaves[leavingID]
		g.mu.Unlock()
		if !left {
			t.Fatal("the closing member sent no LeaveGroup")
		}
	}
}

// garbageBalancer is a member speaking our protocol name with bytes that are
// not our metadata at all.
type garbageBalancer struct {
	meta []byte
	mu   sync.Mutex
	got  []map[string][]int32
}

func (*garbageBalancer) ProtocolName() string { return ProtocolName }
func (*garbageBalancer) IsCooperative() bool  { return true }
func (g *garbageBalancer) JoinGroupMetadata([]string, map[string][]int32, int32) []byte {
	return g.meta
}

func (g *garbageBalancer) ParseSyncAssignment(b []byte) (map[string][]int32, error) {
	m, err := kgo.ParseConsumerSyncAssignment(b)
	g.mu.Lock()
	g.got = append(g.got, m)
	g.mu.Unlock()
	return m, err
}

func (*garbageBalancer) MemberBalancer([]kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	return nil, nil, errors.New("the garbage member must never lead")
}

func TestGroupSeventhMemberWithGarbageMetadataGetsNothing(t *testing.T) {
	g := newGroup(t, 12)
	before := g.startSix()
	g.resetRevoked()
	join := func(b *garbageBalancer) *kgo.Client {
		return g.c.Client(
			kgo.ConsumerGroup(g.app),
			kgo.ConsumeTopics(g.input),
			kgo.Balancers(b),
			kgo.SessionTimeout(testSession),
			kgo.HeartbeatInterval(testHeartbeat),
		)
	}
	gb := &garbageBalancer{meta: []byte("\x00\x07not consumer metadata\xff\xff\xff")}
	cl := join(gb)
	// A second one sends well-formed consumer metadata that claims every
	// partition, with user data that is not ours.
	claims := kmsg.NewConsumerMemberMetadata()
	claims.Version = 2
	claims.Topics = []string{g.input}
	claims.UserData = []byte("not a rackstream subscription")
	owned := kmsg.NewConsumerMemberMetadataOwnedPartition()
	owned.Topic = g.input
	for p := range g.tasks {
		owned.Partitions = append(owned.Partitions, p)
	}
	claims.OwnedPartitions = append(claims.OwnedPartitions, owned)
	claims.Generation = 1
	gb2 := &garbageBalancer{meta: claims.AppendTo(nil)}
	cl2 := join(gb2)
	kafkatest.Eventually(t, waitLong, "both garbage members are synced", func() bool {
		gb.mu.Lock()
		defer gb.mu.Unlock()
		gb2.mu.Lock()
		defer gb2.mu.Unlock()
		return len(gb.got) > 0 && len(gb2.got) > 0
	})
	after := g.waitStable("six members agree after the garbage member joined")
	for _, b := range []*garbageBalancer{gb, gb2} {
		b.mu.Lock()
		for _, got := range b.got {
			if len(got) != 0 {
				t.Fatalf("a garbage member was assigned %v", got)
			}
		}
		b.mu.Unlock()
	}
	if !reflect.DeepEqual(before.Tasks, after.Tasks) || len(after.Members) != 6 {
		t.Fatalf("the garbage member changed the placement:\n%+v\n%+v", before, after)
	}
	if r := g.revokedCopy(); len(r) != 0 {
		t.Fatalf("the six revoked partitions: %v", r)
	}
	var rejected uint64
	for _, m := range g.all() {
		rejected += m.b.Stats().RejectedMembers
	}
	if rejected < 2 {
		t.Fatalf("the leaders counted %d rejected members, want both garbage members", rejected)
	}
	cl.Close()
	cl2.Close()
}

func TestGroupKilledMemberIsReplacedAfterTheSessionTimeout(t *testing.T) {
	g := newGroup(t, 12)
	g.startSix()
	victim := g.members["p2"]
	victimID := g.kill(victim)
	p := g.waitStable("five members take over after the session timeout")
	if p.MemberIndex("p2") != NoMember {
		t.Fatal("the killed member is still placed")
	}
	// Its replacement (same process id, a new client) joins.
	g.start(g.settings("p2", zoneCluster(2)))
	p = g.waitStable("the replacement joins")
	checkSpread(t, p)
	if g.c.Fake != nil {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.leaves[victimID] {
			t.Fatalf("the killed member %s sent LeaveGroup after its connections were cut (its Close ran after the cut)", victimID)
		}
	}
}

func TestGroupWarmupThatCatchesUpTriggersTheProbingRebalance(t *testing.T) {
	g := newGroup(t, 4)
	// Every task's changelog holds 1000 records; p0 has all of them.
	for task := range int32(4) {
		g.o.setEnd(task, 1000)
		g.o.set("p0", task, 1000)
	}
	settings := func(pid string) Settings {
		s := g.settings(pid, tags.Set{})
		s.Placement.NumStandbyReplicas = 0
		s.Placement.RackAwareAssignmentTags = nil
		s.Placement.AcceptableRecoveryLag = 10
		s.WarmupCheckInterval = 100 * time.Millisecond
		return s
	}
	g.start(settings("p0"))
	g.waitStable("p0 alone owns every task")
	cold := g.start(settings("p1"))
	var warm []int32
	kafkatest.Eventually(t, waitLong, "p1 gets warmups while p0 keeps every task", func() bool {
		a, _ := cold.b.Assignment()
		warm = a.Warmup
		return len(warm) > 0 && len(a.Active) == 0 && a.Placement != nil && !a.Placement.ProbingDeadline.IsZero()
	})
	// The test is the state engine: p1 restores its warmups.
	for _, task := range warm {
		g.o.set("p1", task, 995)
	}
	kafkatest.Eventually(t, waitLong, "the caught-up warmups become p1's actives", func() bool {
		p, ok := g.stable()
		if !ok {
			return false
		}
		for _, task := range warm {
			if p.Tasks[task].Active != p.MemberIndex("p1") {
				return false
			}
		}
		return true
	})
	if cold.b.Stats().ProbingRebalances == 0 {
		t.Fatal("the move completed without a probing rebalance from p1")
	}
}

func TestGroupLargePlacementIsPublishedAndEveryMemberReadsIt(t *testing.T) {
	g := newGroup(t, 12)
	for i := range 6 {
		s := g.settings(fmt.Sprintf("p%d", i), zoneCluster(i))
		s.MaxInlineBytes = 1 // never inline
		g.start(s)
	}
	p := g.waitStable("six members agree on a published placement")
	checkSpread(t, p)
	var published uint64
	for _, m := range g.all() {
		published += m.b.Stats().PlacementsPublished
		a, _ := m.b.Assignment()
		if a.Placement == nil {
			t.Fatalf("%s has no placement", m.pid)
		}
	}
	if published == 0 {
		t.Fatal("no leader published a placement")
	}
	cfgs, err := g.c.Admin().DescribeTopicConfigs(context.Background(), g.app+"-placement")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cfgs.On(g.app+"-placement", nil)
	if err != nil {
		t.Fatal(err)
	}
	compacted := false
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && c.Value != nil && *c.Value == "compact" {
			compacted = true
		}
	}
	if !compacted {
		t.Fatal("the placement topic is not compacted")
	}
}

func TestGroupStaticMembershipIsRefusedWithAReason(t *testing.T) {
	g := newGroup(t, 2)
	s := g.settings("p0", zoneCluster(0))
	b, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	cl := g.c.Client(append(b.Opts(), kgo.InstanceID("static-1"), kgo.SessionTimeout(testSession))...)
	_ = cl
	if !errors.Is(b.Err(), ErrStaticMembership) {
		t.Fatalf("Err() = %v, want ErrStaticMembership", b.Err())
	}
	if _, err := b.ParseSyncAssignment(nil); !errors.Is(err, ErrStaticMembership) {
		t.Fatalf("ParseSyncAssignment accepted an assignment on a static member: %v", err)
	}
}

func testLogger() *slog.Logger {
	if os.Getenv("BALANCER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return quietLogger()
}

func TestGroupRollingUpgradeFromVersion1ToVersion2(t *testing.T) {
	g := newGroup(t, 6)
	settings := func(pid string, v uint8) Settings {
		s := g.settings(pid, zoneCluster(int(pid[1]-'0')))
		s.wireVersion = v
		return s
	}
	for i := range 3 {
		g.start(settings(fmt.Sprintf("p%d", i), Version1))
	}
	g.waitStable("three version-1 members agree")
	for i := range 3 {
		pid := fmt.Sprintf("p%d", i)
		g.close(g.members[pid])
		g.start(settings(pid, Version2))
		p := g.waitStable(fmt.Sprintf("the group agrees after upgrading %s", pid))
		if len(p.Members) != 3 {
			t.Fatalf("placement has %d members", len(p.Members))
		}
	}
	kafkatest.Eventually(t, waitLong, "every member speaks version 2 and the placement carries builds", func() bool {
		p, ok := g.stable()
		if !ok {
			return false
		}
		for _, m := range g.all() {
			if m.b.subscription().Version != Version2 {
				return false
			}
		}
		for _, m := range p.Members {
			if m.Build != Build {
				return false
			}
		}
		return true
	})
}

func TestProbingIntervalElapsedAsksForOneRebalance(t *testing.T) {
	b, err := New(simSettings("p0", zoneCluster(0), newOffsets()))
	if err != nil {
		t.Fatal(err)
	}
	b.cur = Assignment{Generation: 3, Warmup: []int32{1}, Placement: &Placement{ProbingDeadline: time.Now().Add(-time.Second)}}
	stop := make(chan struct{})
	defer close(stop)
	if why := b.probeReason(stop); why == "" || !strings.Contains(why, "probing.rebalance.interval.ms") {
		t.Fatalf("probe reason %q, want the probing interval", why)
	}
	if why := b.probeReason(stop); strings.Contains(why, "probing.rebalance.interval.ms") {
		t.Fatal("the same deadline asked for a second rebalance")
	}
}

func TestGroupMemberThatCannotReadThePublishedPlacementRetries(t *testing.T) {
	g := newGroup(t, 6)
	settings := func(pid string) Settings {
		s := g.settings(pid, zoneCluster(int(pid[1]-'0')))
		s.MaxInlineBytes = 1 // always published
		s.readTimeout = 300 * time.Millisecond
		s.WarmupCheckInterval = 100 * time.Millisecond
		return s
	}
	// p0 joins first and leads.
	leader := g.start(settings("p0"))
	kafkatest.Eventually(t, waitLong, "p0 leads a placement", func() bool { return leader.b.Placement() != nil })
	g.start(settings("p1"))
	// p2's own clients (the placement reader) cannot reach the broker.
	gate := new(cutdial.Dialer)
	gate.Cut() // closed until healed
	s := settings("p2")
	m := &member{pid: "p2", dialer: new(cutdial.Dialer)}
	s.ClientOpts = []kgo.Opt{kgo.SeedBrokers(g.c.Brokers...), kgo.Dialer(gate.Dial)}
	g.startMember(m, s, false)
	kafkatest.Eventually(t, waitLong, "p2 is assigned but cannot read the placement", func() bool {
		a, _ := m.b.Assignment()
		return a.Generation > 0 && a.Placement == nil && m.b.Placement() == nil
	})
	gate.Heal()
	p := g.waitStable("p2 reads the placement on retry")
	if len(p.Members) != 3 {
		t.Fatalf("placement has %d members", len(p.Members))
	}
}
