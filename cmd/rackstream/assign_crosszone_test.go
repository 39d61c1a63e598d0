package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rackstream/rackstream/assignor"
)

// racksScenario: three clients in zones a, b, c; task t's input and
// changelog partitions live in zone a, b, c for t = 0, 1, 2; task 1 has
// byte rates, the others weigh as its mean.
const racksScenario = `{"tasks": 3, "clients": [
  {"id": "n1", "tags": {"zone": "a"}}, {"id": "n2", "tags": {"zone": "b"}}, {"id": "n3", "tags": {"zone": "c"}}],
 "rack_awareness": {"strategy": "min_traffic", "client_rack_tag": "zone", "tasks": [
  {"task": 0, "partitions": [{"topic": "in", "partition": 0, "role": "input", "replicas": ["a"], "leader": "a"},
                             {"topic": "cl", "partition": 0, "role": "changelog", "replicas": ["a"], "leader": "a"}]},
  {"task": 1, "rates": {"input": 1000, "changelog": 100},
              "partitions": [{"topic": "in", "partition": 1, "role": "input", "replicas": ["b"], "leader": "b"},
                             {"topic": "cl", "partition": 1, "role": "changelog", "replicas": ["b"], "leader": "b"}]},
  {"task": 2, "partitions": [{"topic": "in", "partition": 2, "role": "input", "replicas": ["c"], "leader": "c"},
                             {"topic": "cl", "partition": 2, "role": "changelog", "replicas": ["c"], "leader": "c"}]}]}}`

// TestAssignShowsCrossZoneBytes: a scenario with partition racks prints each
// task's expected cross-zone bytes and the total, in the table and the
// JSON; min_traffic places every active with its partitions.
func TestAssignShowsCrossZoneBytes(t *testing.T) {
	code, out, errs := runCLI(t, racksScenario, "--format", "table", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"CROSS-ZONE", "cross-zone (min_traffic): 0 per second, fetch 0, produce 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runCLI(t, racksScenario, "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var plan assignor.Plan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.CrossZone == nil || len(plan.CrossZone.Tasks) != 3 || plan.CrossZone.Total != 0 {
		t.Fatalf("cross_zone %+v; want 3 tasks and 0 bytes", plan.CrossZone)
	}
	for _, tp := range plan.Tasks {
		if want := "n" + string(rune('1'+tp.Task)); tp.Active != want {
			t.Errorf("task %d active on %s, want %s", tp.Task, tp.Active, want)
		}
	}

	// Under none, the same clients in another order cross zones, and the
	// table says how much for each task.
	none := strings.Replace(racksScenario, `"strategy": "min_traffic"`, `"strategy": "none"`, 1)
	none = strings.NewReplacer(`"zone": "a"`, `"zone": "c"`, `"zone": "c"}}]`, `"zone": "a"}}]`).Replace(none)
	code, out, errs = runCLI(t, none, "--format", "table", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "(active remote)") || strings.Contains(out, "cross-zone (none): 0 per second") {
		t.Errorf("table under none shows no remote active:\n%s", out)
	}
}
