package state

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func threeRacks(perRack int) []brokerRack {
	var bs []brokerRack
	for r, name := range []string{"zone-a", "zone-b", "zone-c"} {
		for i := range perRack {
			bs = append(bs, brokerRack{ID: int32(1 + r + 3*i), Rack: name})
		}
	}
	return bs
}

func TestAlignedReplicas(t *testing.T) {
	for _, tc := range []struct {
		name    string
		brokers []brokerRack
		leaders []string
		rf      int
		want    [][]int32
	}{
		{
			name:    "each leader in its input leader's rack, followers in the other racks",
			brokers: threeRacks(1),
			leaders: []string{"zone-b", "zone-a", "zone-c"},
			rf:      3,
			want:    [][]int32{{2, 1, 3}, {1, 2, 3}, {3, 1, 2}},
		},
		{
			name:    "replication factor 1: the leader alone",
			brokers: threeRacks(1),
			leaders: []string{"zone-c", "zone-c"},
			rf:      1,
			want:    [][]int32{{3}, {3}},
		},
		{
			name:    "leaders rotate over a rack's brokers",
			brokers: threeRacks(2), // zone-a: 1, 4; zone-b: 2, 5; zone-c: 3, 6
			leaders: []string{"zone-a", "zone-a", "zone-a", "zone-a"},
			rf:      2,
			want:    [][]int32{{1, 2}, {4, 3}, {1, 5}, {4, 6}},
		},
		{
			name:    "an unknown leader rack takes the least-led rack",
			brokers: threeRacks(1),
			leaders: []string{"zone-a", "", "zone-x", ""},
			rf:      2,
			want:    [][]int32{{1, 2}, {2, 3}, {3, 1}, {1, 2}},
		},
		{
			name:    "more replicas than racks: a rack holds two only once all hold one",
			brokers: []brokerRack{{1, "zone-a"}, {2, "zone-b"}, {3, "zone-a"}, {4, "zone-b"}},
			leaders: []string{"zone-b"},
			rf:      3,
			want:    [][]int32{{2, 1, 3}},
		},
		{
			name:    "the brokers' order does not matter",
			brokers: []brokerRack{{3, "zone-c"}, {1, "zone-a"}, {2, "zone-b"}},
			leaders: []string{"zone-b", "zone-a", "zone-c"},
			rf:      3,
			want:    [][]int32{{2, 1, 3}, {1, 2, 3}, {3, 1, 2}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := alignedReplicas(tc.brokers, tc.leaders, tc.rf)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAlignedReplicasRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		brokers []brokerRack
		rf      int
		says    []string
	}{
		{"a broker without a rack", []brokerRack{{1, "zone-a"}, {2, ""}, {3, ""}}, 2, []string{"brokers without broker.rack: 2, 3"}},
		{"more replicas than brokers", threeRacks(1), 4, []string{"replication factor 4: must be from 1 to the 3 brokers"}},
		{"no replica", threeRacks(1), 0, []string{"replication factor 0"}},
		{"every fault at once", []brokerRack{{1, ""}, {1, "zone-a"}}, 3, []string{"replication factor 3", "broker id 1 listed twice", "without broker.rack: 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := alignedReplicas(tc.brokers, []string{"zone-a"}, tc.rf)
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

// TestAlignedReplicasProperties checks, over random clusters and input
// leaders: rf distinct brokers per partition, the first in the input
// leader's rack when it has brokers, min(rf, racks) racks per partition,
// leaders within one of even over each rack's brokers, and the same
// answer for the same input.
func TestAlignedReplicasProperties(t *testing.T) {
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 36))
		nr := 1 + rng.IntN(4)
		var brokers []brokerRack
		for id := range 1 + rng.IntN(9) {
			brokers = append(brokers, brokerRack{ID: int32(100 - 7*id), Rack: fmt.Sprintf("r%d", rng.IntN(nr))})
		}
		racks := make(map[string]int)
		for _, b := range brokers {
			racks[b.Rack]++
		}
		leaders := make([]string, rng.IntN(40))
		for i := range leaders {
			leaders[i] = fmt.Sprintf("r%d", rng.IntN(nr+1)) // r<nr> has no broker
		}
		rf := 1 + rng.IntN(len(brokers))
		got, err := alignedReplicas(brokers, leaders, rf)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		reversed := slices.Clone(brokers)
		slices.Reverse(reversed)
		again, _ := alignedReplicas(reversed, leaders, rf)
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("seed %d: the brokers' order changed the answer: %v then %v", seed, got, again)
		}
		rackOf := make(map[int32]string)
		for _, b := range brokers {
			rackOf[b.ID] = b.Rack
		}
		led := make(map[int32]int)
		for p, list := range got {
			if len(list) != rf {
				t.Fatalf("seed %d: partition %d has %d replicas, want %d", seed, p, len(list), rf)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(list)))) != rf {
				t.Fatalf("seed %d: partition %d repeats a broker: %v", seed, p, list)
			}
			if racks[leaders[p]] > 0 && rackOf[list[0]] != leaders[p] {
				t.Fatalf("seed %d: partition %d leads on %d in %s, want rack %s", seed, p, list[0], rackOf[list[0]], leaders[p])
			}
			spanned := make(map[string]bool)
			for _, b := range list {
				spanned[rackOf[b]] = true
			}
			if want := min(rf, len(racks)); len(spanned) != want {
				t.Fatalf("seed %d: partition %d spans %d racks, want %d: %v", seed, p, len(spanned), want, list)
			}
			led[list[0]]++
		}
		for r := range racks {
			lo, hi := len(leaders), 0
			for _, b := range brokers {
				if b.Rack == r {
					lo, hi = min(lo, led[b.ID]), max(hi, led[b.ID])
				}
			}
			if hi-lo > 1 {
				t.Fatalf("seed %d: rack %s's brokers lead %d to %d partitions, want within one", seed, r, lo, hi)
			}
		}
	}
}
