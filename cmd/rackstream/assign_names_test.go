package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rackstream/rackstream/assignor"
)

// podsDocument is a /v1/metadata document of three pods of a StatefulSet,
// with process ids as the runtime makes them, three tasks, one standby each.
func podsDocument(t *testing.T) (doc string, ids []string) {
	t.Helper()
	zones := []string{"eu-central-1a", "eu-central-1b", "eu-central-1c"}
	m := assignor.Metadata{Generation: 3, Self: "", Partitioner: "murmur2", Partitions: 3,
		Settings: &assignor.MetadataSettings{Source: assignor.SettingsFromLeader, Settings: assignor.Settings{NumStandbyReplicas: 1,
			AcceptableRecoveryLag: 10000, MaxWarmupReplicas: 2, RackAwareAssignmentTags: []string{"zone"}}}}
	for i := range 3 {
		id := fmt.Sprintf("%08x-1c8e-4f7a-9a43-2d0c51e0a00%d", 0x704b5290+i, i)
		ids = append(ids, id)
		m.Clients = append(m.Clients, assignor.MetadataClient{ID: id, Capacity: 1,
			Endpoint: fmt.Sprintf("rackstream-%d.rackstream.prod.svc.cluster.local:8080", i),
			Tags:     map[string]string{"zone": zones[i]}, Active: []int{i}, Standby: []int{(i + 2) % 3}, Warmup: []int{}})
	}
	for i := range 3 {
		m.Tasks = append(m.Tasks, assignor.TaskPlacement{Task: i, Active: ids[i], Standby: []string{ids[(i+1)%3]}, Warmup: []string{}})
	}
	m.Status.Clients = []assignor.MetadataClientStatus{{ID: ids[0], Ready: true}, {ID: ids[1], Ready: true}, {ID: ids[2], Ready: true}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), ids
}

func TestAssignTableNamesInstancesByTheirEndpoint(t *testing.T) {
	doc, ids := podsDocument(t)
	for _, args := range [][]string{{"--format", "table"}, {"--format", "table", "--lose", "zone=eu-central-1b"}} {
		code, out, errs := runCLI(t, doc, args...)
		if code != 0 {
			t.Fatalf("assign %q: exit %d: %s", args, code, errs)
		}
		table, legend, ok := strings.Cut(out, "INSTANCE")
		if !ok {
			t.Fatalf("assign %q: no list of instances:\n%s", args, out)
		}
		for _, id := range ids {
			if strings.Contains(table, id) {
				t.Errorf("assign %q: the table shows the process id %s:\n%s", args, id, table)
			}
		}
		if !strings.Contains(table, "rackstream-1 (zone=eu-central-1b)") {
			t.Errorf("assign %q: the table does not name rackstream-1 with its zone:\n%s", args, table)
		}
		for i, id := range ids {
			if !strings.Contains(legend, fmt.Sprintf("rackstream-%d  %s", i, id)) {
				t.Errorf("assign %q: the list does not give rackstream-%d's process id %s:\n%s", args, i, id, legend)
			}
		}
		if len(args) > 2 && (!strings.Contains(table, "clients rackstream-1\n") || !strings.Contains(table, "Task 1 fails over: rackstream-1 -> rackstream-2")) {
			t.Errorf("assign %q: the what-if does not name the lost instance:\n%s", args, table)
		}
	}

	// The JSON stays in process ids.
	code, out, errs := runCLI(t, doc, "--lose", "zone=eu-central-1b")
	if code != 0 {
		t.Fatalf("assign --lose: exit %d: %s", code, errs)
	}
	var rep lossReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Loss.ClientsLost) != 1 || rep.Loss.ClientsLost[0] != ids[1] {
		t.Errorf("JSON clients_lost %q, want the process id %s", rep.Loss.ClientsLost, ids[1])
	}
}

func TestAssignTableOfAScenarioHasNoListOfInstances(t *testing.T) {
	code, out, errs := runCLI(t, "", "--format", "table", sixNodes)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(out, "PROCESS ID") {
		t.Errorf("a scenario's clients are named by their ids: no list needed:\n%s", out)
	}
}
