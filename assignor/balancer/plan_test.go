package balancer

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPlanDecidesAGenerationWithoutIO: the leader's planning step reads
// only what it is given: it neither fetches end offsets nor publishes,
// even when the placement is too large to travel inline (deliver
// publishes it).
func TestPlanDecidesAGenerationWithoutIO(t *testing.T) {
	o := newOffsets()
	s := newSim(t, 6)
	for i := range 3 {
		s.add(memberName(i), simSettings(processName(i), zoneCluster(i), o))
	}
	leader := s.member("m0")
	leader.b.s.MaxInlineBytes = 0 // every placement published
	leader.b.s.publish = func(*Placement, uint8) (*PlacementRef, error) {
		t.Error("plan published the placement")
		return nil, nil
	}
	leader.b.s.EndOffsets = func(context.Context, []string) (map[string]map[int32]int64, error) {
		t.Error("plan read end offsets")
		return nil, nil
	}
	g, cb := leaderOfFirstGeneration(t, s, leader)
	gp, err := g.plan(cb, map[string]int32{simInput: 6}, 1, endSums{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if gp.inline {
		t.Error("a placement over MaxInlineBytes=0 planned inline")
	}
	if len(gp.placement.Tasks) != 6 || len(gp.owns) != 3 || gp.placement.Settings == nil {
		t.Fatalf("plan: %d tasks, %d members' assignments, settings %v", len(gp.placement.Tasks), len(gp.owns), gp.placement.Settings)
	}
	actives := 0
	for _, a := range gp.owns {
		actives += len(a.Active)
	}
	if actives != 6 {
		t.Errorf("%d tasks assigned active in a first generation, want all 6", actives)
	}
}

// leaderOfFirstGeneration is leader's balancer of generation 1 over every
// member of s, as kgo hands it the members' join metadata.
func leaderOfFirstGeneration(t *testing.T, s *sim, leader *simMember) (*groupBalancer, *kgo.ConsumerBalancer) {
	t.Helper()
	var joins []kmsg.JoinGroupResponseMember
	for _, m := range s.members {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.ProtocolMetadata = m.b.JoinGroupMetadata([]string{simInput}, nil, 0)
		joins = append(joins, jm)
	}
	g, cb, err := leader.b.newGroupBalancer(joins)
	if err != nil {
		t.Fatal(err)
	}
	var gmb kgo.GroupMemberBalancer = cb
	gmb.(kgo.GroupMemberBalancerInfo).SetBalanceInfo(kgo.BalanceInfo{Generation: 1})
	return g, cb
}

func memberName(i int) string  { return "m" + string(rune('0'+i)) }
func processName(i int) string { return "p" + string(rune('0'+i)) }
