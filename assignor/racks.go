package assignor

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Rack-aware strategies, the values of rack.aware.assignment.strategy.
const (
	// StrategyNone places as if no rack were known (the zero value "" too).
	StrategyNone = "none"
	// StrategyMinTraffic minimises the expected cross-zone bytes plus the
	// cost of moves, under every guarantee of the placement.
	StrategyMinTraffic = "min_traffic"
	// StrategyBalanceSubtopology is Kafka Streams' min_traffic that also
	// evens out each subtopology's tasks over clients. A Rackstream task is a
	// partition slot of the whole topology, one subtopology, whose balance
	// the placement already keeps: it plans as min_traffic.
	StrategyBalanceSubtopology = "balance_subtopology"
)

// Defaults of the rack-aware costs, as Kafka Streams uses them for stateful
// tasks.
const (
	// DefaultTrafficCost is rack.aware.assignment.traffic_cost: the cost of
	// one partition flow of mean weight crossing zones.
	DefaultTrafficCost = 10
	// DefaultNonOverlapCost is rack.aware.assignment.non_overlap_cost: the
	// cost of placing a replica on a client that did not hold it.
	DefaultNonOverlapCost = 1
)

// Partition roles: how a task's replicas exchange bytes with a partition.
const (
	// RoleInput is a partition the active fetches: an input topic, a
	// table's topic, a repartition topic read by the task.
	RoleInput = "input"
	// RoleChangelog is a partition the active produces its state changes to
	// and every standby fetches.
	RoleChangelog = "changelog"
	// RoleOutput is a partition the active produces to: an output topic, a
	// repartition topic written by the task.
	RoleOutput = "output"
)

// RackAwareness is what rack-aware placement knows and wants: the strategy
// and its costs, which client tag carries each client's rack, and for every
// task the racks of its partitions' replicas and its byte rates. It is the
// "rack_awareness" object of the scenario document:
//
//	{"strategy": "min_traffic", "traffic_cost": 10, "non_overlap_cost": 1,
//	 "client_rack_tag": "zone",
//	 "tasks": [{"task": 0, "rates": {"input": 2e6, "changelog": 4e5, "output": 1e6},
//	            "partitions": [{"topic": "orders", "partition": 0, "role": "input",
//	                            "replicas": ["eu-1a", "eu-1b"], "leader": "eu-1a"}]}]}
//
// Decoding JSON applies the defaults of absent fields: strategy none,
// traffic_cost 10, non_overlap_cost 1. A Go caller sets every field it
// means: zero costs are zero.
type RackAwareness struct {
	// RackAwareStrategy is rack.aware.assignment.strategy: none (or ""),
	// min_traffic or balance_subtopology.
	RackAwareStrategy string `json:"strategy"`
	// TrafficCost is rack.aware.assignment.traffic_cost: the cost of one
	// partition flow of mean weight that crosses zones (see CrossZone).
	TrafficCost int `json:"traffic_cost"`
	// NonOverlapCost is rack.aware.assignment.non_overlap_cost: the cost of
	// an active on another client than the previous generation's, or of a
	// standby on a client holding none of the task's state.
	NonOverlapCost int `json:"non_overlap_cost"`
	// ClientRackTag is client.rack.tag: the key of Client.Tags whose value is
	// the client's rack, as its Kafka clients' client.rack. A client without
	// it has an unknown rack.
	ClientRackTag string `json:"client_rack_tag"`
	// Tasks lists, for each task, its partitions' racks and its byte rates.
	// A task not listed has unknown racks.
	Tasks []TaskRacks `json:"tasks"`
}

// TaskRacks is one task's partitions and byte rates.
type TaskRacks struct {
	Task int `json:"task"`
	// Partitions are every partition the task's replicas read or write.
	Partitions []PartitionRacks `json:"partitions"`
	// Rates are the task's measured byte rates; nil when unknown.
	Rates *TaskRates `json:"rates,omitempty"`
}

// PartitionRacks is where one partition's replicas are.
type PartitionRacks struct {
	// Topic and Partition name the partition in reasons.
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Role is RoleInput, RoleChangelog or RoleOutput.
	Role string `json:"role"`
	// Replicas holds the rack of each replica's broker, "" for a broker
	// without broker.rack.
	Replicas []string `json:"replicas"`
	// Leader is the rack of the leader's broker, "" when unknown.
	Leader string `json:"leader"`
}

// TaskRates are a task's byte rates, in bytes per second, summed over the
// task's partitions of each role (split evenly among them).
type TaskRates struct {
	// Input is what the active fetches from its input partitions.
	Input float64 `json:"input"`
	// Changelog is what the active produces to its changelog partitions,
	// and each standby fetches.
	Changelog float64 `json:"changelog"`
	// Output is what the active produces to its output partitions.
	Output float64 `json:"output"`
}

// UnmarshalJSON decodes RackAwareness strictly (an unknown field is an
// error) and applies the defaults of absent fields.
func (ra *RackAwareness) UnmarshalJSON(data []byte) error {
	type plain RackAwareness
	p := plain{TrafficCost: DefaultTrafficCost, NonOverlapCost: DefaultNonOverlapCost}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("rack_awareness: %w", err)
	}
	*ra = RackAwareness(p)
	return nil
}

// CrossZone is a plan's expected cross-zone traffic, in bytes per second
// (in partition flows when no task has rates: each flow weighs 1).
//
// An active fetches each input partition across zones when no replica is
// in its rack, and produces to each changelog and output partition across
// zones when the leader is in another rack. A standby fetches each
// changelog partition across zones when no replica is in its rack. Follower
// fetching (KIP-392) is assumed on. A flow whose client or partition rack
// is unknown counts as crossing.
type CrossZone struct {
	// Strategy is the strategy planned with.
	Strategy string `json:"strategy"`
	// Unknown names what rack-aware placement could not see: each entry a
	// client without a rack or a task touching a partition without racks,
	// and what it kept out of the optimisation. Empty when all is known.
	Unknown []string `json:"unknown"`
	// Total is the sum of Tasks' bytes.
	Total float64 `json:"total"`
	// Fetch and Produce split Total.
	Fetch   float64 `json:"fetch"`
	Produce float64 `json:"produce"`
	// Tasks are in task order.
	Tasks []TaskCrossZone `json:"tasks"`
	// RackAwareness is what the group leader planned with (partition racks
	// and byte rates), carried in its placement so that a what-if of the
	// live placement recomputes these figures for the survivors. Assign
	// leaves it nil.
	RackAwareness *RackAwareness `json:"rack_awareness,omitempty"`
}

// TaskCrossZone is one task's expected cross-zone traffic.
type TaskCrossZone struct {
	Task int `json:"task"`
	// Bytes is the task's cross-zone bytes per second: Fetch + Produce.
	Bytes   float64 `json:"bytes"`
	Fetch   float64 `json:"fetch"`
	Produce float64 `json:"produce"`
	// ActiveLocal reports whether every input partition has a replica in
	// the active's rack.
	ActiveLocal bool `json:"active_local"`
	// StandbyLocal reports, for each standby of TaskPlacement.Standby in
	// order, whether every changelog partition has a replica in its rack.
	StandbyLocal []bool `json:"standby_local"`
}
