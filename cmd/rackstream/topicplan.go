package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/rackstream/rackstream/config"
)

// topicSpec is one topic `rackstream topics create` makes sure of.
type topicSpec struct {
	name string
	// role says why it is wanted: the configuration key naming it, or
	// --topic.
	role string
	// anyCount accepts an existing topic with any partition count (a
	// global table is read whole, never co-partitioned).
	anyCount bool
	// configs are the topic configs it is created with (nil for none).
	configs map[string]*string
}

func (s topicSpec) String() string { return s.name + " (" + s.role + ")" }

// processorTopics lists the topics of cfg's built-in processor: its input,
// its output and its table, each when set. The table is compacted.
func processorTopics(p config.Processor) []topicSpec {
	var specs []topicSpec
	if p.InputTopic != "" {
		specs = append(specs, topicSpec{name: p.InputTopic, role: "processor.input.topic"})
	}
	if p.OutputTopic != "" {
		specs = append(specs, topicSpec{name: p.OutputTopic, role: "processor.output.topic"})
	}
	if p.TableTopic != "" {
		specs = append(specs, topicSpec{name: p.TableTopic, role: "processor.table.topic", anyCount: p.TableGlobal,
			configs: map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}})
	}
	return specs
}

// addTopic appends s unless a topic of that name is listed already.
func addTopic(specs []topicSpec, s topicSpec) []topicSpec {
	for _, o := range specs {
		if o.name == s.name {
			return specs
		}
	}
	return append(specs, s)
}

// topicPlan is what topics create does: the partition count every topic
// must have, and the topics to create with it (the others exist with it).
type topicPlan struct {
	partitions int32
	// from says where partitions came from, for the output.
	from   string
	create []topicSpec
	exist  []topicSpec
}

// planTopics decides which of specs to create, given each topic's
// partition count on the cluster (-1 or absent: missing). The count is
// flagPartitions when above 0, else that of the existing topic named
// countFrom (the processor's input: outputs and tables stay
// co-partitioned with it). An existing topic with another count is an
// error naming the topic, its count and the count wanted; every such
// error is returned at once.
func planTopics(specs []topicSpec, counts map[string]int32, flagPartitions int32, countFrom string) (*topicPlan, error) {
	if len(specs) == 0 {
		return nil, errors.New("no topic to create: set processor.input.topic or processor.output.topic (--config or --set), or pass --topic")
	}
	p := &topicPlan{partitions: flagPartitions, from: "--partitions"}
	if p.partitions <= 0 {
		n, ok := counts[countFrom]
		if countFrom == "" || !ok || n < 0 {
			missing := "no processor.input.topic is set"
			if countFrom != "" {
				missing = "processor.input.topic " + countFrom + " does not exist yet"
			}
			return nil, fmt.Errorf("how many partitions? %s: pass --partitions N", missing)
		}
		p.partitions, p.from = n, "the partitions of processor.input.topic "+countFrom
	}
	var errs []error
	for _, s := range specs {
		n, ok := counts[s.name]
		switch {
		case !ok || n < 0:
			p.create = append(p.create, s)
		case n == p.partitions || s.anyCount:
			p.exist = append(p.exist, s)
		default:
			errs = append(errs, fmt.Errorf("topic %s exists with %d partitions, not %d (%s): every input, output and co-partitioned table of the processor needs the same count; delete and recreate it, or pass --partitions %d",
				s, n, p.partitions, p.from, n))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// replicationText renders a replication factor for the output.
func replicationText(rf int16) string {
	if rf < 0 {
		return "the broker's default replication factor"
	}
	return "replication factor " + strconv.Itoa(int(rf))
}
