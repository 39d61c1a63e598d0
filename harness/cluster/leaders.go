package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// PartitionState is one partition's leader and replicas, as a broker's
// metadata shows them.
type PartitionState struct {
	Topic     string
	Partition int32
	// Leader is the leading node's id, -1 while the partition has none.
	Leader int32
	// Replicas are the nodes holding a replica; ISR those in sync.
	Replicas, ISR []int32
}

// LeaderOfMost returns the node leading the most of parts and how many it
// leads; the lowest id wins a tie. It returns -1 and 0 when no partition
// has a leader.
func LeaderOfMost(parts []PartitionState) (node int32, led int) {
	count := map[int32]int{}
	for _, p := range parts {
		if p.Leader >= 0 {
			count[p.Leader]++
		}
	}
	node = -1
	for n, c := range count {
		if c > led || c == led && n < node {
			node, led = n, c
		}
	}
	return node, led
}

// FullyReplicated reports whether every partition of parts has a leader,
// replicas replicas and every one of them in its ISR.
func FullyReplicated(parts []PartitionState, replicas int) bool {
	for _, p := range parts {
		if p.Leader < 0 || len(p.Replicas) != replicas || len(p.ISR) != replicas {
			return false
		}
		for _, r := range p.Replicas {
			if !slices.Contains(p.ISR, r) {
				return false
			}
		}
	}
	return true
}

// InSync reports whether every partition of parts has a leader and node in
// its ISR: a node resumed after a crash has caught up everywhere.
func InSync(parts []PartitionState, node int32) bool {
	for _, p := range parts {
		if p.Leader < 0 || !slices.Contains(p.ISR, node) {
			return false
		}
	}
	return true
}

// LedWithout reports whether every partition of parts has a leader other
// than node, and node is in no ISR: the controller has fenced node and
// moved its leaderships.
func LedWithout(parts []PartitionState, node int32) bool {
	for _, p := range parts {
		if p.Leader < 0 || p.Leader == node || slices.Contains(p.ISR, node) {
			return false
		}
	}
	return true
}

// Partitions returns the state of every partition of topics, sorted by
// topic and partition, as one node's metadata shows it now. A topic the
// node reports an error for is an error; a partition without a leader has
// Leader -1.
func (b *Brokers) Partitions(ctx context.Context, topics ...string) ([]PartitionState, error) {
	md, err := b.adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("cluster: metadata of %v: %w", topics, err)
	}
	var out []PartitionState
	for _, topic := range topics {
		td, ok := md.Topics[topic]
		if !ok {
			return nil, fmt.Errorf("cluster: metadata of %v: no topic %s", topics, topic)
		}
		if td.Err != nil {
			return nil, fmt.Errorf("cluster: metadata of topic %s: %w", topic, td.Err)
		}
		for _, p := range td.Partitions.Sorted() {
			out = append(out, PartitionState{
				Topic: topic, Partition: p.Partition, Leader: p.Leader,
				Replicas: slices.Clone(p.Replicas), ISR: slices.Clone(p.ISR),
			})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out, nil
}

// CreateTopic creates topic with partitions partitions, replicationFactor
// replicas each and configs (nil for none), and returns once every
// partition has a leader and every replica in its ISR, or ctx ends.
func (b *Brokers) CreateTopic(ctx context.Context, topic string, partitions int32, replicationFactor int16, configs map[string]*string) error {
	resp, err := b.adm.CreateTopic(ctx, partitions, replicationFactor, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("cluster: create topic %s (%d partitions, replication factor %d): %w", topic, partitions, replicationFactor, err)
	}
	for {
		parts, err := b.Partitions(ctx, topic)
		if err == nil && int32(len(parts)) == partitions && FullyReplicated(parts, int(replicationFactor)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: topic %s created but not fully replicated in metadata (last: %v, %v): %w", topic, parts, err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Admin returns an admin client on every node's PLAINTEXT listener, owned
// by b (closed by Close).
func (b *Brokers) Admin() *kadm.Client { return b.adm }
