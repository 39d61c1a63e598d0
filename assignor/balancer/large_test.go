package balancer

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rackstream/rackstream/tags"
)

// brokerRecordLimit is the broker's default limit on one group-metadata
// record: offsets topic max.message.bytes 1048588 (1 MiB plus the record
// overhead Kafka allows for). TestBrokerGroupRecordLimit calibrates it.
const brokerRecordLimit = 1 << 20

const largeMembers, largeTasks = 1000, 10000

// publishedRecord captures what the leader would write to the placement topic.
type publishedRecord struct {
	value []byte
	crc   uint32
}

// largeGroup settles a simulated group of 1,000 members x 10,000 tasks x 2
// standbys x 3 tag dimensions (120 tag classes), in the steady state where
// every member holds the state of its replicas.
func largeGroup(t testing.TB) (*sim, *simMember, *publishedRecord) {
	const members, tasks = largeMembers, largeTasks
	rec := &publishedRecord{}
	o := newOffsets()
	for task := range int32(tasks) {
		o.setEnd(task, 1_000_000)
	}
	s := newSim(t, tasks)
	for i := range members {
		pid := fmt.Sprintf("3f9c2a1e-7b4d-4c8e-9a0f-%012d", i) // a UUID, as state.dir persists
		st := simSettings(pid, tags.MustSet(
			"zone", fmt.Sprintf("eu-central-1%c", 'a'+i%3),
			"cluster", fmt.Sprintf("k8s-cluster%d", i%4),
			"rack", fmt.Sprintf("rack-%02d", i%10),
		), o)
		st.Endpoint = fmt.Sprintf("rackstream-%d.rackstream.prod.svc.cluster.local:8080", i)
		st.Placement.RackAwareAssignmentTags = tags.Keys{"zone", "cluster", "rack"}
		st.publish = func(p *Placement, v uint8) (*PlacementRef, error) {
			rec.value, rec.crc = encodePlacementRecord(p, v)
			return &PlacementRef{Topic: "app-placement", Partition: 0, Offset: 42, CRC: rec.crc}, nil
		}
		s.add(fmt.Sprintf("member-%04d-5e1d0c55-0d5b-4a4e-8a43-1c8d55f0c2b1", i), st)
	}
	leader := s.members[0]
	s.round(leader.id)
	for _, m := range s.members {
		for _, ts := range [][]int32{m.last.Active, m.last.Pending, m.last.Standby} {
			for _, task := range ts {
				o.set(m.b.s.ProcessID, task, 999_990)
			}
		}
	}
	s.settle(leader.id, 3)
	return s, leader, rec
}

// BenchmarkLeaderBalance1000x10000 measures one steady-state rebalance on
// the leader: decoding 1,000 members' join metadata, the placement, the
// cooperative adjustment, encoding 1,000 assignments and the placement
// record.
func BenchmarkLeaderBalance1000x10000(b *testing.B) {
	s, leader, _ := largeGroup(b)
	var joins []kmsg.JoinGroupResponseMember
	for _, m := range s.members {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.ProtocolMetadata = m.b.JoinGroupMetadata([]string{simInput}, cloneAssigned(m.owned), s.generation)
		joins = append(joins, jm)
	}
	topics := map[string]int32{simInput: largeTasks}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		gmb, _, err := leader.b.MemberBalancer(joins)
		if err != nil {
			b.Fatal(err)
		}
		gmb.(kgo.GroupMemberBalancerInfo).SetBalanceInfo(kgo.BalanceInfo{Generation: s.generation + 1})
		into, err := gmb.(kgo.GroupMemberBalancerOrError).BalanceOrError(topics)
		if err != nil {
			b.Fatal(err)
		}
		_ = into.IntoSyncAssignment()
	}
}

// BenchmarkMemberDecodePlacementRecord1000x10000 measures what each member
// does once per generation of a large group: decompress, check and decode
// the published placement.
func BenchmarkMemberDecodePlacementRecord1000x10000(b *testing.B) {
	s, _, rec := largeGroup(b)
	b.SetBytes(int64(len(rec.value)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := decodePlacementRecord(rec.value, LatestVersion, s.generation, rec.crc, maxPlacementBytes); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLargeGroupFitsTheBrokerRecordAndEveryMemberLearnsThePlacement runs one
// steady-state generation of 1,000 members x 10,000 tasks x 2 standbys x 3
// tag dimensions through the production encoders: every member's join
// metadata, the leader's balance, every member's assignment, and the
// published placement record.
func TestLargeGroupFitsTheBrokerRecordAndEveryMemberLearnsThePlacement(t *testing.T) {
	if testing.Short() {
		t.Skip("large group: skipped with -short")
	}
	s, leader, rec := largeGroup(t)
	record, recordCRC := rec.value, rec.crc
	stats := leader.b.Stats()
	t.Logf("one generation stores %d bytes (subscriptions, assignments and %d B per member of overhead); placement record %d bytes compressed",
		stats.LastGenerationBytes, memberOverheadBytes, len(record))
	var joinBytes, asgBytes int
	for _, m := range s.members {
		joinBytes += len(m.b.JoinGroupMetadata([]string{simInput}, cloneAssigned(m.owned), s.generation))
		asgBytes += len(s.syncs[m.id])
	}
	t.Logf("per member: %d B of join metadata, %d B of assignment", joinBytes/largeMembers, asgBytes/largeMembers)
	if stats.LastGenerationBytes >= brokerRecordLimit {
		t.Fatalf("a generation takes %d bytes, over the broker's %d", stats.LastGenerationBytes, brokerRecordLimit)
	}
	// The worst probing generation: every replica task of every member a
	// probe trigger (the leader names only lagging ones, so real probing
	// plans carry fewer).
	extra := 0
	for _, m := range s.members {
		ad, err := DecodeAssignment(mustUserData(t, s.syncs[m.id]), LatestVersion, m.b.s.ProcessID)
		if err != nil {
			t.Fatal(err)
		}
		before := len(ad.AppendTo(nil))
		ad.ProbingDeadline = 1_800_000_000_000
		ad.ProbeTriggers = mergeTasks(ad.Standby, ad.Warmup)
		extra += len(ad.AppendTo(nil)) - before
	}
	t.Logf("with every replica task a probe trigger, a generation takes %d bytes more: %d", extra, stats.LastGenerationBytes+extra)
	if stats.LastGenerationBytes+extra >= brokerRecordLimit {
		t.Fatalf("a probing generation takes %d bytes, over the broker's %d", stats.LastGenerationBytes+extra, brokerRecordLimit)
	}
	if len(record) >= brokerRecordLimit {
		t.Fatalf("the placement record takes %d bytes, over the topic's default %d", len(record), brokerRecordLimit)
	}
	// Every member learns the whole placement from the record, and its own
	// roles agree with it.
	a, _ := leader.b.Assignment()
	p, err := decodePlacementRecord(record, LatestVersion, a.Generation, recordCRC, maxPlacementBytes)
	if err != nil {
		t.Fatal(err)
	}
	// Inline, the placement would not have fitted.
	inline := AssignmentData{Version: LatestVersion, CommonVersion: LatestVersion, Generation: a.Generation, Placement: p}
	one := len(inline.AppendTo(nil))
	t.Logf("inline, every assignment would carry %d bytes: %d for the group", one, one*largeMembers)
	if one*largeMembers <= brokerRecordLimit {
		t.Fatalf("inline placements would take only %d bytes: the test does not exercise the published path", one*largeMembers)
	}
	if len(p.Members) != largeMembers || len(p.Tasks) != largeTasks {
		t.Fatalf("placement of %d members and %d tasks", len(p.Members), len(p.Tasks))
	}
	for _, m := range s.members {
		if m.err != nil {
			t.Fatalf("%s rejected its assignment: %v", m.id, m.err)
		}
		own := AssignmentData{Active: m.last.Active, Pending: m.last.Pending, Standby: m.last.Standby, Warmup: m.last.Warmup}
		if err := p.checkMember(m.b.s.ProcessID, &own); err != nil {
			t.Fatalf("%s: %v", m.id, err)
		}
	}
}

// mustUserData returns the UserData of a raw consumer member assignment.
func mustUserData(t *testing.T, raw []byte) []byte {
	t.Helper()
	var ka kmsg.ConsumerMemberAssignment
	if err := ka.ReadFrom(raw); err != nil {
		t.Fatal(err)
	}
	return ka.UserData
}
