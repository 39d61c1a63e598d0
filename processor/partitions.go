package processor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicCount is a topic and its partition count; -1 when it does not exist.
type TopicCount struct {
	Topic      string
	Partitions int32
}

// PartitionCountError is a broken co-partitioning invariant: task i owns
// partition i of every input and every changelog, so all must have the same
// number of partitions. Its message names every topic and count.
type PartitionCountError struct {
	Inputs []TopicCount
	// Tables are the co-partitioned tables' topics: each must
	// exist, with the inputs' count.
	Tables     []TopicCount
	Changelogs []TopicCount
	// Repartitions are the repartition topics: each, when it exists,
	// must have the inputs' count.
	Repartitions []TopicCount
}

func (e *PartitionCountError) Error() string {
	var b strings.Builder
	b.WriteString("partition counts differ (task i owns partition i of every input, table and changelog, so all need the same count): inputs ")
	writeCounts(&b, e.Inputs)
	if len(e.Tables) > 0 {
		b.WriteString("; tables ")
		writeCounts(&b, e.Tables)
	}
	if len(e.Changelogs) > 0 {
		b.WriteString("; changelogs ")
		writeCounts(&b, e.Changelogs)
	}
	if len(e.Repartitions) > 0 {
		b.WriteString("; repartition topics ")
		writeCounts(&b, e.Repartitions)
	}
	return b.String()
}

func writeCounts(b *strings.Builder, cs []TopicCount) {
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		if c.Partitions < 0 {
			fmt.Fprintf(b, "%s (missing)", c.Topic)
		} else {
			fmt.Fprintf(b, "%s=%d", c.Topic, c.Partitions)
		}
	}
}

// CheckPartitionCounts returns the common partition count of the inputs and
// changelogs. Every input must exist; a missing changelog (count -1) is
// fine (it will be created with the inputs' count). Any difference is a
// *PartitionCountError naming every topic and its count.
func CheckPartitionCounts(inputs, changelogs []TopicCount) (int32, error) {
	return checkCounts(inputs, nil, changelogs, nil)
}

// checkCounts is CheckPartitionCounts with the co-partitioned tables,
// which must exist like the inputs, and the repartition topics, which may
// be missing like the changelogs.
func checkCounts(inputs, tables, changelogs, repartitions []TopicCount) (int32, error) {
	n := int32(-1)
	ok := len(inputs) > 0
	for _, c := range slices.Concat(inputs, tables) {
		if c.Partitions <= 0 || (n >= 0 && c.Partitions != n) {
			ok = false
		}
		if n < 0 && c.Partitions > 0 {
			n = c.Partitions
		}
	}
	for _, c := range slices.Concat(changelogs, repartitions) {
		if c.Partitions >= 0 && c.Partitions != n {
			ok = false
		}
	}
	if !ok {
		return 0, &PartitionCountError{Inputs: sortedCounts(inputs), Tables: sortedCounts(tables),
			Changelogs: sortedCounts(changelogs), Repartitions: sortedCounts(repartitions)}
	}
	return n, nil
}

func sortedCounts(cs []TopicCount) []TopicCount {
	out := append([]TopicCount(nil), cs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

// partitionCounts asks the cluster for the partition count of each topic:
// -1 for a topic that does not exist.
func partitionCounts(ctx context.Context, adm *kadm.Client, topics []string) (map[string]int32, error) {
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topics %s: %w", strings.Join(topics, ", "), err)
	}
	counts := make(map[string]int32, len(topics))
	for _, t := range topics {
		d, ok := details[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			counts[t] = -1
		case d.Err != nil:
			return nil, fmt.Errorf("describe topic %s: %w", t, d.Err)
		default:
			counts[t] = int32(len(d.Partitions))
		}
	}
	return counts, nil
}

// CheckTopology describes t's input, table, changelog and repartition
// topics on the cluster and checks their partition counts
// (CheckPartitionCounts; a repartition topic may be missing, like a
// changelog), returning the task count.
func CheckTopology(ctx context.Context, adm *kadm.Client, t *Topology) (int32, error) {
	counts, err := partitionCounts(ctx, adm, slices.Concat(t.InputTopics(), t.ChangelogTopics()))
	if err != nil {
		return 0, err
	}
	var ins, tbs, chs, rps []TopicCount
	for _, in := range t.inputs {
		if in.repartition {
			rps = append(rps, TopicCount{in.topic, counts[in.topic]})
		} else {
			ins = append(ins, TopicCount{in.topic, counts[in.topic]})
		}
	}
	for _, s := range t.stores {
		if s.table {
			tbs = append(tbs, TopicCount{s.changelog, counts[s.changelog]})
		} else {
			chs = append(chs, TopicCount{s.changelog, counts[s.changelog]})
		}
	}
	n, err := checkCounts(ins, tbs, chs, rps)
	if err != nil {
		return 0, fmt.Errorf("topology %s: %w", t.appID, err)
	}
	return n, nil
}
