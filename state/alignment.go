package state

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// brokerRack is a broker and its rack (broker.rack), "" when it has none.
type brokerRack struct {
	ID   int32
	Rack string
}

// alignedReplicas returns the replica list of each of len(leaderRacks)
// changelog partitions, rf replicas each: partition i's first replica, its
// preferred leader, is on a broker of rack leaderRacks[i], the rack of the
// leader of the task's input partition. The other replicas go to racks
// holding none of the partition's replicas while there are any, so a
// partition spans min(rf, racks) racks, as the broker's own rack-aware
// placement does.
//
// A partition whose leaderRacks entry is "" or a rack without brokers
// takes the rack with the fewest leaders per broker. Within a rack the
// leader is the broker with the fewest leaders, then the fewest replicas;
// any other replica is the broker with the fewest replicas; ties go to the
// smallest id. The result is a function of its arguments alone.
//
// It fails when rf is below 1 or above the number of brokers, when a
// broker has no rack (the broker's placement is then the one to use) or
// when two brokers share an id.
func alignedReplicas(brokers []brokerRack, leaderRacks []string, rf int) ([][]int32, error) {
	if err := checkAlignment(brokers, rf); err != nil {
		return nil, err
	}
	bs := slices.Clone(brokers)
	slices.SortFunc(bs, func(a, b brokerRack) int { return int(a.ID) - int(b.ID) })
	var racks []string
	byRack := make(map[string][]int) // indexes into bs, ascending id
	for i, b := range bs {
		if byRack[b.Rack] == nil {
			racks = append(racks, b.Rack)
		}
		byRack[b.Rack] = append(byRack[b.Rack], i)
	}
	slices.Sort(racks)
	leaders, replicas := make([]int, len(bs)), make([]int, len(bs))
	rackLeaders := make(map[string]int, len(racks))
	out := make([][]int32, len(leaderRacks))
	used := make([]bool, len(bs))
	inRack := make(map[string]int, len(racks))
	for p, want := range leaderRacks {
		if byRack[want] == nil {
			want = leastLedRack(racks, byRack, rackLeaders)
		}
		lead := byRack[want][0]
		for _, b := range byRack[want][1:] {
			if leaders[b] < leaders[lead] || leaders[b] == leaders[lead] && replicas[b] < replicas[lead] {
				lead = b
			}
		}
		clear(used)
		clear(inRack)
		list := make([]int32, 0, rf)
		take := func(b int) {
			used[b] = true
			inRack[bs[b].Rack]++
			replicas[b]++
			list = append(list, bs[b].ID)
		}
		take(lead)
		leaders[lead]++
		rackLeaders[want]++
		for len(list) < rf {
			next := -1
			for b := range bs {
				if used[b] {
					continue
				}
				if next < 0 || inRack[bs[b].Rack] < inRack[bs[next].Rack] ||
					inRack[bs[b].Rack] == inRack[bs[next].Rack] && replicas[b] < replicas[next] {
					next = b
				}
			}
			take(next)
		}
		out[p] = list
	}
	return out, nil
}

// leastLedRack returns the rack with the fewest leaders per broker so far,
// the first in name order among equals.
func leastLedRack(racks []string, byRack map[string][]int, rackLeaders map[string]int) string {
	best := racks[0]
	for _, r := range racks[1:] {
		// leaders(r)/brokers(r) < leaders(best)/brokers(best), in integers
		if rackLeaders[r]*len(byRack[best]) < rackLeaders[best]*len(byRack[r]) {
			best = r
		}
	}
	return best
}

func checkAlignment(brokers []brokerRack, rf int) error {
	var errs []error
	if rf < 1 || rf > len(brokers) {
		errs = append(errs, fmt.Errorf("replication factor %d: must be from 1 to the %d brokers", rf, len(brokers)))
	}
	var rackless []string
	seen := make(map[int32]bool, len(brokers))
	for _, b := range brokers {
		if b.Rack == "" {
			rackless = append(rackless, fmt.Sprint(b.ID))
		}
		if seen[b.ID] {
			errs = append(errs, fmt.Errorf("broker id %d listed twice", b.ID))
		}
		seen[b.ID] = true
	}
	if len(rackless) > 0 {
		errs = append(errs, fmt.Errorf("brokers without broker.rack: %s", strings.Join(rackless, ", ")))
	}
	return errors.Join(errs...)
}
