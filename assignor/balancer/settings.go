package balancer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/tags"
)

// ProtocolName is the group protocol name every Rackstream member offers.
const ProtocolName = "rackstream"

// Defaults of Settings, which DefaultSettings returns.
const (
	DefaultProbingInterval     = 10 * time.Minute
	MinProbingInterval         = time.Minute
	DefaultHeartbeatInterval   = time.Second
	DefaultWarmupCheckInterval = time.Second
	DefaultEndOffsetsTimeout   = 5 * time.Second
	// DefaultMaxInlineBytes is how many bytes of subscriptions plus
	// assignments a generation may take before the placement is published
	// to the placement topic instead of being copied into every assignment:
	// half the broker's default 1 MiB group-metadata record, for margin.
	DefaultMaxInlineBytes = 512 << 10
)

// DefaultSettings returns the defaults of every tunable field of Settings:
// the one place they are written (the processor and the configuration's
// key table take theirs from here). Set the identity fields
// (ApplicationID, ProcessID, InputTopics...) and change what you need. A
// field left at zero means zero (no standbys, only caught-up replicas, no
// inline placement) or is rejected by New, naming it and its key, where
// zero makes no sense (a zero capacity, a zero heartbeat).
func DefaultSettings() Settings {
	return Settings{
		Capacity:                   1,
		Placement:                  assignor.DefaultSettings(),
		ProbingInterval:            DefaultProbingInterval,
		PlacementReplicationFactor: -1,
		MaxInlineBytes:             DefaultMaxInlineBytes,
		HeartbeatInterval:          DefaultHeartbeatInterval,
		WarmupCheckInterval:        DefaultWarmupCheckInterval,
	}
}

// Settings configure one member's balancer. They are plain values so that
// package assignor/balancer depends on nothing but assignor and tags; the
// processor builds them from its configuration.
type Settings struct {
	// ApplicationID is application.id: the group id and the prefix of the
	// placement topic, <ApplicationID>-placement. Required.
	ApplicationID string
	// ProcessID identifies this instance across restarts (persisted in
	// state.dir). Required, unique in the group, at most 255 bytes.
	ProcessID string
	// Endpoint is application.server, host:port for queries. May be empty.
	Endpoint string
	// Tags are the client tags (client.tag.<key>=<value>).
	Tags tags.Set
	// Capacity is the instance's weight in placement (num.stream.threads);
	// at least 1.
	Capacity int
	// InputTopics are the co-partitioned input topics: task i is partition
	// i of each. Required.
	InputTopics []string
	// ChangelogTopics are the stores' changelogs: task i's state is
	// partition i of each. A task's lag is the sum over them of end offset
	// minus checkpoint.
	ChangelogTopics []string
	// OutputTopics are the topics the actives produce output records to.
	// Task i produces to partition i of each, as far as cross-zone
	// traffic is modelled (Rates' Output counts those records alone).
	OutputTopics []string
	// Placement are the settings that shape a plan (num.standby.replicas,
	// rack.aware.assignment.tags, acceptable.recovery.lag,
	// max.warmup.replicas): the leader plans with its own, and carries them
	// to every member in the placement. Every key of
	// RackAwareAssignmentTags must be one of Tags.
	Placement assignor.Settings
	// ProbingInterval is probing.rebalance.interval.ms: while the plan asks
	// for probing (its actives wait for a receiver to catch up), a probing
	// rebalance runs at least this often, sooner when a probe trigger or
	// warmup catches up. It also caps the backoff after probes that changed
	// nothing. Less than a minute is an error, as in Kafka Streams.
	ProbingInterval time.Duration

	// Checkpoints returns, for every task whose state this instance holds,
	// its checkpoint: the sum over the task's changelog partitions of the
	// next offset to read (Kafka Streams' task offset sum). It is called
	// on every join and every warmup check; it must be cheap and safe for
	// concurrent use. Nil means no state.
	Checkpoints func() map[int32]int64
	// EndOffsets returns the end offsets (high watermarks, or last stable
	// offsets under read_committed) of every partition of the given topics.
	// Nil means kadm on the group's own client: ListEndOffsets, or
	// ListCommittedOffsets with ReadCommitted. Tests substitute their own.
	EndOffsets func(ctx context.Context, topics []string) (map[string]map[int32]int64, error)
	// Rates, when set, returns the measured byte rates of this member's
	// active tasks, reported in its join metadata (version 5 and up) for
	// the leader to weigh cross-zone traffic by; it is called on every
	// join and must be cheap and safe for concurrent use. Nil reports none.
	Rates func() map[int32]TaskRate
	// PartitionRacks, when set, returns the latest snapshot of the racks
	// of the input, changelog and output partitions, nil while none is
	// known; the leader calls it in every balance, so it must not block.
	// Nil means the balancer reads them itself from cluster metadata, in
	// the background, at once and every 30 seconds.
	PartitionRacks func() Racks
	// ReadCommitted makes the default EndOffsets return last stable
	// offsets, as restores under exactly-once read up to them.
	ReadCommitted bool

	// ClientOpts are connection options (seed brokers, TLS, SASL, dialer)
	// for the balancer's own short-lived clients: the leader's publisher and
	// the members' reader of the placement topic. Nil means the seed
	// brokers and dialer of the group's client.
	ClientOpts []kgo.Opt
	// PlacementReplicationFactor is the replication factor the leader
	// creates the placement topic with (replication.factor); -1 means the
	// broker's default, 0 is an error.
	PlacementReplicationFactor int16
	// MaxInlineBytes is the size of subscriptions plus assignments above
	// which the placement is published to the placement topic; 0 publishes
	// every placement. Tests lower it to force the published path.
	MaxInlineBytes int

	// HeartbeatInterval is the group heartbeat interval [Balancer.Opts]
	// installs (DefaultHeartbeatInterval, 1 s, so that a clean leave is
	// acted on within a second); at least 1 ms.
	HeartbeatInterval time.Duration
	// WarmupCheckInterval is how often a member with warmups or probe
	// triggers compares their checkpoints to the changelog end offsets; at
	// least 1 ms.
	WarmupCheckInterval time.Duration

	// OnAssignment, if set, is called with every generation's assignment
	// once its placement is known, from kgo's OnPartitionsAssigned
	// goroutine (before the processor's own hook if that calls
	// [Balancer.OnPartitionsAssigned] first). It must not block for long.
	OnAssignment func(Assignment)

	// Logger receives the balancer's logs; nil means slog.Default().
	Logger *slog.Logger

	// wireVersion, when non-zero, caps the versions this member speaks:
	// tests use it to play an older release in a rolling upgrade.
	wireVersion uint8
	// assign replaces assignor.Assign in tests that need a hand-made plan.
	assign func(assignor.Input) (*assignor.Plan, error)
	// readTimeout bounds one read of a published placement; 0 means
	// publishTimeout. Tests shorten it.
	readTimeout time.Duration
	// publish replaces the placement topic writer in tests without a broker.
	publish func(*Placement, uint8) (*PlacementRef, error)
}

// validate checks s (zero means zero, or is an error naming the field's
// key) and fills in the test hooks.
func (s *Settings) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.ApplicationID == "" {
		bad("balancer: application.id is required")
	}
	switch {
	case s.ProcessID == "":
		bad("balancer: process id is required")
	case len(s.ProcessID) > maxIDBytes || !utf8.ValidString(s.ProcessID):
		bad("balancer: process id %q must be valid UTF-8 of at most %d bytes", s.ProcessID, maxIDBytes)
	}
	if len(s.Endpoint) > maxEndpointBytes || !utf8.ValidString(s.Endpoint) {
		bad("balancer: application.server %q must be valid UTF-8 of at most %d bytes", s.Endpoint, maxEndpointBytes)
	}
	if s.Capacity < 1 || s.Capacity > maxCapacity {
		bad("balancer: capacity (num.stream.threads) %d: Value must be at least 1 and at most %d", s.Capacity, maxCapacity)
	}
	if len(s.InputTopics) == 0 {
		bad("balancer: at least one input topic is required")
	}
	for _, t := range slices.Concat(s.InputTopics, s.ChangelogTopics, s.OutputTopics) {
		if strings.TrimSpace(t) == "" {
			bad("balancer: empty topic name in input, changelog or output topics")
		}
	}
	if err := s.Placement.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("balancer: %w", err))
	}
	for _, k := range s.Placement.RackAwareAssignmentTags {
		if _, ok := s.Tags.Get(k); !ok {
			bad("balancer: rack.aware.assignment.tags names %q, which is not a client tag of this instance (client.tag.%s)", k, k)
		}
	}
	if s.ProbingInterval < MinProbingInterval {
		bad("balancer: probing.rebalance.interval.ms %d: Value must be at least %d", s.ProbingInterval.Milliseconds(), MinProbingInterval.Milliseconds())
	}
	if s.PlacementReplicationFactor == 0 || s.PlacementReplicationFactor < -1 {
		bad("balancer: replication.factor %d of the placement topic: Value must be -1 (the broker's default) or at least 1", s.PlacementReplicationFactor)
	}
	if s.MaxInlineBytes < 0 {
		bad("balancer: MaxInlineBytes %d: Value must be at least 0 (0 publishes every placement)", s.MaxInlineBytes)
	}
	if s.HeartbeatInterval < time.Millisecond {
		bad("balancer: heartbeat interval %v: Value must be at least 1ms", s.HeartbeatInterval)
	}
	if s.WarmupCheckInterval < time.Millisecond {
		bad("balancer: warmup check interval %v: Value must be at least 1ms", s.WarmupCheckInterval)
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	if s.wireVersion == 0 || s.wireVersion > LatestVersion {
		s.wireVersion = LatestVersion
	}
	if s.readTimeout <= 0 {
		s.readTimeout = publishTimeout
	}
	if s.assign == nil {
		s.assign = assignor.Assign
	}
	return errors.Join(errs...)
}

// ErrStaticMembership is returned by [Balancer.CheckClient] for a client
// configured with group.instance.id.
var ErrStaticMembership = errors.New("group.instance.id (static membership) is not supported by Rackstream: " +
	"a restarted static group leader is told by the coordinator to skip assignment (KIP-814), so the custom " +
	"balancer that computes the placement never runs and members would keep a stale placement; " +
	"remove group.instance.id (Rackstream leaves the group on shutdown and uses a 1 s heartbeat, so moves are prompt without it)")
