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
}

// DefaultSettings returns Kafka Streams' defaults: no standbys, no
// rack-aware keys, DefaultAcceptableRecoveryLag and DefaultMaxWarmupReplicas.
func DefaultSettings() Settings {
	return Settings{AcceptableRecoveryLag: DefaultAcceptableRecoveryLag, MaxWarmupReplicas: DefaultMaxWarmupReplicas}
}

// The configuration keys of the settings, as errors name them.
const (
	keyNumStandbyReplicas    = "num.standby.replicas"
	keyAcceptableRecoveryLag = "acceptable.recovery.lag"
	keyMaxWarmupReplicas     = "max.warmup.replicas"
)

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
