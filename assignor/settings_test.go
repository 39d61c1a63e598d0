package assignor

import (
	"errors"
	"strings"
	"testing"
)

// TestSettingsValidateNamesEachKeyOnce is the table of the settings'
// errors: one per setting out of range, each named by its configuration key
// in the one wording every layer shows.
func TestSettingsValidateNamesEachKeyOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Settings)
		want []string // the errors, in order; none for a valid setting
	}{
		{"defaults", func(*Settings) {}, nil},
		{"zero standbys and zero lag are settings", func(s *Settings) { s.NumStandbyReplicas, s.AcceptableRecoveryLag = 0, 0 }, nil},
		{"negative standbys", func(s *Settings) { s.NumStandbyReplicas = -1 },
			[]string{"num.standby.replicas: must be at least 0, got -1"}},
		{"negative lag", func(s *Settings) { s.AcceptableRecoveryLag = -5 },
			[]string{"acceptable.recovery.lag: must be at least 0, got -5"}},
		{"no warmups", func(s *Settings) { s.MaxWarmupReplicas = 0 },
			[]string{"max.warmup.replicas: must be at least 1, got 0"}},
		{"a duplicate rack-aware key names its index", func(s *Settings) { s.RackAwareAssignmentTags = []string{"zone", "zone"} },
			[]string{"rack.aware.assignment.tags[1]: "}},
		{"six rack-aware keys", func(s *Settings) { s.RackAwareAssignmentTags = []string{"a", "b", "c", "d", "e", "f"} },
			[]string{"rack.aware.assignment.tags: "}},
		{"every strategy and zero costs are settings", func(s *Settings) {
			s.RackAwareAssignmentStrategy, s.RackAwareAssignmentTrafficCost, s.RackAwareAssignmentNonOverlapCost = StrategyBalanceSubtopology, 0, 0
		}, nil},
		{"an unknown strategy", func(s *Settings) { s.RackAwareAssignmentStrategy = "fewest_bytes" },
			[]string{`rack.aware.assignment.strategy: must be none, min_traffic or balance_subtopology, got "fewest_bytes"`}},
		{"negative rack costs", func(s *Settings) { s.RackAwareAssignmentTrafficCost, s.RackAwareAssignmentNonOverlapCost = -1, -2 },
			[]string{"rack.aware.assignment.traffic_cost: must be at least 0", "rack.aware.assignment.non_overlap_cost: must be at least 0"}},
		{"every fault at once", func(s *Settings) { s.NumStandbyReplicas, s.AcceptableRecoveryLag, s.MaxWarmupReplicas = -1, -1, -1 },
			[]string{"num.standby.replicas: ", "acceptable.recovery.lag: ", "max.warmup.replicas: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := DefaultSettings()
			tc.edit(&s)
			err := s.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v; want nil", err)
				}
				return
			}
			var joined interface{ Unwrap() []error }
			if !errors.As(err, &joined) || len(joined.Unwrap()) != len(tc.want) {
				t.Fatalf("Validate: %v; want %d errors", err, len(tc.want))
			}
			for i, e := range joined.Unwrap() {
				var fe *FieldError
				if !errors.As(e, &fe) || !strings.HasPrefix(e.Error(), tc.want[i]) {
					t.Errorf("error %d: %v; want a *FieldError starting %q", i, e, tc.want[i])
				}
			}
		})
	}
}

// TestAssignRejectsTheSettingsValidateRejects: Assign applies the one
// check, with its wording.
func TestAssignRejectsTheSettingsValidateRejects(t *testing.T) {
	in := input(2, 1, nil, client("a"), client("b"))
	in.AcceptableRecoveryLag = -1
	_, err := Assign(in)
	if err == nil || err.Error() != in.Settings.Validate().Error() || in.Validate() == nil {
		t.Fatalf("Assign: %v; want Settings.Validate's error %v", err, in.Settings.Validate())
	}
}
