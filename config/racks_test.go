package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/rackstream/rackstream/assignor"
)

// TestRackAwareKeysKeepKafkaStreamsMeaning: Kafka Streams' three rack-aware
// keys are Rackstream's own, with their defaults, and a bad strategy is
// refused naming the key.
func TestRackAwareKeysKeepKafkaStreamsMeaning(t *testing.T) {
	c := mustLoad(t, Sources{File: writeFile(t, required...)})
	p := c.Placement
	if p.RackAwareAssignmentStrategy != assignor.StrategyMinTraffic || p.RackAwareAssignmentTrafficCost != assignor.DefaultTrafficCost ||
		p.RackAwareAssignmentNonOverlapCost != assignor.DefaultNonOverlapCost || p.ClientRackTag != "zone" {
		t.Errorf("defaults: %+v; want min_traffic, traffic cost 10, non-overlap cost 1, rack tag zone", p)
	}

	c = mustLoad(t, Sources{File: writeFile(t, append(slices.Clone(required),
		"rack.aware.assignment.strategy=balance_subtopology", "rack.aware.assignment.traffic_cost=0",
		"rack.aware.assignment.non_overlap_cost=7")...)})
	p = c.Placement
	if p.RackAwareAssignmentStrategy != assignor.StrategyBalanceSubtopology || p.RackAwareAssignmentTrafficCost != 0 || p.RackAwareAssignmentNonOverlapCost != 7 {
		t.Errorf("set: %+v; want balance_subtopology, 0, 7", p)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("a loaded configuration fails the settings' check: %v", err)
	}

	for _, tc := range []struct{ line, want string }{
		{"rack.aware.assignment.strategy=fewest_bytes", "Invalid value fewest_bytes for configuration rack.aware.assignment.strategy: String must be one of: none, min_traffic, balance_subtopology"},
		{"rack.aware.assignment.traffic_cost=-1", "Invalid value -1 for configuration rack.aware.assignment.traffic_cost: Value must be at least 0"},
		{"rack.aware.assignment.non_overlap_cost=x", "Invalid value x for configuration rack.aware.assignment.non_overlap_cost: Not a number of type INT"},
	} {
		errs := loadErrors(t, Sources{File: writeFile(t, append(slices.Clone(required), tc.line)...)})
		if len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
			t.Errorf("%s: errors %q; want one containing %q", tc.line, errs, tc.want)
		}
	}
}
