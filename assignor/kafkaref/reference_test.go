package kafkaref

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor"
)

// The example of Kafka's greedy pick losing (docs/design.md §3.3): active at (z1,c1),
// candidates (z2,c2), (z2,c3), (z3,c2), two standbys.
const greedyLoses = `{"name":"greedy","tasks":1,"num_standby_replicas":2,"rack_aware_assignment_tags":["zone","cluster"],"clients":[` +
	`{"id":"a","tags":{"zone":"z1","cluster":"c1"},"previous_active":[0],"lags":{"0":0}},` +
	`{"id":"b","tags":{"zone":"z2","cluster":"c2"}},{"id":"c","tags":{"zone":"z2","cluster":"c3"}},{"id":"d","tags":{"zone":"z3","cluster":"c2"}}]}`

// The reference program runs Kafka's own algorithm: it reproduces Kafka's
// known behaviours, and the differential's comparison catches a plan worse
// than Kafka's.
func TestReferenceBehavesAsKafkaStreams(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ref := startReference(t, ctx)
	defer ref.Close()

	t.Run("greedy pick ends with two zones where three were possible", func(t *testing.T) {
		kp, err := ref.Run([]byte(greedyLoses))
		if err != nil {
			t.Fatal(err)
		}
		var kplan assignor.Plan
		if err := json.Unmarshal(kp.Raw, &kplan); err != nil {
			t.Fatal(err)
		}
		// Least loaded first, ties by process id: b is new on both keys;
		// then no client is (c shares z2 with b, d shares c2), and the
		// tag-blind fallback takes the least loaded: c.
		if got := kplan.Tasks[0].Standby; !slices.Equal(got, []string{"b", "c"}) {
			t.Fatalf("Kafka's standbys %v, want [b c] (its greedy pick)", got)
		}
		var in assignor.Input
		if err := json.Unmarshal([]byte(greedyLoses), &in); err != nil {
			t.Fatal(err)
		}
		plan, err := assignor.Assign(in)
		if err != nil {
			t.Fatal(err)
		}
		s := Scenario{RackAwareAssignmentTags: in.RackAwareAssignmentTags}
		if c, problems := compareTask(s, in, plan.Tasks[0], kplan.Tasks[0]); c <= 0 || len(problems) > 0 {
			t.Errorf("ours %v vs Kafka's %v: compare %d, problems %v; want ours strictly better", plan.Tasks[0].Standby, kplan.Tasks[0].Standby, c, problems)
		}
		// Roles swapped, the comparison must object.
		if _, problems := compareTask(s, in, kplan.Tasks[0], plan.Tasks[0]); len(problems) == 0 {
			t.Errorf("Kafka's plan judged as ours passed against our better plan")
		}
	})

	t.Run("zero standbys with tags places none", func(t *testing.T) {
		zero := `{"name":"zero","tasks":2,"num_standby_replicas":0,"rack_aware_assignment_tags":["zone"],"clients":[` +
			`{"id":"a","tags":{"zone":"z1"},"previous_active":[0,1]},{"id":"b","tags":{"zone":"z2"}}]}`
		kp, err := ref.Run([]byte(zero))
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range kp.Tasks {
			if task.Active != "a" || len(task.Standby) != 0 {
				t.Errorf("task %d: active %s, standbys %v; want a and none", task.Task, task.Active, task.Standby)
			}
		}
	})

	t.Run("a scenario without fixed actives is an error naming the task, and the next still runs", func(t *testing.T) {
		_, err := ref.Run([]byte(`{"name":"bad","tasks":2,"clients":[{"id":"a","tags":{},"previous_active":[1]}]}`))
		if err == nil || !strings.Contains(err.Error(), "task 0") {
			t.Fatalf("error %v, want one naming task 0", err)
		}
		if _, err := ref.Run([]byte(greedyLoses)); err != nil {
			t.Fatalf("after an error: %v", err)
		}
	})
}
