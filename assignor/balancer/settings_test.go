package balancer

import (
	"strings"
	"testing"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/tags"
)

// TestZeroSettingMeansZero is the table of what a zero in each tunable
// field of Settings means: zero where zero is a setting, an error naming
// the key where it is not. No zero means "the default".
func TestZeroSettingMeansZero(t *testing.T) {
	valid := func() Settings {
		s := DefaultSettings()
		s.ApplicationID, s.ProcessID, s.InputTopics = "app", "p0", []string{"in"}
		s.Tags, s.Placement.RackAwareAssignmentTags = tags.MustSet("zone", "a"), tags.Keys{"zone"}
		return s
	}
	if err := func() *Settings { s := valid(); return &s }().validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
	for _, tc := range []struct {
		field   string
		zero    func(*Settings)
		wantErr string                 // a part of validate's error, or ""
		means   func(*Settings) string // what went wrong with an accepted zero, or ""
	}{
		{"ApplicationID", func(s *Settings) { s.ApplicationID = "" }, "application.id is required", nil},
		{"ProcessID", func(s *Settings) { s.ProcessID = "" }, "process id is required", nil},
		{"Endpoint", func(s *Settings) { s.Endpoint = "" }, "", func(s *Settings) string {
			return ifNot(s.Endpoint == "", "an empty endpoint is announced as none")
		}},
		{"Tags", func(s *Settings) { s.Tags, s.Placement.RackAwareAssignmentTags = tags.Set{}, nil }, "", nil},
		{"Capacity", func(s *Settings) { s.Capacity = 0 }, "capacity (num.stream.threads) 0: Value must be at least 1", nil},
		{"InputTopics", func(s *Settings) { s.InputTopics = nil }, "at least one input topic is required", nil},
		{"ChangelogTopics", func(s *Settings) { s.ChangelogTopics = nil }, "", nil}, // stateless: lag 0 everywhere
		{"NumStandbys", func(s *Settings) { s.Placement.NumStandbyReplicas = 0 }, "", func(s *Settings) string {
			return ifNot(s.Placement.NumStandbyReplicas == 0, "zero standbys became something else")
		}},
		{"RackAwareTags", func(s *Settings) { s.Placement.RackAwareAssignmentTags = nil }, "", nil},
		{"AcceptableRecoveryLag", func(s *Settings) { s.Placement.AcceptableRecoveryLag = 0 }, "", func(s *Settings) string {
			return ifNot(s.Placement.AcceptableRecoveryLag == 0, "acceptable.recovery.lag=0 (only caught-up replicas) became the default")
		}},
		{"MaxWarmups", func(s *Settings) { s.Placement.MaxWarmupReplicas = 0 }, "max.warmup.replicas: must be at least 1, got 0", nil},
		{"ProbingInterval", func(s *Settings) { s.ProbingInterval = 0 }, "probing.rebalance.interval.ms 0: Value must be at least 60000", nil},
		{"PlacementReplicationFactor", func(s *Settings) { s.PlacementReplicationFactor = 0 }, "replication.factor 0 of the placement topic", nil},
		{"MaxInlineBytes", func(s *Settings) { s.MaxInlineBytes = 0 }, "", func(s *Settings) string {
			return ifNot(s.MaxInlineBytes == 0, "MaxInlineBytes=0 (publish every placement) became the default")
		}},
		{"HeartbeatInterval", func(s *Settings) { s.HeartbeatInterval = 0 }, "heartbeat interval 0s: Value must be at least 1ms", nil},
		{"WarmupCheckInterval", func(s *Settings) { s.WarmupCheckInterval = 0 }, "warmup check interval 0s: Value must be at least 1ms", nil},
		{"Checkpoints", func(s *Settings) { s.Checkpoints = nil }, "", nil}, // no state held
		{"EndOffsets", func(s *Settings) { s.EndOffsets = nil }, "", nil},   // kadm on the group's client
		{"Logger", func(s *Settings) { s.Logger = nil }, "", func(s *Settings) string {
			return ifNot(s.Logger != nil, "a nil logger stayed nil; it means slog.Default()")
		}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			s := valid()
			tc.zero(&s)
			err := s.validate()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("a zero %s: %v; want an error containing %q", tc.field, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("a zero %s is rejected: %v", tc.field, err)
			}
			if tc.means != nil {
				if why := tc.means(&s); why != "" {
					t.Error(why)
				}
			}
		})
	}
}

func TestDefaultSettingsAreKafkaStreams(t *testing.T) {
	s := DefaultSettings()
	if s.Placement.AcceptableRecoveryLag != assignor.DefaultAcceptableRecoveryLag || s.Placement.MaxWarmupReplicas != assignor.DefaultMaxWarmupReplicas ||
		s.ProbingInterval != DefaultProbingInterval || s.Capacity != 1 || s.PlacementReplicationFactor != -1 {
		t.Errorf("defaults %+v", s)
	}
}

func ifNot(ok bool, why string) string {
	if ok {
		return ""
	}
	return why
}
