package balancer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor"
)

// Partition racks: where the replicas of each task's input, table,
// changelog and output partitions are, which the leader turns into the
// assignor's RackAwareness. The leader never waits for them: a background loop reads
// the cluster metadata and the leader plans with the latest snapshot.

// PartitionRack is where one partition's replicas are.
type PartitionRack struct {
	// Replicas are the racks of the replicas' brokers, "" for a broker
	// without broker.rack.
	Replicas []string
	// Leader is the rack of the leader's broker, "" when it has none or
	// the partition has no leader.
	Leader string
}

// Racks is a snapshot of partition racks: topic -> partition -> racks.
type Racks map[string]map[int32]PartitionRack

// Reasons rack-aware placement is off for part of the group: the label
// of the rackstream_balancer_rack_awareness_off gauge and the keys of
// Stats.RackAwarenessOff.
const (
	// OffNoPartitionRacks: the leader had no metadata snapshot yet; off
	// for every task (value 1).
	OffNoPartitionRacks = "no_partition_racks"
	// OffBrokerWithoutRack: tasks with a partition whose replica or leader
	// is on a broker without broker.rack, or without metadata; they keep
	// their placement.
	OffBrokerWithoutRack = "broker_without_rack"
	// OffMemberWithoutRack: members without the client.rack.tag tag; they
	// keep their replicas and get none for bytes.
	OffMemberWithoutRack = "member_without_rack"
)

// racksRefresh is how often the default partition racks are read again:
// racks and leaders change rarely, and a stale leader only misprices a
// produce until the next read.
const racksRefresh = 30 * time.Second

// rackAwareness builds the assignor's rack input for numTasks tasks from
// the leader's settings, a snapshot of partition racks (nil: none yet) and
// the usable members. Task i's partitions are partition i of every input,
// changelog and output topic that has one; its rates are those its active
// reported (ratesOf). Without a client rack tag (client.rack.tag empty) no
// client has a rack: it returns nil and reports nothing off. It returns nil when the snapshot is
// nil, and, per reason (Off...), how much the optimisation is off for
// (nothing under the strategy none, which optimises nothing).
func rackAwareness(s *Settings, snap Racks, subs []*Subscription, numTasks int) (*assignor.RackAwareness, map[string]int) {
	ra, off := rackInput(s, snap, subs, numTasks)
	switch s.Placement.RackAwareAssignmentStrategy {
	case "", assignor.StrategyNone:
		return ra, map[string]int{}
	}
	return ra, off
}

func rackInput(s *Settings, snap Racks, subs []*Subscription, numTasks int) (*assignor.RackAwareness, map[string]int) {
	off := make(map[string]int)
	rates := ratesOf(subs)
	if s.Placement.ClientRackTag == "" {
		return nil, off // no client can have a rack: nothing to plan or report
	}
	if snap == nil {
		off[OffNoPartitionRacks] = 1
		return nil, off
	}
	p := &s.Placement
	ra := &assignor.RackAwareness{
		RackAwareStrategy: p.RackAwareAssignmentStrategy,
		TrafficCost:       p.RackAwareAssignmentTrafficCost,
		NonOverlapCost:    p.RackAwareAssignmentNonOverlapCost,
		ClientRackTag:     p.ClientRackTag,
		Tasks:             make([]assignor.TaskRacks, numTasks),
	}
	for _, sub := range subs {
		if v, ok := sub.Tags.Get(p.ClientRackTag); !ok || v == "" {
			off[OffMemberWithoutRack]++
		}
	}
	roles := [...]struct {
		role   string
		topics []string
	}{{assignor.RoleInput, s.InputTopics}, {assignor.RoleChangelog, s.ChangelogTopics}, {assignor.RoleOutput, s.OutputTopics}}
	for t := range numTasks {
		tr := &ra.Tasks[t]
		tr.Task, tr.Rates = t, rates[int32(t)]
		blind := false
		for _, r := range roles {
			for _, topic := range r.topics {
				ps, known := snap[topic]
				pr, ok := ps[int32(t)]
				if known && !ok {
					continue // a topic with fewer partitions than tasks
				}
				tr.Partitions = append(tr.Partitions, assignor.PartitionRacks{
					Topic: topic, Partition: int32(t), Role: r.role,
					Replicas: slices.Clone(pr.Replicas), Leader: pr.Leader,
				})
				if !ok || pr.Leader == "" || len(pr.Replicas) == 0 || slices.Contains(pr.Replicas, "") {
					blind = true
				}
			}
		}
		if blind {
			off[OffBrokerWithoutRack]++
		}
	}
	return ra, off
}

// offSummary renders off in reason order, for a log line.
func offSummary(off map[string]int) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(off)) {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%d", k, off[k])
	}
	return b.String()
}

// partitionRacks returns the snapshot the leader plans with: the
// settings' PartitionRacks, else the background loop's latest read.
func (b *Balancer) partitionRacks() Racks {
	if b.s.PartitionRacks != nil {
		return b.s.PartitionRacks()
	}
	if p := b.racks.Load(); p != nil {
		return *p
	}
	return nil
}

// noteRackAwareness records what rack-aware placement was off for in the
// last plan (Stats.RackAwarenessOff) and logs it when it changes; unknown
// are the plan's own words for what it could not see.
func (b *Balancer) noteRackAwareness(off map[string]int, unknown []string) {
	summary := offSummary(off)
	b.mu.Lock()
	changed := summary != b.rackOffSummary
	b.rackOff, b.rackOffSummary = off, summary
	b.mu.Unlock()
	if !changed {
		return
	}
	if len(off) == 0 {
		b.log.Info("rack-aware placement sees every rack")
		return
	}
	const shown = 5
	b.log.Warn("rack-aware placement is off for part of the group: what it touches keeps today's placement",
		"off", summary, "strategy", b.s.Placement.RackAwareAssignmentStrategy,
		"unknown", unknown[:min(len(unknown), shown)], "more", max(len(unknown)-shown, 0))
}

// racksLoop reads the partition racks of the input, changelog and output
// topics once the client has connected to a broker, and then every
// racksRefresh, until stop closes.
func (b *Balancer) racksLoop(cl *kgo.Client, connected <-chan struct{}, stop, done chan struct{}) {
	defer close(done)
	select {
	case <-stop:
		return
	case <-connected:
	}
	topics := slices.Concat(b.s.InputTopics, b.s.ChangelogTopics, b.s.OutputTopics)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := stoppable(stop, DefaultEndOffsetsTimeout)
		snap, err := readRacks(ctx, kadm.NewClient(cl), topics)
		cancel()
		if err != nil {
			b.log.Debug("cannot read partition racks; the leader plans with the previous read", "err", err)
		} else {
			b.racks.Store(&snap)
		}
		t.Reset(racksRefresh)
	}
}

// readRacks reads the racks of topics' partitions from cluster metadata.
// A topic the metadata lacks or reports an error for is left out: its
// partitions count as having unknown racks.
func readRacks(ctx context.Context, adm *kadm.Client, topics []string) (Racks, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("metadata of %d topics: %w", len(topics), err)
	}
	return racksOf(md), nil
}

// racksOf maps metadata's partitions to their brokers' racks.
func racksOf(md kadm.Metadata) Racks {
	rack := make(map[int32]string, len(md.Brokers))
	for _, br := range md.Brokers {
		if br.Rack != nil {
			rack[br.NodeID] = *br.Rack
		}
	}
	out := make(Racks, len(md.Topics))
	for name, td := range md.Topics {
		if td.Err != nil {
			continue
		}
		ps := make(map[int32]PartitionRack, len(td.Partitions))
		for p, pd := range td.Partitions {
			pr := PartitionRack{Leader: rack[pd.Leader], Replicas: make([]string, len(pd.Replicas))}
			for i, r := range pd.Replicas {
				pr.Replicas[i] = rack[r]
			}
			ps[p] = pr
		}
		out[name] = ps
	}
	return out
}

// wireRates turns a member's rates into the subscription's field: tasks
// ascending, those out of range left out, rates capped at maxRate.
func wireRates(m map[int32]TaskRate) []TaskRate {
	var out []TaskRate
	for _, t := range slices.Sorted(maps.Keys(m)) {
		if t < 0 || t >= maxTask {
			continue
		}
		r := m[t]
		r.Task, r.Input, r.Changelog, r.Output = t, min(r.Input, maxRate), min(r.Changelog, maxRate), min(r.Output, maxRate)
		out = append(out, r)
	}
	return out
}

// ratesOf returns, per task, the byte rates reported by the member whose
// plan is newest among those reporting it: its current active. A task no
// member reports has no entry and is weighed as the mean of the others.
func ratesOf(subs []*Subscription) map[int32]*assignor.TaskRates {
	gen := make(map[int32]int32)
	out := make(map[int32]*assignor.TaskRates)
	for _, sub := range subs {
		for _, r := range sub.Rates {
			if g, ok := gen[r.Task]; ok && g >= sub.PlanGeneration {
				continue
			}
			gen[r.Task] = sub.PlanGeneration
			out[r.Task] = &assignor.TaskRates{Input: float64(r.Input), Changelog: float64(r.Changelog), Output: float64(r.Output)}
		}
	}
	return out
}
