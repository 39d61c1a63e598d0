package assignor

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestPlanJSONShape pins the output document, field by field: tools outside
// the repository, the balancer and /v1/metadata rely on these names.
func TestPlanJSONShape(t *testing.T) {
	in := input(2, 1, []string{"zone"},
		withActive(client("n1", "zone=eu-central-1a"), 0), withActive(client("n2", "zone=eu-central-1b"), 1))
	p := mustAssign(t, in)
	got, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tasks":[{"task":0,"active":"n1","standby":["n2"],"warmup":[]},{"task":1,"active":"n2","standby":["n1"],"warmup":[]}],` +
		`"clients":[{"id":"n1","tags":{"zone":"eu-central-1a"},"active":[0],"standby":[1],"warmup":[]},` +
		`{"id":"n2","tags":{"zone":"eu-central-1b"},"active":[1],"standby":[0],"warmup":[]}],` +
		`"probing_rebalance_needed":false,` +
		`"quality":{"dimensions":[{"tag":"zone","values":2,"tasks_repeating":0}],"standby_shortfall":0,` +
		`"active_load":{"min":1,"max":1},"replica_load":{"min":2,"max":2},` +
		`"exposure":[{"tag":"zone","value":"eu-central-1a","tasks_without_replica":[]},{"tag":"zone","value":"eu-central-1b","tasks_without_replica":[]}]}}`
	if string(got) != want {
		t.Fatalf("plan JSON:\n got %s\nwant %s", got, want)
	}
	// And it reads back into a Plan that Measure accepts.
	var back Plan
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if q, err := Measure(in, &back); err != nil || q.Dimensions[0].Values != 2 {
		t.Fatalf("Measure(read back) = %+v, %v", q, err)
	}
}

func TestMeasureRejectsBrokenPlans(t *testing.T) {
	in := input(2, 1, nil, client("a"), client("b"))
	tests := []struct {
		name  string
		plan  Plan
		field string
	}{
		{"unknown active", Plan{Tasks: []TaskPlacement{{Task: 0, Active: "x"}, {Task: 1, Active: "a"}}}, "tasks[0].active"},
		{"unknown standby", Plan{Tasks: []TaskPlacement{{Task: 0, Active: "a", Standby: []string{"zz"}}, {Task: 1, Active: "a"}}}, "tasks[0].standby[0]"},
		{"two replicas on one client", Plan{Tasks: []TaskPlacement{{Task: 0, Active: "a", Standby: []string{"a"}}, {Task: 1, Active: "a"}}}, "tasks[0].standby[0]"},
		{"task placed twice", Plan{Tasks: []TaskPlacement{{Task: 0, Active: "a"}, {Task: 0, Active: "b"}}}, "tasks[1].task"},
		{"task out of range", Plan{Tasks: []TaskPlacement{{Task: 0, Active: "a"}, {Task: 2, Active: "b"}}}, "tasks[1].task"},
		{"task missing", Plan{Tasks: []TaskPlacement{{Task: 0, Active: "a"}}}, "tasks"},
		{"unknown warmup", Plan{Tasks: []TaskPlacement{{Task: 0, Active: "a", Warmup: []string{"q"}}, {Task: 1, Active: "a"}}}, "tasks[0].warmup[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Measure(in, &tt.plan)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("err = %v, want a FieldError on %s", err, tt.field)
			}
		})
	}
}
