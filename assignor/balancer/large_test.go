package balancer

import (
	"fmt"
	"testing"

	"github.com/rackstream/rackstream/tags"
)

// brokerRecordLimit is the broker's default limit on one group-metadata
// record: offsets topic max.message.bytes 1048588 (1 MiB plus the record
// overhead Kafka allows for). TestBrokerGroupRecordLimit calibrates it.
const brokerRecordLimit = 1 << 20

// TestLargeGroupFitsTheBrokerRecordAndEveryMemberLearnsThePlacement runs one
// steady-state generation of 1,000 members x 10,000 tasks x 2 standbys x 3
// tag dimensions through the production encoders: every member's join
// metadata, the leader's balance, every member's assignment, and the
// published placement record.
func TestLargeGroupFitsTheBrokerRecordAndEveryMemberLearnsThePlacement(t *testing.T) {
	if testing.Short() {
		t.Skip("large group: skipped with -short")
	}
	const members, tasks = 1000, 10000
	o := newOffsets()
	for task := range int32(tasks) {
		o.setEnd(task, 1_000_000)
	}
	var record []byte
	var recordCRC uint32
	s := newSim(t, tasks)
	for i := range members {
		pid := fmt.Sprintf("3f9c2a1e-7b4d-4c8e-9a0f-%012d", i) // a UUID, as state.dir persists
		st := simSettings(pid, tags.MustSet(
			"zone", fmt.Sprintf("eu-central-1%c", 'a'+i%3),
			"cluster", fmt.Sprintf("k8s-cluster%d", i%4),
			"rack", fmt.Sprintf("rack-%02d", i%10),
		), o)
		st.Endpoint = fmt.Sprintf("rackstream-%d.rackstream.prod.svc.cluster.local:8080", i)
		st.RackAwareTags = tags.Keys{"zone", "cluster", "rack"}
		st.publish = func(p *Placement, v uint8) (*PlacementRef, error) {
			record, recordCRC = encodePlacementRecord(p, v)
			return &PlacementRef{Topic: "app-placement", Partition: 0, Offset: 42, CRC: recordCRC}, nil
		}
		s.add(fmt.Sprintf("member-%04d-5e1d0c55-0d5b-4a4e-8a43-1c8d55f0c2b1", i), st)
	}
	leader := s.members[0]
	s.round(leader.id)
	// Steady state: every member holds the state of its replicas.
	for _, m := range s.members {
		for _, ts := range [][]int32{m.last.Active, m.last.Pending, m.last.Standby} {
			for _, task := range ts {
				o.set(m.b.s.ProcessID, task, 999_990)
			}
		}
	}
	s.settle(leader.id, 3)

	stats := leader.b.Stats()
	t.Logf("one generation stores %d bytes (subscriptions, assignments and %d B per member of overhead); placement record %d bytes compressed",
		stats.LastGenerationBytes, memberOverheadBytes, len(record))
	if stats.LastGenerationBytes >= brokerRecordLimit {
		t.Fatalf("a generation takes %d bytes, over the broker's %d", stats.LastGenerationBytes, brokerRecordLimit)
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
	t.Logf("inline, every assignment would carry %d bytes: %d for the group", one, one*members)
	if one*members <= brokerRecordLimit {
		t.Fatalf("inline placements would take only %d bytes: the test does not exercise the published path", one*members)
	}
	if len(p.Members) != members || len(p.Tasks) != tasks {
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
