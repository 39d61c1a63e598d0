package balancer

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/tags"
)

// rackedRacks places partition t of every topic on one broker in zone
// z(t%3), its leader.
func rackedRacks(tasks int, topics ...string) Racks {
	out := make(Racks)
	for _, topic := range topics {
		ps := make(map[int32]PartitionRack)
		for t := range tasks {
			z := fmt.Sprintf("z%d", t%3)
			ps[int32(t)] = PartitionRack{Replicas: []string{z}, Leader: z}
		}
		out[topic] = ps
	}
	return out
}

// planWithRacks runs the leader's plan step of a three-member group (zones
// z0..z2, no standbys) over six tasks with the given racks and member tags,
// and returns the assignor's plan and the leader's stats.
func planWithRacks(t *testing.T, racks func() Racks, tagsOf func(i int) tags.Set) (*assignor.Plan, Stats) {
	t.Helper()
	o := newOffsets()
	s := newSim(t, 6)
	for i := range 3 {
		st := simSettings(processName(i), tagsOf(i), o)
		st.Placement.NumStandbyReplicas, st.Placement.RackAwareAssignmentTags = 0, nil
		st.Placement.ClientRackTag = "zone"
		st.PartitionRacks = racks
		s.add(memberName(i), st)
	}
	leader := s.member("m0")
	var plan *assignor.Plan
	leader.b.s.assign = func(in assignor.Input) (*assignor.Plan, error) {
		p, err := assignor.Assign(in)
		plan = p
		return p, err
	}
	g, cb := leaderOfFirstGeneration(t, s, leader)
	g.racks = leader.b.partitionRacks()
	if _, err := g.plan(cb, map[string]int32{simInput: 6}, 1, endSums{}, true); err != nil {
		t.Fatal(err)
	}
	return plan, leader.b.Stats()
}

// TestLeaderPlacesActivesWithTheirPartitionsReplicas: fed the racks of
// every task's partitions and each member's zone tag, the leader's plan
// under min_traffic puts every active in the zone of its input and
// changelog, and sends no byte across zones.
func TestLeaderPlacesActivesWithTheirPartitionsReplicas(t *testing.T) {
	racks := rackedRacks(6, simInput, simChangelog)
	plan, st := planWithRacks(t, func() Racks { return racks }, func(i int) tags.Set {
		return tags.MustSet("zone", fmt.Sprintf("z%d", i))
	})
	if plan.CrossZone == nil {
		t.Fatal("the plan has no cross-zone traffic: the leader gave the assignor no racks")
	}
	for _, tp := range plan.Tasks {
		if want := processName(tp.Task % 3); tp.Active != want {
			t.Errorf("task %d active on %s, want %s (zone z%d holds its partitions)", tp.Task, tp.Active, want, tp.Task%3)
		}
	}
	if plan.CrossZone.Total != 0 || len(plan.CrossZone.Unknown) != 0 {
		t.Errorf("cross-zone %+v; want 0 bytes and nothing unknown", plan.CrossZone)
	}
	if len(st.RackAwarenessOff) != 0 {
		t.Errorf("rack awareness off for %v; want nothing", st.RackAwarenessOff)
	}
}

// TestRackAwarenessTurnsOffForWhatItCannotSee: a member without the rack
// tag, a broker without broker.rack and a leader without any metadata each
// turn the optimisation off for what they touch, counted by reason, and
// the rebalance still places every task.
func TestRackAwarenessTurnsOffForWhatItCannotSee(t *testing.T) {
	zoned := func(i int) tags.Set { return tags.MustSet("zone", fmt.Sprintf("z%d", i)) }
	blind := rackedRacks(6, simInput, simChangelog)
	blind[simInput][4] = PartitionRack{Replicas: []string{"z1", ""}, Leader: "z1"}
	delete(blind, simChangelog) // no metadata for the changelog: every task blind
	for _, tc := range []struct {
		name   string
		racks  func() Racks
		tagsOf func(int) tags.Set
		want   map[string]int
	}{
		{"no metadata yet", func() Racks { return nil }, zoned, map[string]int{OffNoPartitionRacks: 1}},
		{"a member without the rack tag", func() Racks { return rackedRacks(6, simInput, simChangelog) },
			func(i int) tags.Set {
				if i == 2 {
					return tags.MustSet("cluster", "k1")
				}
				return zoned(i)
			}, map[string]int{OffMemberWithoutRack: 1}},
		{"partitions without racks", func() Racks { return blind }, zoned, map[string]int{OffBrokerWithoutRack: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, st := planWithRacks(t, tc.racks, tc.tagsOf)
			if len(plan.Tasks) != 6 {
				t.Fatalf("%d tasks placed, want 6", len(plan.Tasks))
			}
			if !maps.Equal(st.RackAwarenessOff, tc.want) {
				t.Errorf("off %v; want %v", st.RackAwarenessOff, tc.want)
			}
		})
	}
}

// TestStrategyNoneReportsTrafficAndNothingOff: under none the plan still
// reports its cross-zone traffic, and nothing counts as turned off.
func TestStrategyNoneReportsTrafficAndNothingOff(t *testing.T) {
	s := DefaultSettings()
	s.InputTopics, s.ChangelogTopics = []string{"in"}, []string{"cl"}
	s.Placement.RackAwareAssignmentStrategy = assignor.StrategyNone
	s.Placement.ClientRackTag = "zone"
	sub := &Subscription{ProcessID: "p", Tags: tags.MustSet("cluster", "k")}
	ra, off := rackAwareness(&s, rackedRacks(3, "in", "cl"), []*Subscription{sub}, 3)
	if ra == nil || len(ra.Tasks) != 3 || len(ra.Tasks[1].Partitions) != 2 || len(off) != 0 {
		t.Fatalf("rack input %+v, off %v; want 3 tasks of 2 partitions and nothing off", ra, off)
	}

	// Without a client rack tag no client has a rack: nothing to plan,
	// report or warn about, whatever the strategy.
	s.Placement.RackAwareAssignmentStrategy, s.Placement.ClientRackTag = assignor.StrategyMinTraffic, ""
	if ra, off := rackAwareness(&s, rackedRacks(3, "in", "cl"), []*Subscription{sub}, 3); ra != nil || len(off) != 0 {
		t.Fatalf("without a rack tag: rack input %+v, off %v; want none", ra, off)
	}
}

// TestRacksFromKafkaMetadata reads partition racks from a broker's
// metadata (kfake names every broker's rack "krack"; a real broker without
// broker.rack gives "": both are handled as they come).
func TestRacksFromKafkaMetadata(t *testing.T) {
	c := kafkatest.New(t)
	topic := c.Name("racks")
	c.CreateTopic(topic, 3, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	snap, err := readRacks(ctx, kadm.NewClient(cl), []string{topic, c.Name("absent")})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap[topic]) != 3 {
		t.Fatalf("racks of %s: %v; want 3 partitions", topic, snap[topic])
	}
	for p, pr := range snap[topic] {
		if len(pr.Replicas) == 0 {
			t.Errorf("partition %d: no replicas", p)
		}
	}
	if _, ok := snap[c.Name("absent")]; ok {
		t.Error("a topic the cluster lacks has racks")
	}
}

// TestGroupOnKafkaMarksAMemberWithoutRack: in a real group the leader
// reads the partition racks in the background and reports a member
// without the rack tag as turning the optimisation off for it; every task
// is still placed.
func TestGroupOnKafkaMarksAMemberWithoutRack(t *testing.T) {
	g := newGroup(t, 6)
	for i := range 3 {
		s := g.settings(fmt.Sprintf("p%d", i), zoneCluster(i))
		s.Placement.RackAwareAssignmentTags = tags.Keys{"cluster"}
		s.Placement.ClientRackTag = "zone"
		if i == 2 {
			s.Tags = tags.MustSet("cluster", "k0")
		}
		g.start(s)
	}
	g.waitStable("three members agree on one placement")
	kafkatest.Eventually(t, waitLong, "the leader reports the member without a rack", func() bool {
		for _, m := range g.all() {
			off := m.b.Stats().RackAwarenessOff
			if off[OffMemberWithoutRack] == 1 && off[OffNoPartitionRacks] == 0 {
				return true
			}
			if off[OffNoPartitionRacks] == 1 {
				m.cl.ForceRebalance() // planned before the first metadata read
			}
		}
		return false
	})
}

// TestRatesComeFromTheCurrentActive: each task's weights are those
// reported by the member with the newest plan among those reporting it; a
// member of an older wire version reports none, and its tasks weigh as the
// mean of the others.
func TestRatesComeFromTheCurrentActive(t *testing.T) {
	old, err := DecodeSubscription(hexBytes(goldenSubV4), LatestVersion)
	if err != nil || old.Rates != nil {
		t.Fatalf("a version-4 subscription decodes to rates %v, err %v; want none", old.Rates, err)
	}
	subs := []*Subscription{
		{ProcessID: "a", PlanGeneration: 3, Rates: []TaskRate{{Task: 0, Input: 100}}},
		{ProcessID: "b", PlanGeneration: 2, Rates: []TaskRate{{Task: 0, Input: 5}, {Task: 1, Input: 7, Changelog: 2}}},
		&old,
	}
	got := ratesOf(subs)
	if len(got) != 2 || got[0].Input != 100 || got[1].Input != 7 || got[1].Changelog != 2 {
		t.Fatalf("rates %v; want task 0 from a (100), task 1 from b (7, 2), none for task 2", got)
	}
	s := DefaultSettings()
	s.InputTopics, s.ChangelogTopics = []string{"in"}, []string{"cl"}
	s.Placement.ClientRackTag = "zone"
	ra, _ := rackAwareness(&s, rackedRacks(3, "in", "cl"), subs, 3)
	if ra.Tasks[0].Rates == nil || ra.Tasks[2].Rates != nil {
		t.Errorf("task rates %v, %v; want task 0's and none for task 2", ra.Tasks[0].Rates, ra.Tasks[2].Rates)
	}
}

// TestWireRatesAreCanonical: what a member reports is ascending, in range
// and capped, so that it always encodes.
func TestWireRatesAreCanonical(t *testing.T) {
	got := wireRates(map[int32]TaskRate{5: {Input: 1 << 62}, -1: {Input: 1}, 2: {Changelog: 3}, maxTask: {Input: 1}})
	want := []TaskRate{{Task: 2, Changelog: 3}, {Task: 5, Input: maxRate}}
	if !slices.Equal(got, want) {
		t.Fatalf("wire rates %v; want %v", got, want)
	}
	s := goldenSubscription(Version5)
	s.Rates = got
	if back, err := DecodeSubscription(s.AppendTo(nil), LatestVersion); err != nil || !slices.Equal(back.Rates, want) {
		t.Fatalf("round trip: %v, %v", back.Rates, err)
	}
}

// goldenAssignmentCrossZone is goldenAssignmentV5 whose placement carries
// cross-zone traffic for its two tasks.
func goldenAssignmentCrossZone() AssignmentData {
	a := goldenAssignmentV5()
	p := *a.Placement
	p.CrossZone = &assignor.CrossZone{Strategy: assignor.StrategyMinTraffic, Unknown: []string{}, Total: 3, Fetch: 2, Produce: 1,
		Tasks: []assignor.TaskCrossZone{
			{Task: 0, Bytes: 3, Fetch: 2, Produce: 1, StandbyLocal: []bool{true}},
			{Task: 1, ActiveLocal: true, StandbyLocal: []bool{}},
		}}
	a.Placement = &p
	return a
}

// TestPlacementCarriesCrossZoneTraffic: the leader's cross-zone figures
// reach every member in the placement, and figures that do not match the
// placement's tasks are refused.
func TestPlacementCarriesCrossZoneTraffic(t *testing.T) {
	a := goldenAssignmentCrossZone()
	got, err := DecodeAssignment(a.AppendTo(nil), LatestVersion, "p2")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Placement.CrossZone, a.Placement.CrossZone) {
		t.Fatalf("cross-zone %+v; want %+v", got.Placement.CrossZone, a.Placement.CrossZone)
	}
	a4 := a
	a4.Version, a4.CommonVersion = Version4, Version4
	if got, err := DecodeAssignment(a4.AppendTo(nil), LatestVersion, "p2"); err != nil || got.Placement.CrossZone != nil {
		t.Fatalf("version 4: cross-zone %v, err %v; want none", got.Placement.CrossZone, err)
	}
	for name, edit := range map[string]func(*assignor.CrossZone){
		"a task missing":  func(cz *assignor.CrossZone) { cz.Tasks = cz.Tasks[:1] },
		"tasks reordered": func(cz *assignor.CrossZone) { cz.Tasks[0].Task, cz.Tasks[1].Task = 1, 0 },
		"negative bytes":  func(cz *assignor.CrossZone) { cz.Tasks[1].Fetch = -1 },
	} {
		b := goldenAssignmentCrossZone()
		edit(b.Placement.CrossZone)
		if _, err := DecodeAssignment(b.AppendTo(nil), LatestVersion, "p2"); err == nil || !strings.Contains(err.Error(), "cross_zone") {
			t.Errorf("%s: error %v; want one naming cross_zone", name, err)
		}
	}
}

func TestRollingUpgradeFromVersion4ToVersion5(t *testing.T) { rollingUpgrade(t, Version4, Version5) }

// TestCrossZoneReachesEveryMemberOnceAllSpeakVersion5: while a version-4
// member is in the group the placement carries no cross-zone traffic and
// the group goes on; once it is replaced, every member holds the leader's
// figures, weighted by the rates the actives report, and the partition
// racks they come from.
func TestCrossZoneReachesEveryMemberOnceAllSpeakVersion5(t *testing.T) {
	o := newOffsets()
	s := newSim(t, 6)
	racks := rackedRacks(6, simInput, simChangelog)
	settings := func(i int, v uint8) Settings {
		st := simSettings(processName(i), zoneCluster(i), o)
		st.Placement.ClientRackTag, st.wireVersion = "zone", v
		st.PartitionRacks = func() Racks { return racks }
		st.Rates = func() map[int32]TaskRate {
			out := make(map[int32]TaskRate)
			for t := range int32(6) {
				out[t] = TaskRate{Input: uint64(1000 * (t + 1)), Changelog: 10}
			}
			return out
		}
		return st
	}
	s.add("m0", settings(0, Version5))
	s.add("m1", settings(1, Version5))
	s.add("m2", settings(2, Version4))
	s.settle("m0", 3)
	for _, m := range s.members {
		if m.err != nil || m.last.Placement == nil || m.last.Placement.CrossZone != nil {
			t.Fatalf("%s with a version-4 member: err %v, placement %+v; want one without cross-zone traffic", m.id, m.err, m.last.Placement)
		}
	}
	s.remove("m2")
	s.add("m2-new", settings(2, Version5))
	s.settle("m0", 5)
	var ref *assignor.CrossZone
	for _, m := range s.members {
		cz := m.last.Placement.CrossZone
		if m.err != nil || cz == nil || len(cz.Tasks) != 6 {
			t.Fatalf("%s: err %v, cross-zone %+v; want the figures of 6 tasks", m.id, m.err, cz)
		}
		if ref != nil && !reflect.DeepEqual(cz, ref) {
			t.Fatalf("%s sees other figures: %+v vs %+v", m.id, cz, ref)
		}
		ref = cz
	}
	// The figures carry the rack awareness the leader planned with, for
	// the what-ifs of every member's /v1/metadata.
	ra := ref.RackAwareness
	if ra == nil || ra.RackAwareStrategy != assignor.StrategyMinTraffic || len(ra.Tasks) != 6 ||
		len(ra.Tasks[5].Partitions) != 2 || ra.Tasks[5].Partitions[0].Leader != "z2" {
		t.Fatalf("rack awareness in the placement %+v; want the leader's, task 5 read in z2", ra)
	}
}

// TestRacksAreReadOnlyOnceTheClientIsBuilt: kgo calls OnNewClient before
// the client can serve requests, so the racks loop waits for the first
// broker connection. Clients built and closed one after another never see
// a read on a half-built client (it panicked inside kadm), and each reads
// the racks once connected.
func TestRacksAreReadOnlyOnceTheClientIsBuilt(t *testing.T) {
	g := newGroup(t, 3)
	for i := range 20 {
		b, err := New(g.settings(fmt.Sprintf("c%d", i), zoneCluster(i)))
		if err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(g.c.Brokers...), kgo.WithHooks(b))
		if err != nil {
			t.Fatal(err)
		}
		kafkatest.Eventually(t, waitLong, "the racks read once connected", func() bool {
			if err := cl.Ping(t.Context()); err != nil {
				return false
			}
			return b.racks.Load() != nil
		})
		cl.Close()
	}
}

// TestOutputProduceCountsInTheCost: partition i of every output topic is
// task i's output flow, weighed by the output rate its active reports, so
// the plan counts what an active produces to an output leader in another
// zone, and min_traffic keeps each active with its input all the same.
func TestOutputProduceCountsInTheCost(t *testing.T) {
	s := DefaultSettings()
	s.InputTopics, s.ChangelogTopics, s.OutputTopics = []string{"in"}, []string{"cl"}, []string{"out"}
	s.Placement.ClientRackTag = "zone"
	snap := rackedRacks(3, "in", "cl")
	snap["out"] = make(map[int32]PartitionRack)
	for p := range 3 {
		z := fmt.Sprintf("z%d", (p+1)%3) // every output leader one zone over
		snap["out"][int32(p)] = PartitionRack{Replicas: []string{z}, Leader: z}
	}
	var subs []*Subscription
	var clients []assignor.Client
	for i := range 3 {
		z := fmt.Sprintf("z%d", i)
		subs = append(subs, &Subscription{ProcessID: processName(i), Tags: tags.MustSet("zone", z),
			Rates: []TaskRate{{Task: int32(i), Input: 1000, Changelog: 100, Output: 400}}})
		clients = append(clients, assignor.Client{ID: processName(i), Tags: map[string]string{"zone": z}, Capacity: 1})
	}
	ra, off := rackAwareness(&s, snap, subs, 3)
	if ra == nil || len(off) != 0 {
		t.Fatalf("rack input %+v, off %v; want every task known", ra, off)
	}
	for _, tr := range ra.Tasks {
		want := assignor.PartitionRacks{Topic: "out", Partition: int32(tr.Task), Role: assignor.RoleOutput,
			Replicas: []string{fmt.Sprintf("z%d", (tr.Task+1)%3)}, Leader: fmt.Sprintf("z%d", (tr.Task+1)%3)}
		if len(tr.Partitions) != 3 || !reflect.DeepEqual(tr.Partitions[2], want) {
			t.Errorf("task %d's partitions %+v; want input, changelog and %+v", tr.Task, tr.Partitions, want)
		}
		if tr.Rates == nil || tr.Rates.Output != 400 {
			t.Errorf("task %d's rates %+v; want output 400", tr.Task, tr.Rates)
		}
	}
	in := assignor.Input{Settings: s.Placement, Tasks: 3, Clients: clients, RackAwareness: ra}
	in.NumStandbyReplicas, in.RackAwareAssignmentTags = 0, nil
	plan, err := assignor.Assign(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range plan.Tasks {
		if want := processName(tp.Task); tp.Active != want {
			t.Errorf("task %d active on %s, want %s, with its input", tp.Task, tp.Active, want)
		}
	}
	if cz := plan.CrossZone; cz == nil || cz.Fetch != 0 || cz.Produce != 3*400 {
		t.Errorf("cross-zone %+v; want no fetch and each task's 400 output bytes produced across", cz)
	}
}
