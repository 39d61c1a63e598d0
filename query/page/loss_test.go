package page_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/rackstream/rackstream/assignor"
)

// replicaFigure is one row of loss.js's replicas; After is nil when
// unknown.
type replicaFigure struct {
	ID    string `json:"id"`
	Now   int    `json:"now"`
	After *int   `json:"after"`
	Lost  bool   `json:"lost"`
}

type lossFigures struct {
	Replicas  []replicaFigure `json:"replicas"`
	CrossZone *struct {
		Now   float64 `json:"now"`
		After float64 `json:"after"`
	} `json:"crossZone"`
}

// runLossFigures runs the page's loss.js under Node on the metadata
// document's clients, a what-if answer and the document's cross-zone
// traffic.
func runLossFigures(t *testing.T, doc string, result *assignor.WhatIfResult) lossFigures {
	t.Helper()
	var md struct {
		Clients   json.RawMessage `json:"clients"`
		CrossZone json.RawMessage `json:"cross_zone"`
	}
	if err := json.Unmarshal([]byte(doc), &md); err != nil {
		t.Fatal(err)
	}
	if md.CrossZone == nil {
		md.CrossZone = json.RawMessage("null")
	}
	res, err := json.Marshal(result)
	if err != nil {
		t.Fatal(err)
	}
	stdin, _ := json.Marshal([]json.RawMessage{md.Clients, res, md.CrossZone})
	out := runNode(t, `
const { lossFigures } = require(process.argv[1]);
const [clients, result, now] = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(lossFigures(clients, result, now)));
`, "./static/loss.js", stdin)
	var got lossFigures
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node answered %s: %v", out, err)
	}
	return got
}

func intp(n int) *int { return &n }

// TestWhatIfShowsEachInstancesReplicasAfterTheLoss: losing three of zone
// a's four instances (the document has n1, n4, n5, n6 in zone a) leaves
// n4's replicas to the survivors; the page's figures are the what-if's
// plan after the loss, counted per instance, actives and standbys.
func TestWhatIfShowsEachInstancesReplicasAfterTheLoss(t *testing.T) {
	in, plan, err := assignor.DecodeDocument([]byte(metadataDoc))
	if err != nil {
		t.Fatal(err)
	}
	res, err := assignor.WhatIf(in, plan, []assignor.Selector{{Client: "n1"}, {Client: "n5"}, {Client: "n6"}})
	if err != nil {
		t.Fatal(err)
	}
	after := make(map[string]int)
	for _, c := range res.PlanAfter.Clients {
		after[c.ID] = len(c.Active) + len(c.Standby)
	}
	got := runLossFigures(t, metadataDoc, res)
	want := []replicaFigure{
		{ID: "n1", Now: 2, After: intp(0), Lost: true},
		{ID: "n2", Now: 2, After: intp(after["n2"])},
		{ID: "n3", Now: 2, After: intp(after["n3"])},
		{ID: "n4", Now: 3, After: intp(after["n4"])},
		{ID: "n5", Now: 2, After: intp(0), Lost: true},
		{ID: "n6", Now: 1, After: intp(0), Lost: true},
	}
	if !reflect.DeepEqual(got.Replicas, want) {
		g, _ := json.Marshal(got.Replicas)
		w, _ := json.Marshal(want)
		t.Errorf("replicas %s, want %s", g, w)
	}
	// Three survivors hold every task's active and both standbys.
	if sum := after["n2"] + after["n3"] + after["n4"]; sum != 4*3 {
		t.Errorf("the survivors hold %d replicas, want 12 (4 tasks, an active and 2 standbys each)", sum)
	}
	if got.CrossZone != nil {
		t.Errorf("cross-zone %+v without any in the document; want none", got.CrossZone)
	}
}

// TestWhatIfShowsCrossZoneTrafficAfterTheLoss: with the leader's rack
// awareness in the document's cross_zone, the page shows the traffic now
// and the what-if's after the loss: losing zone c sends task 2's input,
// whose one replica is there, across zones.
func TestWhatIfShowsCrossZoneTrafficAfterTheLoss(t *testing.T) {
	in := assignor.Input{Settings: assignor.DefaultSettings(), Tasks: 3}
	in.NumStandbyReplicas = 0
	ra := &assignor.RackAwareness{RackAwareStrategy: assignor.StrategyMinTraffic, TrafficCost: 10, NonOverlapCost: 1, ClientRackTag: "zone"}
	for i, z := range []string{"a", "b", "c"} {
		in.Clients = append(in.Clients, assignor.Client{ID: "n-" + z, Tags: map[string]string{"zone": z}, Capacity: 1})
		ra.Tasks = append(ra.Tasks, assignor.TaskRacks{Task: i, Partitions: []assignor.PartitionRacks{
			{Topic: "in", Partition: int32(i), Role: assignor.RoleInput, Replicas: []string{z}, Leader: z}}})
	}
	in.RackAwareness = ra
	plan, err := assignor.Assign(in)
	if err != nil {
		t.Fatal(err)
	}
	cz := *plan.CrossZone
	cz.RackAwareness = ra
	md := assignor.Metadata{Generation: 1, Self: "n-a", Tasks: plan.Tasks, CrossZone: &cz}
	for _, c := range plan.Clients {
		md.Clients = append(md.Clients, assignor.MetadataClient{ID: c.ID, Tags: c.Tags, Capacity: 1, Active: c.Active, Standby: c.Standby, Warmup: c.Warmup})
	}
	doc, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	_, _, res, err := assignor.LossOfDocument(doc, []assignor.Selector{{Tag: "zone", Value: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	got := runLossFigures(t, string(doc), res)
	if got.CrossZone == nil || got.CrossZone.Now != 0 || got.CrossZone.After != 1 {
		t.Fatalf("cross-zone %+v; want 0 now and 1 after the loss", got.CrossZone)
	}
}
