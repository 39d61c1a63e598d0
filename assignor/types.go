package assignor

import (
	"encoding/json"
	"fmt"
)

// Defaults of the KIP-441 settings, as in Kafka Streams' StreamsConfig.
const (
	// DefaultAcceptableRecoveryLag is acceptable.recovery.lag: a replica whose
	// lag is at most this many changelog records is caught up.
	DefaultAcceptableRecoveryLag = 10000
	// DefaultMaxWarmupReplicas is max.warmup.replicas: how many warmup
	// replicas one plan may assign in total.
	DefaultMaxWarmupReplicas = 2

	// MaxTasks bounds Input.Tasks: a task is a partition slot, and no Kafka
	// topic has anywhere near this many partitions; a larger count is a
	// broken scenario, not a placement to allocate memory for.
	MaxTasks = 1 << 20
)

// Input is a placement scenario: the tasks to place, the settings that shape
// the placement, and the live clients with what they held in the previous
// plan. It is the `rackstream assign` input document:
//
//	{"num_standby_replicas": 2, "rack_aware_assignment_tags": ["zone","cluster"],
//	 "tasks": 12, "acceptable_recovery_lag": 10000, "max_warmup_replicas": 2,
//	 "clients": [{"id": "n1", "tags": {"zone": "eu-central-1a", "cluster": "k8s-cluster1"},
//	              "capacity": 1, "previous_active": [0], "previous_standby": [3],
//	              "previous_warmup": [], "lags": {"0": 0, "3": 120}}]}
//
// Decoding JSON into an Input (json.Unmarshal or DecodeInput) applies the
// defaults of absent fields: acceptable_recovery_lag 10000, max_warmup_replicas
// 2, capacity 1. A Go caller building an Input starts from DefaultSettings
// and sets every field it means; a zero Capacity also means 1.
//
// Clients are identified by id; their order in Clients does not matter.
type Input struct {
	// Settings shape the placement: num_standby_replicas,
	// rack_aware_assignment_tags, acceptable_recovery_lag and
	// max_warmup_replicas, at the document's top level.
	Settings
	// Tasks is the task count; task i is partition slot i.
	Tasks int `json:"tasks"`
	// Clients are the live clients (instances).
	Clients []Client `json:"clients"`
	// RackAwareness, when set, is what rack-aware placement knows: the
	// strategy, the partitions' racks and the tasks' byte rates. The plan
	// then reports its cross-zone traffic.
	RackAwareness *RackAwareness `json:"rack_awareness,omitempty"`
}

// Client is one live instance: its stable process id, its tags, its
// capacity, its roles in the previous plan and the lag of the state it holds.
type Client struct {
	// ID is the stable process id. Required and unique.
	ID string `json:"id"`
	// Tags are the client tags (client.tag.<key>=<value>). Only the keys in
	// Input.RackAwareAssignmentTags shape the spread; every tag counts for
	// exposure and --lose. The map is referenced, not copied, by the Plan.
	Tags map[string]string `json:"tags"`
	// Capacity is the client's weight in load balance (num.stream.threads).
	// 0 means 1; negative is invalid.
	Capacity int `json:"capacity"`
	// PreviousActive, PreviousStandby and PreviousWarmup are the tasks the
	// client had in each role in the previous plan.
	PreviousActive  []int `json:"previous_active"`
	PreviousStandby []int `json:"previous_standby"`
	PreviousWarmup  []int `json:"previous_warmup"`
	// Lags maps a task whose state the client holds to its lag: the
	// changelog end offset minus the client's checkpoint (the next offset to
	// read), never negative. A task absent from the map has no state here.
	Lags map[int]int64 `json:"lags"`
}

// Plan is a placement: every task's active, standbys and warmups, the same
// by client, whether a probing rebalance should follow, and its quality. It
// is the `rackstream assign` output document; /v1/metadata is a superset.
// Tasks are in task order, Clients in id order, every list sorted (standby
// lists of a task by id).
type Plan struct {
	Tasks   []TaskPlacement   `json:"tasks"`
	Clients []ClientPlacement `json:"clients"`
	// ProbingRebalanceNeeded is set when balance still wants moves that wait
	// for a receiver to catch up (on a warmup, or on a standby it has): the
	// group should rebalance again once it has, or after
	// probing.rebalance.interval.ms.
	ProbingRebalanceNeeded bool    `json:"probing_rebalance_needed"`
	Quality                Quality `json:"quality"`
	// CrossZone is the plan's expected cross-zone traffic, when the input
	// has RackAwareness.
	CrossZone *CrossZone `json:"cross_zone,omitempty"`
}

// TaskPlacement is where one task's replicas are: client ids.
type TaskPlacement struct {
	Task    int      `json:"task"`
	Active  string   `json:"active"`
	Standby []string `json:"standby"`
	// Warmup holds clients restoring the task's state ahead of a move; a
	// warmup is transient and does not count for spread or exposure.
	Warmup []string `json:"warmup"`
}

// ClientPlacement is one client's share of a plan: task ids per role.
type ClientPlacement struct {
	ID      string            `json:"id"`
	Tags    map[string]string `json:"tags"`
	Active  []int             `json:"active"`
	Standby []int             `json:"standby"`
	Warmup  []int             `json:"warmup"`
}

// Quality describes how well a placement protects its tasks. Replicas are
// actives and standbys; warmups don't count. Loads are per unit of capacity.
type Quality struct {
	// Dimensions has one entry per key of rack.aware.assignment.tags, in
	// priority order.
	Dimensions []DimensionQuality `json:"dimensions"`
	// StandbyShortfall sums, over tasks, num.standby.replicas minus the
	// standbys placed.
	StandbyShortfall int `json:"standby_shortfall"`
	// ActiveLoad is the range of actives per unit of capacity over clients.
	ActiveLoad LoadRange `json:"active_load"`
	// ReplicaLoad is the range of (actives + standbys) per unit of capacity.
	ReplicaLoad LoadRange `json:"replica_load"`
	// Exposure lists, for every value of every tag key (the rack-aware keys
	// first in priority order, then the clients' other keys by name; values
	// by name), the tasks that would have no replica left if every client
	// with that value were lost.
	Exposure []Exposure `json:"exposure"`
}

// DimensionQuality is the spread of one tag key.
type DimensionQuality struct {
	// Tag is the key.
	Tag string `json:"tag"`
	// Values is the number of distinct values among the live clients.
	Values int `json:"values"`
	// TasksRepeating counts tasks whose replicas have fewer distinct values
	// of this key than min(number of replicas, Values).
	TasksRepeating int `json:"tasks_repeating"`
}

// LoadRange is the least and the greatest load over clients.
type LoadRange struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Exposure is what losing one tag value costs.
type Exposure struct {
	Tag   string `json:"tag"`
	Value string `json:"value"`
	// TasksWithoutReplica are the tasks all of whose replicas carry Value,
	// ascending.
	TasksWithoutReplica []int `json:"tasks_without_replica"`
}

// FieldError is a scenario that cannot be placed, with the field at fault
// named by its JSON path in the input, e.g. `clients[3].lags["17"]`, or a
// setting out of its range, named by its configuration key, e.g.
// `acceptable.recovery.lag` (Settings.Validate).
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// UnmarshalJSON decodes an Input, leniently about unknown fields, applying
// the defaults of absent fields (see Input). DecodeInput is the strict
// decoder that also accepts /v1/metadata documents.
func (in *Input) UnmarshalJSON(data []byte) error {
	type plain Input
	p := plain{Settings: DefaultSettings()}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*in = Input(p)
	return nil
}

// UnmarshalJSON decodes a Client, applying capacity's default of 1.
func (c *Client) UnmarshalJSON(data []byte) error {
	type plain Client
	p := plain{Capacity: 1}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*c = Client(p)
	return nil
}
