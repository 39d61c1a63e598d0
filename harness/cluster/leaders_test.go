package cluster

import "testing"

func part(leader int32, replicas, isr []int32) PartitionState {
	return PartitionState{Topic: "t", Leader: leader, Replicas: replicas, ISR: isr}
}

var all3 = []int32{1, 2, 3}

func TestLeaderOfMostCountsLeadershipsAndBreaksTiesByLowestID(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []PartitionState
		node  int32
		led   int
	}{
		{"no partitions", nil, -1, 0},
		{"no leaders", []PartitionState{part(-1, all3, nil)}, -1, 0},
		{"one leads most", []PartitionState{part(2, all3, all3), part(2, all3, all3), part(3, all3, all3)}, 2, 2},
		{"a tie goes to the lowest id", []PartitionState{part(3, all3, all3), part(2, all3, all3), part(3, all3, all3), part(2, all3, all3)}, 2, 2},
		{"leaderless partitions do not count", []PartitionState{part(-1, all3, nil), part(-1, all3, nil), part(1, all3, all3)}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node, led := LeaderOfMost(tc.parts)
			if node != tc.node || led != tc.led {
				t.Errorf("LeaderOfMost = %d leading %d, want %d leading %d", node, led, tc.node, tc.led)
			}
		})
	}
}

func TestReplicationStates(t *testing.T) {
	full := part(1, all3, []int32{3, 1, 2})
	shrunk := part(1, all3, []int32{1, 3})
	leaderless := part(-1, all3, all3)
	moved := part(3, all3, []int32{3, 1})
	for _, tc := range []struct {
		name                    string
		parts                   []PartitionState
		full, node2InSync, not2 bool
	}{
		{"every replica in sync, in any order", []PartitionState{full, full}, true, true, false},
		{"a replica out of the ISR", []PartitionState{full, shrunk}, false, false, false},
		{"a partition without a leader", []PartitionState{full, leaderless}, false, false, false},
		{"node 2 fenced: leaders elsewhere, out of every ISR", []PartitionState{shrunk, moved}, false, false, true},
		{"fewer replicas than asked for", []PartitionState{part(1, []int32{1, 2}, []int32{1, 2})}, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FullyReplicated(tc.parts, 3); got != tc.full {
				t.Errorf("FullyReplicated = %v, want %v", got, tc.full)
			}
			if got := InSync(tc.parts, 2); got != tc.node2InSync {
				t.Errorf("InSync(2) = %v, want %v", got, tc.node2InSync)
			}
			if got := LedWithout(tc.parts, 2); got != tc.not2 {
				t.Errorf("LedWithout(2) = %v, want %v", got, tc.not2)
			}
		})
	}
}
