package assignor_test

import (
	"fmt"

	"github.com/rackstream/rackstream/assignor"
)

// Kafka Streams' greedy pick would take b first (new zone and cluster) and
// end with two zones or two clusters; the optimum is c and d.
func ExampleAssign() {
	tags := func(zone, cluster string) map[string]string {
		return map[string]string{"zone": zone, "cluster": cluster}
	}
	settings := assignor.DefaultSettings()
	settings.NumStandbyReplicas, settings.RackAwareAssignmentTags = 2, []string{"zone", "cluster"}
	in := assignor.Input{
		Settings: settings,
		Tasks:    1,
		Clients: []assignor.Client{
			{ID: "a", Tags: tags("z1", "c1"), PreviousActive: []int{0}},
			{ID: "b", Tags: tags("z2", "c2")},
			{ID: "c", Tags: tags("z2", "c3")},
			{ID: "d", Tags: tags("z3", "c2")},
		},
	}
	plan, err := assignor.Assign(in)
	if err != nil {
		fmt.Println(err)
		return
	}
	t := plan.Tasks[0]
	spread, _ := assignor.Spread(in, t)
	fmt.Println("active", t.Active, "standbys", t.Standby, "spread", spread)
	for _, d := range plan.Quality.Dimensions {
		fmt.Printf("%s: %d values, %d tasks repeating\n", d.Tag, d.Values, d.TasksRepeating)
	}
	// Output:
	// active a standbys [c d] spread [3 3]
	// zone: 3 values, 0 tasks repeating
	// cluster: 3 values, 0 tasks repeating
}

// Measure scores any placement, here one with both replicas in one zone.
func ExampleMeasure() {
	settings := assignor.DefaultSettings()
	settings.NumStandbyReplicas, settings.RackAwareAssignmentTags = 1, []string{"zone"}
	in := assignor.Input{
		Settings: settings, Tasks: 1,
		Clients: []assignor.Client{
			{ID: "a1", Tags: map[string]string{"zone": "a"}},
			{ID: "a2", Tags: map[string]string{"zone": "a"}},
			{ID: "b1", Tags: map[string]string{"zone": "b"}},
		},
	}
	q, err := assignor.Measure(in, &assignor.Plan{Tasks: []assignor.TaskPlacement{{Task: 0, Active: "a1", Standby: []string{"a2"}}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("zone repeating:", q.Dimensions[0].TasksRepeating)
	for _, e := range q.Exposure {
		fmt.Printf("losing %s=%s leaves %v without a replica\n", e.Tag, e.Value, e.TasksWithoutReplica)
	}
	// Output:
	// zone repeating: 1
	// losing zone=a leaves [0] without a replica
	// losing zone=b leaves [] without a replica
}
