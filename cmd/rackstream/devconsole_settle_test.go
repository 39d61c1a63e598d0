package main

import (
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/harness/kafkatest"
)

func TestDevPlacementIsSettledWithMembersRunElsewhere(t *testing.T) {
	const a, b, ext = "pid-a", "pid-b", "pid-ext"
	members := func(ids ...string) []balancer.Member {
		ms := make([]balancer.Member, len(ids))
		for i, id := range ids {
			ms[i] = balancer.Member{ProcessID: id}
		}
		return ms
	}
	whole := []balancer.Replicas{{Active: 0}, {Active: 1}}
	for _, tt := range []struct {
		name             string
		p                *balancer.Placement
		running, stopped []string
		want             bool
	}{
		{"every running instance a member", &balancer.Placement{Members: members(a, b), Tasks: whole}, []string{a, b}, nil, true},
		{"with a member run elsewhere", &balancer.Placement{Members: members(a, ext, b), Tasks: whole}, []string{a, b}, nil, true},
		{"a running instance not yet a member", &balancer.Placement{Members: members(a, ext), Tasks: whole}, []string{a, b}, nil, false},
		{"a stopped instance still a member", &balancer.Placement{Members: members(a, b, ext), Tasks: whole}, []string{a}, []string{b}, false},
		{"a stopped instance gone", &balancer.Placement{Members: members(a, ext), Tasks: whole}, []string{a}, []string{b}, true},
		{"a running instance without a process id yet", &balancer.Placement{Members: members(a, b), Tasks: whole}, []string{a, ""}, nil, false},
		{"a task without an active", &balancer.Placement{Members: members(a, b), Tasks: []balancer.Replicas{{Active: 0}, {Active: balancer.NoMember}}}, []string{a, b}, nil, false},
		{"no placement", nil, []string{a}, nil, false},
	} {
		if got := settledFor(tt.p, tt.running, tt.stopped); got != tt.want {
			t.Errorf("%s: settled = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestDevPrintsNewPlacementsWithAMemberRunElsewhere: a group member that
// is not one of dev's instances (a `rackstream run` joining the group)
// does not stop the console from printing new placements.
func TestDevPrintsNewPlacementsWithAMemberRunElsewhere(t *testing.T) {
	d, out := startTestDev(t, "dev-foreign")
	kafkatest.Eventually(t, 2*time.Minute, "the first placement table", func() bool {
		return strings.Contains(out.String(), "all 2 instances ready")
	})
	// An instance dev does not know of: not in d.insts.
	ext := &devInstance{d: d, name: "elsewhere", zone: "zone-x", cluster: "k8s-x", dir: t.TempDir(), addr: "127.0.0.1:0"}
	if err := ext.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ext.stop() })
	kafkatest.Eventually(t, 2*time.Minute, "a placement table with the member run elsewhere", func() bool {
		_, after, _ := strings.Cut(out.String(), "rackstream dev: new placement")
		return strings.Contains(after, "zone-x")
	})
	tables := strings.Count(out.String(), "rackstream dev: new placement")
	if err := d.act("stop", "i2"); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 2*time.Minute, "a new placement table after i2 stops", func() bool {
		return strings.Count(out.String(), "rackstream dev: new placement") > tables
	})
}
