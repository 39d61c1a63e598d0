package balancer

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rackstream/rackstream/tags"
)

// sixMembers builds a simulated group of six members tagged 3 zones x 2
// clusters, member ids m0..m5 and process ids p0..p5.
func sixMembers(t *testing.T, tasks int32, o *offsets) *sim {
	s := newSim(t, tasks)
	for i := range 6 {
		s.add(fmt.Sprintf("m%d", i), simSettings(fmt.Sprintf("p%d", i), zoneCluster(i), o))
	}
	return s
}

// checkPlacement checks the invariants every settled placement must meet:
// one active per task, standbys spread over distinct zones and clusters as
// far as 3 zones x 2 clusters allow, and every member's view identical to
// the leader's and to its own partitions.
func checkPlacement(t *testing.T, s *sim, tasks int32) *Placement {
	t.Helper()
	var ref *Placement
	for _, m := range s.members {
		if m.raw != nil {
			continue
		}
		p := m.b.Placement()
		if p == nil {
			t.Fatalf("%s has no placement", m.id)
		}
		if ref == nil {
			ref = p
		} else if !reflect.DeepEqual(p, ref) {
			t.Fatalf("%s sees a different placement:\n%+v\nvs\n%+v", m.id, p, ref)
		}
		if !slices.Equal(m.owned[simInput], m.last.Active) {
			t.Fatalf("%s owns partitions %v but its active tasks are %v", m.id, m.owned[simInput], m.last.Active)
		}
	}
	if len(ref.Tasks) != int(tasks) {
		t.Fatalf("placement has %d tasks, want %d", len(ref.Tasks), tasks)
	}
	for task, r := range ref.Tasks {
		if r.Active == NoMember {
			t.Fatalf("task %d has no active", task)
		}
		if len(r.Standbys) != 2 {
			t.Fatalf("task %d has standbys %v, want 2", task, r.Standbys)
		}
		zones, clusters := map[string]bool{}, map[string]bool{}
		for _, i := range append([]int{r.Active}, r.Standbys...) {
			zones[ref.Members[i].Tags.Value("zone")] = true
			clusters[ref.Members[i].Tags.Value("cluster")] = true
		}
		if len(zones) != 3 || len(clusters) != 2 {
			t.Fatalf("task %d replicas span %d zones and %d clusters, want 3 and 2", task, len(zones), len(clusters))
		}
	}
	if q := ref.Quality; q.StandbyShortfall != 0 || len(q.Dimensions) != 2 || q.Dimensions[0].TasksRepeating != 0 {
		t.Fatalf("quality %+v", q)
	}
	return ref
}

func TestLeaderPlacesSixMembersAndEveryMemberSeesTheSamePlacement(t *testing.T) {
	o := newOffsets()
	s := sixMembers(t, 12, o)
	s.settle("m0", 3)
	p := checkPlacement(t, s, 12)
	for i, m := range p.Members {
		if m.ProcessID != fmt.Sprintf("p%d", i) || m.Endpoint != m.ProcessID+":8080" || !m.Tags.Equal(zoneCluster(i)) || m.Build != Build {
			t.Fatalf("member %d is %+v", i, m)
		}
	}
	// A second leader computes the same placement from the same metadata:
	// the plan reported in join metadata is sticky.
	s.round("m3")
	if q := checkPlacement(t, s, 12); !reflect.DeepEqual(q.Tasks, p.Tasks) {
		t.Fatalf("a new leader moved tasks:\n%+v\n%+v", q.Tasks, p.Tasks)
	}
}

func TestLeavingMemberMovesOnlyItsTasksAndOthersRevokeNothing(t *testing.T) {
	o := newOffsets()
	s := sixMembers(t, 12, o)
	s.settle("m0", 3)
	before := make(map[string][]int32)
	for _, m := range s.members {
		before[m.id] = slices.Clone(m.owned[simInput])
	}
	s.remove("m4")
	if revoked := s.round("m0"); len(revoked) != 0 {
		t.Fatalf("members revoked %v when m4 left", revoked)
	}
	checkPlacement(t, s, 12)
	for _, m := range s.members {
		for _, p := range before[m.id] {
			if !slices.Contains(m.owned[simInput], p) {
				t.Fatalf("%s lost partition %d", m.id, p)
			}
		}
	}
}

func TestJoiningMemberGetsTasksOnlyAfterTheirOwnersRevokeThem(t *testing.T) {
	o := newOffsets()
	s := newSim(t, 12)
	for i := range 5 {
		s.add(fmt.Sprintf("m%d", i), simSettings(fmt.Sprintf("p%d", i), zoneCluster(i), o))
	}
	s.settle("m0", 3)
	s.add("m5", simSettings("p5", zoneCluster(5), o))
	revoked := s.round("m0")
	newcomer := s.member("m5")
	if len(revoked) == 0 {
		t.Fatal("no member revoked anything for the newcomer")
	}
	if len(newcomer.owned[simInput]) != 0 || len(newcomer.last.Pending) == 0 {
		t.Fatalf("newcomer owns %v with pending %v in the revoking round", newcomer.owned[simInput], newcomer.last.Pending)
	}
	for _, task := range newcomer.last.Pending {
		if a := newcomer.b.Placement().Tasks[task].Active; a != NoMember {
			t.Fatalf("pending task %d has active %d in the delivered placement, want none (in transit)", task, a)
		}
	}
	// Every member rejoins at once for the follow-up round, rather than
	// at its next heartbeat; the follow-up round asks no one to.
	rejoins := func() (n int) {
		for _, m := range s.members {
			_, a, err := m.b.parseSync(s.syncs[m.id])
			if err != nil {
				t.Fatalf("%s: %v", m.id, err)
			}
			if a.Rejoin {
				n++
			}
		}
		return n
	}
	if n := rejoins(); n != len(s.members) {
		t.Fatalf("%d of %d members asked to rejoin in the revoking round, want all", n, len(s.members))
	}
	pending := newcomer.last.Pending
	if len(s.round("m0")) != 0 {
		t.Fatal("the follow-up round revoked more")
	}
	if n := rejoins(); n != 0 {
		t.Fatalf("%d members asked to rejoin after the follow-up round, want none", n)
	}
	if !slices.Equal(newcomer.owned[simInput], pending) {
		t.Fatalf("newcomer owns %v after the follow-up, want its pending %v", newcomer.owned[simInput], pending)
	}
	checkPlacement(t, s, 12)
}

// garbage returns join metadata that the leader must reject.
func TestLeaderRejectsUnusableMetadataWithoutDisturbingTheGroup(t *testing.T) {
	consumerMeta := func(userData []byte, claims ...int32) []byte {
		m := kmsg.NewConsumerMemberMetadata()
		m.Version = 2
		m.Topics = []string{simInput}
		m.UserData = userData
		if len(claims) > 0 {
			op := kmsg.NewConsumerMemberMetadataOwnedPartition()
			op.Topic = simInput
			op.Partitions = claims
			m.OwnedPartitions = append(m.OwnedPartitions, op)
			m.Generation = 1 << 30 // claims "newer" than anyone
		}
		return m.AppendTo(nil)
	}
	sub := func(mut func(*Subscription)) []byte {
		s := goldenSubscription(Version2)
		s.ProcessID = "px"
		s.Tags = zoneCluster(0)
		mut(&s)
		return s.AppendTo(nil)
	}
	all := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	for _, tc := range []struct {
		name   string
		meta   []byte
		reason string
	}{
		{"not consumer metadata at all", []byte("\xff\xfe garbage"), "not a consumer member metadata"},
		{"empty bytes", nil, "not a consumer member metadata"},
		{"user data garbage, claiming every partition", consumerMeta([]byte("hello"), all...), "decode"},
		{"user data garbage starting with a small version byte", consumerMeta([]byte{1, 1, 0xff}), "process_id"},
		{"truncated subscription", consumerMeta(sub(func(*Subscription) {})[:9], all...), "field tags"},
		{"wrong version zero", consumerMeta([]byte{0, 0, 1, 2, 3}), "oldest supported"},
		{"absurd task count", consumerMeta(append(hexBytes("010102703100000101"), 0xff, 0xff, 0xff, 0xff, 0x0f)), "exceeds"},
		{"duplicated process id, claiming every partition", consumerMeta(sub(func(s *Subscription) { s.ProcessID = "p2" }), all...), "already used"},
		{"valid metadata claiming every partition as of a future generation", consumerMeta(sub(func(*Subscription) {}), all...), "as of generation"},
		{"valid metadata reporting a plan from the future", consumerMeta(sub(func(s *Subscription) { s.PlanGeneration = 1 << 30; s.PlanActive = all })), "reports a plan"},
		{"missing a rack-aware tag", consumerMeta(sub(func(s *Subscription) { s.Tags = tags.MustSet("zone", "z9") })), "lacks the client tag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOffsets()
			s := sixMembers(t, 12, o)
			s.settle("m0", 3)
			before := checkPlacement(t, s, 12)
			bad := &simMember{id: "m9-hostile", owned: map[string][]int32{}, raw: func(map[string][]int32, int32) []byte { return tc.meta }}
			s.members = append(s.members, bad)
			leader := s.member("m0").b
			var logs strings.Builder
			leader.log = slog.New(slog.NewTextHandler(&logs, nil))
			for range 2 {
				if revoked := s.round("m0"); len(revoked) != 0 {
					t.Fatalf("the hostile member's claims revoked %v", revoked)
				}
			}
			if st := leader.Stats(); st.RejectedMembers != 1 {
				t.Fatalf("rejected members counted %d times over two rounds, want 1", st.RejectedMembers)
			}
			after := checkPlacement(t, s, 12)
			if !reflect.DeepEqual(after.Tasks, before.Tasks) || len(after.Members) != 6 {
				t.Fatalf("the hostile member changed the placement:\n%+v\n%+v", before, after)
			}
			// Its assignment is empty but well-formed.
			asg := s.lastSync(t, "m9-hostile")
			if len(asg.Topics) != 0 {
				t.Fatalf("hostile member got partitions %v", asg.Topics)
			}
			d, err := DecodeAssignment(asg.UserData, LatestVersion, "px")
			if err != nil || len(d.Active)+len(d.Standby)+len(d.Warmup)+len(d.Pending) != 0 {
				t.Fatalf("hostile member's user data: %+v, %v", d, err)
			}
			if n := strings.Count(logs.String(), "m9-hostile"); n != 1 {
				t.Fatalf("the leader logged the hostile member %d times over two rounds, want once:\n%s", n, logs.String())
			}
			if !strings.Contains(logs.String(), tc.reason) {
				t.Fatalf("the warning does not say %q:\n%s", tc.reason, logs.String())
			}
		})
	}
}

// lastSync returns one member's raw assignment of the last round.
func (s *sim) lastSync(t *testing.T, id string) kmsg.ConsumerMemberAssignment {
	t.Helper()
	var ka kmsg.ConsumerMemberAssignment
	if err := ka.ReadFrom(s.syncs[id]); err != nil {
		t.Fatalf("assignment of %s: %v", id, err)
	}
	return ka
}

func TestRejectionReasonsNameTheFault(t *testing.T) {
	o := newOffsets()
	b, err := New(simSettings("p0", zoneCluster(0), o))
	if err != nil {
		t.Fatal(err)
	}
	mk := func(id string, meta []byte) kmsg.JoinGroupResponseMember {
		m := kmsg.NewJoinGroupResponseMember()
		m.MemberID = id
		m.ProtocolMetadata = meta
		return m
	}
	good := b.JoinGroupMetadata([]string{simInput}, nil, -1)
	gmb, _, err := b.MemberBalancer([]kmsg.JoinGroupResponseMember{mk("a", good), mk("b", good), mk("c", []byte{1})})
	if err != nil || gmb == nil {
		t.Fatalf("MemberBalancer: %v", err)
	}
	if got := b.Stats().RejectedMembers; got != 2 {
		t.Fatalf("rejected %d members, want 2 (a duplicate process id and garbage)", got)
	}
}

func TestNewerMemberIsAnsweredInTheLeadersVersionAndRejoins(t *testing.T) {
	o := newOffsets()
	s := newSim(t, 6)
	old := simSettings("p0", zoneCluster(0), o)
	old.wireVersion = Version1
	s.add("m0", old)
	s.add("m1", simSettings("p1", zoneCluster(1), o)) // speaks v2
	s.round("m0")
	newer := s.member("m1")
	if newer.err != nil {
		t.Fatal(newer.err)
	}
	if len(newer.owned[simInput]) != 0 || newer.last.Placement == nil || len(newer.last.Placement.Members) != 1 {
		t.Fatalf("the newer member got %v / %+v in its first round, want nothing", newer.owned, newer.last)
	}
	if v := newer.b.subscription().Version; v != Version1 {
		t.Fatalf("the newer member joins next with version %d, want 1", v)
	}
	s.settle("m0", 3)
	if len(newer.owned[simInput]) == 0 {
		t.Fatal("the newer member got no tasks after rejoining in the leader's version")
	}
	if st := s.member("m0").b.Stats(); st.RejectedMembers != 0 {
		t.Fatalf("a newer member was counted as rejected: %+v", st)
	}
}

func TestLeaderReadsPreviousVersionMembers(t *testing.T) {
	o := newOffsets()
	s := newSim(t, 6)
	s.add("m0", simSettings("p0", zoneCluster(0), o))
	old := simSettings("p1", zoneCluster(1), o)
	old.wireVersion = Version1
	s.add("m1", old)
	s.settle("m0", 3)
	for _, m := range s.members {
		if len(m.owned[simInput]) != 3 {
			t.Fatalf("%s owns %v, want 3 of 6 partitions", m.id, m.owned[simInput])
		}
		if v := m.b.subscription().Version; v != Version1 {
			t.Fatalf("%s speaks version %d in a group with a version-1 member, want 1", m.id, v)
		}
	}
}

func TestRollingUpgradeFromVersion1ToVersion2(t *testing.T) { rollingUpgrade(t, Version1, Version2) }

func TestRollingUpgradeFromVersion2ToVersion3(t *testing.T) { rollingUpgrade(t, Version2, Version3) }

// rollingUpgrade replaces the members of a group speaking version from, one
// by one, by members speaking version to, with leaders of both builds.
func rollingUpgrade(t *testing.T, from, to uint8) {
	o := newOffsets()
	s := newSim(t, 9)
	settings := func(i int, v uint8) Settings {
		st := simSettings(fmt.Sprintf("p%d", i), zoneCluster(i), o)
		st.wireVersion = v
		return st
	}
	oldID := func(i int) string { return fmt.Sprintf("m%d-old", i) }
	newID := func(i int) string { return fmt.Sprintf("m%d-new", i) }
	for i := range 3 {
		s.add(oldID(i), settings(i, from))
	}
	s.settle(oldID(0), 3)
	leader := oldID(0)
	for i := range 3 {
		// Replace member i by a newer build with the same process id.
		s.remove(oldID(i))
		s.add(newID(i), settings(i, to))
		// A new build leads first (reading the old version), then an old
		// one (answering new members in the old version), then a new one.
		leader = []string{newID(0), oldID(2), newID(0)}[i]
		s.settle(leader, 5)
		total := 0
		for _, m := range s.members {
			total += len(m.owned[simInput])
			if m.err != nil {
				t.Fatalf("after upgrading %d members: %s: %v", i+1, m.id, m.err)
			}
		}
		if total != 9 {
			t.Fatalf("after upgrading %d members, %d of 9 partitions are owned", i+1, total)
		}
		if i < 2 {
			for _, m := range s.members {
				if v := m.b.subscription().Version; v != from {
					t.Fatalf("after upgrading %d members, %s speaks version %d while version-%d members remain", i+1, m.id, v, from)
				}
			}
		}
	}
	// All upgraded: the group steps up to the new version.
	s.settle(leader, 3)
	for _, m := range s.members {
		if v := m.b.subscription().Version; v != to {
			t.Fatalf("%s still speaks version %d after the upgrade to %d", m.id, v, to)
		}
	}
	if to >= Version2 {
		for _, mb := range s.member(leader).b.Placement().Members {
			if mb.Build != Build {
				t.Fatalf("member %s has build %q after the upgrade", mb.ProcessID, mb.Build)
			}
		}
	}
}

func TestEndOffsetFailureKeepsThePreviousPlacement(t *testing.T) {
	o := newOffsets()
	for task := range int32(12) {
		o.setEnd(task, 1000)
	}
	s := sixMembers(t, 12, o)
	// Everyone holds every task's state, caught up.
	for i := range 6 {
		for task := range int32(12) {
			o.set(fmt.Sprintf("p%d", i), task, 1000)
		}
	}
	s.settle("m0", 3)
	before := checkPlacement(t, s, 12)
	o.setFail(true)
	s.round("m0")
	after := checkPlacement(t, s, 12)
	if !reflect.DeepEqual(before.Tasks, after.Tasks) {
		t.Fatal("the placement changed while end offsets were unavailable")
	}
	b := s.member("m0").b
	if b.Stats().EndOffsetFailures != 1 {
		t.Fatalf("stats %+v", b.Stats())
	}
	b.mu.Lock()
	retry := !b.retryAt.IsZero()
	b.mu.Unlock()
	if !retry {
		t.Fatal("no retry scheduled")
	}
	// Failures in a row back off, so that a missing changelog does not make
	// the group rebalance every second.
	s.round("m0")
	s.round("m0")
	b.mu.Lock()
	wait := time.Until(b.retryAt)
	b.mu.Unlock()
	if wait < 3*time.Second {
		t.Fatalf("after three failures in a row the retry comes in %v, want a backoff of 4 s", wait)
	}
	o.setFail(false)
	s.round("m0")
	if b.endFailStreak != 0 {
		t.Fatal("a success did not reset the backoff")
	}
}

func TestRejectsLeadersGarbage(t *testing.T) {
	b, err := New(simSettings("p1", zoneCluster(1), newOffsets()))
	if err != nil {
		t.Fatal(err)
	}
	good := goldenAssignment(Version2)
	good.Placement.Members[0].ProcessID = "p0"
	good.Placement.Members[1].ProcessID = "p1"
	good.Active, good.Pending = nil, nil
	good.Standby = []int32{0}
	good.Warmup = []int32{1}
	wrap := func(a AssignmentData, parts ...int32) []byte {
		var ka kmsg.ConsumerMemberAssignment
		if len(parts) > 0 {
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic = simInput
			at.Partitions = parts
			ka.Topics = append(ka.Topics, at)
		}
		ka.UserData = a.AppendTo(nil)
		return ka.AppendTo(nil)
	}
	if _, err := b.ParseSyncAssignment(wrap(good)); err != nil {
		t.Fatalf("a valid assignment was rejected: %v", err)
	}
	for _, tc := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"not an assignment", []byte{0xff}, "not a consumer member assignment"},
		{"partitions of a task that is not active here", wrap(good, 0), "not among its active tasks"},
		{"user data truncated", wrap(good)[:30], "consumer member assignment"},
		{"user data of another format", func() []byte {
			var ka kmsg.ConsumerMemberAssignment
			ka.UserData = []byte("xyz")
			return ka.AppendTo(nil)
		}(), "decode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.Stats().RejectedAssignments
			_, err := b.ParseSyncAssignment(tc.raw)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
			if b.Stats().RejectedAssignments != before+1 {
				t.Fatal("rejection not counted")
			}
		})
	}
}

func TestRestartedInstanceWaitsWhileItsOldMemberLingers(t *testing.T) {
	o := newOffsets()
	s := sixMembers(t, 12, o)
	s.settle("m0", 3)
	before := checkPlacement(t, s, 12)
	// p2 restarts before the coordinator evicts its old member m2: the new
	// member joins with the same process id.
	s.add("m2b", simSettings("p2", zoneCluster(2), o))
	if revoked := s.round("m0"); len(revoked) != 0 {
		t.Fatalf("the duplicate process id revoked %v", revoked)
	}
	if n := len(s.member("m2b").owned[simInput]); n != 0 {
		t.Fatalf("the restarted instance got %d partitions while its old member lingers", n)
	}
	if !reflect.DeepEqual(s.member("m0").b.Placement().Tasks, before.Tasks) {
		t.Fatal("the duplicate changed the placement")
	}
	// The old member is evicted: its tasks, orphaned, go to the least
	// loaded member, the restarted p2.
	s.remove("m2")
	s.settle("m0", 3)
	after := checkPlacement(t, s, 12)
	if got, want := tasksOf(after, "p2"), tasksOf(before, "p2"); !slices.Equal(got, want) {
		t.Fatalf("p2 has tasks %v after its restart, want its old %v", got, want)
	}
}

// TestChurnNeverDoubleOwnsAndConverges drives a simulated group through
// random joins, leaves and leader changes: no round may give a partition to
// two members (checked in every round), and once churn stops the group
// settles with every task active exactly once and standbys spread.
func TestChurnNeverDoubleOwnsAndConverges(t *testing.T) {
	for seed := range int64(20) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			o := newOffsets()
			s := newSim(t, 12)
			next := 0
			add := func() {
				i := next % 6 // tags cycle over 3 zones x 2 clusters
				s.add(fmt.Sprintf("m%02d", next), simSettings(fmt.Sprintf("p%02d", next), zoneCluster(i), o))
				next++
			}
			for range 6 {
				add()
			}
			for range 30 {
				switch r := rng.IntN(4); {
				case r == 0 && len(s.members) < 9:
					add()
				case r == 1 && len(s.members) > 3:
					s.remove(s.members[rng.IntN(len(s.members))].id)
				}
				s.round(s.members[rng.IntN(len(s.members))].id)
			}
			// Keep six members (one per zone x cluster class, at least).
			for len(s.members) < 6 {
				add()
			}
			leader := s.members[0].id
			s.settle(leader, 6)
			// A settled group is stable: another round changes nothing.
			before := s.member(leader).b.Placement()
			s.round(leader)
			after := s.member(leader).b.Placement()
			if !reflect.DeepEqual(before.Tasks, after.Tasks) {
				t.Fatal("a settled placement changed without a membership change")
			}
			for task, r := range after.Tasks {
				if r.Active == NoMember {
					t.Fatalf("task %d has no active after settling", task)
				}
			}
			owned := 0
			for _, m := range s.members {
				owned += len(m.owned[simInput])
			}
			if owned != 12 {
				t.Fatalf("%d of 12 partitions owned after settling", owned)
			}
		})
	}
}
