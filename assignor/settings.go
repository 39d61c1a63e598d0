package assignor

import (
	"errors"
	"slices"
	"strconv"

	"github.com/rackstream/rackstream/tags"
)

// Settings are the settings that shape a plan, declared once: the
// scenario's (Input), the leader's as carried to every member
// (balancer.Placement), the ones /v1/metadata shows (MetadataSettings),
// and the ones an instance is configured with (processor.Options,
// config.Config, balancer.Settings) all embed or hold this type. Each field
// holds the value the plan is made with: 0 means 0 (processor.Options,
// whose zero fields take their defaults, says how it reads them).
type Settings struct {
	// NumStandbyReplicas is num.standby.replicas: standbys per task (0 = none).
	NumStandbyReplicas int `json:"num_standby_replicas"`
	// RackAwareAssignmentTags is rack.aware.assignment.tags: the tag keys the
	// standbys spread over, most important first. Every client must carry
	// every key listed here.
	RackAwareAssignmentTags tags.Keys `json:"rack_aware_assignment_tags"`
	// AcceptableRecoveryLag is acceptable.recovery.lag: the largest lag, in
	// changelog records, at which a replica counts as caught up and may take
	// over a task without a warmup. 0 accepts only caught-up replicas.
	AcceptableRecoveryLag int64 `json:"acceptable_recovery_lag"`
	// MaxWarmupReplicas is max.warmup.replicas: the most warmup replicas one
	// plan may assign. At least 1, as in Kafka Streams.
	MaxWarmupReplicas int `json:"max_warmup_replicas"`

	// RackAwareAssignmentStrategy is rack.aware.assignment.strategy: none
	// (or "", today's placement), min_traffic or balance_subtopology
	// (planned as min_traffic). RackAwareAssignmentTrafficCost and
	// RackAwareAssignmentNonOverlapCost are its costs
	// (rack.aware.assignment.traffic_cost and .non_overlap_cost), and
	// ClientRackTag (client.rack.tag) names the client tag holding a
	// client's rack ("" for none: no client has a known rack). The
	// balancer copies the four into Input.RackAwareness, which is where a
	// scenario document sets them: they are not part of the JSON of
	// Settings.
	RackAwareAssignmentStrategy       string `json:"-"`
	RackAwareAssignmentTrafficCost    int    `json:"-"`
	RackAwareAssignmentNonOverlapCost int    `json:"-"`
	ClientRackTag                     string `json:"-"`
}

// DefaultRackAwareStrategy is rack.aware.assignment.strategy's default,
// min_traffic: it gives up none of the placement's guarantees, keeps
// today's plan unless its own costs less, and turns itself off for what has
// no known rack. Kafka Streams' default is none.
const DefaultRackAwareStrategy = StrategyMinTraffic

// MaxRackCost bounds the rack-aware costs, so that scaled sums stay exact.
const MaxRackCost = 1 << 20

// DefaultSettings returns Kafka Streams' defaults: no standbys, no
// rack-aware keys, DefaultAcceptableRecoveryLag and DefaultMaxWarmupReplicas,
// DefaultTrafficCost and DefaultNonOverlapCost; and ours where they differ:
// DefaultRackAwareStrategy, and no client rack tag (the configuration's
// client.rack.tag has its own default).
func DefaultSettings() Settings {
	return Settings{AcceptableRecoveryLag: DefaultAcceptableRecoveryLag, MaxWarmupReplicas: DefaultMaxWarmupReplicas,
		RackAwareAssignmentStrategy: DefaultRackAwareStrategy, RackAwareAssignmentTrafficCost: DefaultTrafficCost,
		RackAwareAssignmentNonOverlapCost: DefaultNonOverlapCost}
}

// The configuration keys of the settings, as errors name them.
const (
	keyNumStandbyReplicas    = "num.standby.replicas"
	keyAcceptableRecoveryLag = "acceptable.recovery.lag"
	keyMaxWarmupReplicas     = "max.warmup.replicas"
	// KeyRackAwareStrategy, KeyTrafficCost and KeyNonOverlapCost are the
	// rack-aware keys, as Kafka Streams names them.
	KeyRackAwareStrategy = "rack.aware.assignment.strategy"
	KeyTrafficCost       = "rack.aware.assignment.traffic_cost"
	KeyNonOverlapCost    = "rack.aware.assignment.non_overlap_cost"
)

// RackStrategies are the values rack.aware.assignment.strategy accepts.
var RackStrategies = []string{StrategyNone, StrategyMinTraffic, StrategyBalanceSubtopology}

// Validate reports every setting out of its range at once, each as a
// *FieldError named by its configuration key (an entry of the tag list by
// its index too: "rack.aware.assignment.tags[1]"). It is the one check of
// the settings: Assign, the balancer and the runtime all apply it.
func (s Settings) Validate() error {
	var errs []error
	if s.NumStandbyReplicas < 0 {
		errs = append(errs, fieldErr(keyNumStandbyReplicas, "must be at least 0, got %d", s.NumStandbyReplicas))
	}
	if s.AcceptableRecoveryLag < 0 {
		errs = append(errs, fieldErr(keyAcceptableRecoveryLag, "must be at least 0, got %d", s.AcceptableRecoveryLag))
	}
	if s.MaxWarmupReplicas < 1 {
		errs = append(errs, fieldErr(keyMaxWarmupReplicas, "must be at least 1, got %d", s.MaxWarmupReplicas))
	}
	switch s.RackAwareAssignmentStrategy {
	case "", StrategyNone, StrategyMinTraffic, StrategyBalanceSubtopology:
	default:
		errs = append(errs, fieldErr(KeyRackAwareStrategy, "must be %s, %s or %s, got %q",
			StrategyNone, StrategyMinTraffic, StrategyBalanceSubtopology, s.RackAwareAssignmentStrategy))
	}
	for _, c := range [...]struct {
		key string
		v   int
	}{{KeyTrafficCost, s.RackAwareAssignmentTrafficCost}, {KeyNonOverlapCost, s.RackAwareAssignmentNonOverlapCost}} {
		if c.v < 0 || c.v > MaxRackCost {
			errs = append(errs, fieldErr(c.key, "must be at least 0 and at most %d, got %d", MaxRackCost, c.v))
		}
	}
	if terrs := tags.CheckKeys(s.RackAwareAssignmentTags); terrs != nil {
		field := tags.RackAwareConfig
		for i, k := range s.RackAwareAssignmentTags { // name the first bad entry
			if k == "" || slices.Contains(s.RackAwareAssignmentTags[:i], k) {
				field += "[" + strconv.Itoa(i) + "]"
				break
			}
		}
		errs = append(errs, fieldErr(field, "%s", terrs.Error()))
	}
	return errors.Join(errs...)
}
