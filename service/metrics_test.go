package service

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/tags"
)

// threeZones is a placement over four instances in zones a, a, b, c of
// four tasks: task 0 spread over a, b, c; task 1 with both replicas in
// zone a although b and c had room; task 2 with one standby of two; task
// 3 with none.
func threeZones() *balancer.Placement {
	m := func(id, zone string) balancer.Member {
		return balancer.Member{ProcessID: id, Tags: tags.MustSet("zone", zone), Capacity: 1}
	}
	return &balancer.Placement{
		Generation: 7,
		Members:    []balancer.Member{m("p0", "a"), m("p1", "a"), m("p2", "b"), m("p3", "c")},
		Tasks: []balancer.Replicas{
			{Active: 0, Standbys: []int{2, 3}},
			{Active: 0, Standbys: []int{1}, Warmups: []int{2}},
			{Active: 2, Standbys: []int{3}},
			{Active: 3},
		},
		Quality: assignor.Quality{
			Dimensions:       []assignor.DimensionQuality{{Tag: "zone", Values: 3, TasksRepeating: 1}},
			StandbyShortfall: 0 + 1 + 1 + 2,
		},
	}
}

func TestPlacementMetricsDescribeTheGroupsPlacement(t *testing.T) {
	for _, tc := range []struct {
		name      string
		placement *balancer.Placement
		standbys  int
		want      string
	}{
		{"nothing before the first placement", nil, 2, ""},
		{"repeats, shortfall and tasks short of or without standbys", threeZones(), 2, `
# HELP rackstream_placement_generation Group generation of the placement this instance knows.
# TYPE rackstream_placement_generation gauge
rackstream_placement_generation 7
# HELP rackstream_placement_members Instances in the placement.
# TYPE rackstream_placement_members gauge
rackstream_placement_members 4
# HELP rackstream_placement_standby_shortfall Standbys missing over all tasks: the sum of num.standby.replicas minus the standbys placed.
# TYPE rackstream_placement_standby_shortfall gauge
rackstream_placement_standby_shortfall 4
# HELP rackstream_placement_tag_values Per key of rack.aware.assignment.tags, distinct values among the instances.
# TYPE rackstream_placement_tag_values gauge
rackstream_placement_tag_values{tag="zone"} 3
# HELP rackstream_placement_tasks Tasks in the placement (the inputs' partition count).
# TYPE rackstream_placement_tasks gauge
rackstream_placement_tasks 4
# HELP rackstream_placement_tasks_repeating Per key of rack.aware.assignment.tags, tasks whose replicas (active and standbys) repeat a value although a distinct one existed among the instances.
# TYPE rackstream_placement_tasks_repeating gauge
rackstream_placement_tasks_repeating{tag="zone"} 1
# HELP rackstream_placement_tasks_short_of_standbys Tasks with fewer standbys than num.standby.replicas.
# TYPE rackstream_placement_tasks_short_of_standbys gauge
rackstream_placement_tasks_short_of_standbys 3
# HELP rackstream_placement_tasks_without_standby Tasks with no standby although num.standby.replicas > 0 (0 when no standbys are configured).
# TYPE rackstream_placement_tasks_without_standby gauge
rackstream_placement_tasks_without_standby 1
`},
		{"one standby configured: only the task without one is short", threeZones(), 1, `
# HELP rackstream_placement_tasks_short_of_standbys Tasks with fewer standbys than num.standby.replicas.
# TYPE rackstream_placement_tasks_short_of_standbys gauge
rackstream_placement_tasks_short_of_standbys 1
# HELP rackstream_placement_tasks_without_standby Tasks with no standby although num.standby.replicas > 0 (0 when no standbys are configured).
# TYPE rackstream_placement_tasks_without_standby gauge
rackstream_placement_tasks_without_standby 1
`},
		{"no standbys configured: no task is short or without one", threeZones(), 0, `
# HELP rackstream_placement_tasks_short_of_standbys Tasks with fewer standbys than num.standby.replicas.
# TYPE rackstream_placement_tasks_short_of_standbys gauge
rackstream_placement_tasks_short_of_standbys 0
# HELP rackstream_placement_tasks_without_standby Tasks with no standby although num.standby.replicas > 0 (0 when no standbys are configured).
# TYPE rackstream_placement_tasks_without_standby gauge
rackstream_placement_tasks_without_standby 0
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newPlacementCollector(func() *balancer.Placement { return tc.placement }, tc.standbys)
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(c)
			if tc.want == "" {
				if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
					t.Fatalf("%d series (%v), want none", n, err)
				}
				return
			}
			var names []string
			for _, l := range strings.Split(tc.want, "\n") {
				if f, ok := strings.CutPrefix(l, "# TYPE "); ok {
					names = append(names, strings.Fields(f)[0])
				}
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want), names...); err != nil {
				t.Error(err)
			}
		})
	}
}

// The series follow the runtime's current placement at every scrape, with
// no stale dimension left behind.
func TestPlacementMetricsFollowTheCurrentPlacement(t *testing.T) {
	cur := threeZones()
	c := newPlacementCollector(func() *balancer.Placement { return cur }, 2)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	const head = `
# HELP rackstream_placement_tasks_repeating Per key of rack.aware.assignment.tags, tasks whose replicas (active and standbys) repeat a value although a distinct one existed among the instances.
# TYPE rackstream_placement_tasks_repeating gauge
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(head+`rackstream_placement_tasks_repeating{tag="zone"} 1
`), "rackstream_placement_tasks_repeating"); err != nil {
		t.Fatal(err)
	}
	next := *cur
	next.Generation = 8
	next.Quality.Dimensions = []assignor.DimensionQuality{{Tag: "cluster", Values: 2}}
	cur = &next
	if err := testutil.GatherAndCompare(reg, strings.NewReader(head+`rackstream_placement_tasks_repeating{tag="cluster"} 0
`), "rackstream_placement_tasks_repeating"); err != nil {
		t.Error(err)
	}
}
