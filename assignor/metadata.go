package assignor

import "time"

// Metadata is the GET /v1/metadata document, defined once: the query
// server (query) writes it, DecodeDocument and `rackstream
// assign` read it back as a scenario and its plan, and Go clients decode
// it. It lives here, beside Plan, because it is a Plan superset (the same
// "tasks", "clients", "probing_rebalance_needed" and "quality") plus what
// the plan was made with and how the instances are doing; package assignor
// imports nothing but package tags, so every reader of the document can
// import it without the runtime or Kafka.
//
// The placement part (all but Self and Status) is the same on every
// instance for a generation.
type Metadata struct {
	// Generation is the consumer-group generation the placement is of.
	Generation int32 `json:"generation"`
	// Self is the process id of the instance that answered.
	Self string `json:"self"`
	// Partitioner names the partitioner mapping keys to tasks (murmur2,
	// fnv1a, crc32): with Partitions, it lets a client route a key itself.
	Partitioner string `json:"partitioner"`
	// Partitions is the number of partitions of every input, and of tasks.
	Partitions int `json:"partitions"`
	// Settings are the assignment settings the placement was planned with;
	// nil in a document written before they were published (DecodeDocument
	// then infers them, see DecodeInput).
	Settings *MetadataSettings `json:"settings,omitempty"`
	// Clients are the group's members in the placement's member order,
	// each with its endpoint, tags and tasks per role.
	Clients []MetadataClient `json:"clients"`
	// Tasks is every task's replicas by process id, in task order; Active
	// is "" while the task moves between instances (a cooperative
	// hand-off).
	Tasks []TaskPlacement `json:"tasks"`
	// ProbingRebalanceNeeded is set when the plan still wants moves that
	// wait for a warmup to catch up (Plan.ProbingRebalanceNeeded).
	ProbingRebalanceNeeded bool `json:"probing_rebalance_needed"`
	// ProbingDeadline is when the members will rebalance to complete
	// pending moves if no warmup has caught up sooner; absent when none is
	// pending.
	ProbingDeadline *time.Time `json:"probing_deadline,omitempty"`
	// Quality is the placement's quality (Plan.Quality).
	Quality Quality `json:"quality"`
	// CrossZone is the placement's expected cross-zone traffic as the
	// leader computed it (Plan.CrossZone): each task's bytes and whether
	// its active and standbys sit with a replica of its partitions, and
	// the rack awareness it planned with, which DecodeDocument returns as
	// the input's. Absent when the leader knew no partition racks or the
	// group speaks an older wire version.
	CrossZone *CrossZone `json:"cross_zone,omitempty"`
	// Status is how the instances are doing, gathered live when the
	// document was served; it differs from instance to instance and from
	// request to request.
	Status MetadataStatus `json:"status"`
}

// Sources of MetadataSettings.
const (
	// SettingsFromLeader: the settings the group leader planned this
	// generation with, carried in the assignment to every member.
	SettingsFromLeader = "leader"
	// SettingsFromInstance: the answering instance's own configuration,
	// shown for a placement that carries no settings (from a group whose
	// members speak an older wire version); the same as the leader's when
	// every instance is configured alike.
	SettingsFromInstance = "instance"
)

// MetadataSettings are the settings that shape a plan, under their Input
// names, so that `rackstream assign` replans a live placement with the
// settings it was made with rather than guesses.
type MetadataSettings struct {
	// Source says whose settings these are: SettingsFromLeader or
	// SettingsFromInstance.
	Source string `json:"source"`
	// Settings are the settings themselves, at the object's top level.
	Settings
	// ProbingRebalanceIntervalMs is probing.rebalance.interval.ms: always
	// the answering instance's own, whatever Source says (the assignment
	// does not carry it), and not an input of the plan itself.
	ProbingRebalanceIntervalMs int64 `json:"probing_rebalance_interval_ms"`
}

// MetadataClient is one member of the placement.
type MetadataClient struct {
	// ID is its process id.
	ID string `json:"id"`
	// Endpoint is its application.server (host:port), as it announced it:
	// untrusted input, validated before anyone dials it.
	Endpoint string `json:"endpoint"`
	// Tags are its client tags ({} for none).
	Tags map[string]string `json:"tags"`
	// Capacity is its weight in placement (num.stream.threads).
	Capacity int `json:"capacity"`
	// Build is the version of Rackstream it runs, when it says.
	Build string `json:"build,omitempty"`
	// Active, Standby and Warmup are its tasks in each role, ascending.
	Active  []int `json:"active"`
	Standby []int `json:"standby"`
	Warmup  []int `json:"warmup"`
}

// MetadataStatus is the live part of the document.
type MetadataStatus struct {
	// AsOf is when it was gathered (RFC 3339, UTC).
	AsOf string `json:"as_of"`
	// Clients are every member's readiness, in the placement's member
	// order; a member that did not answer in time is not ready, with why.
	Clients []MetadataClientStatus `json:"clients"`
	// Lags are each replica's lag (the most of its stores'), for every
	// replica whose lag its instance knows, by task then client.
	Lags []MetadataLag `json:"lags"`
}

// MetadataClientStatus is one member's readiness.
type MetadataClientStatus struct {
	ID    string `json:"id"`
	Ready bool   `json:"ready"`
	// Reason says why it is not ready, in words.
	Reason string `json:"reason,omitempty"`
	// CrossZoneBytes are the bytes its Kafka clients have exchanged with
	// brokers of other racks since it started, when it says.
	CrossZoneBytes *ZoneBytes `json:"cross_zone_bytes,omitempty"`
}

// ZoneBytes are the bytes an instance's Kafka clients exchanged with
// brokers of another rack than its own (the value of its client.rack.tag
// tag), counted on the wire. Bytes with a broker whose rack is not known (a
// seed connection, which maps to no broker yet; a broker without
// broker.rack), or all of them when the instance has no rack, are counted
// as unknown. Counters only grow.
type ZoneBytes struct {
	Read         uint64 `json:"read"`
	Write        uint64 `json:"write"`
	UnknownRead  uint64 `json:"unknown_read"`
	UnknownWrite uint64 `json:"unknown_write"`
}

// MetadataLag is one replica's lag: changelog records it is behind.
type MetadataLag struct {
	Task   int    `json:"task"`
	Client string `json:"client"`
	// Role is active, standby or warmup (its role in the placement), or
	// the replica's own role for one the placement does not list.
	Role string `json:"role"`
	Lag  int64  `json:"lag"`
	// StreamTime is the task's stream time in epoch ms on its active
	// replica, once it has seen a record.
	StreamTime *int64 `json:"stream_time,omitempty"`
}
