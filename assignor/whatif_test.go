package assignor

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseSelector(t *testing.T) {
	tests := []struct {
		in      string
		want    Selector
		wantErr string
	}{
		{in: "zone=b", want: Selector{Tag: "zone", Value: "b"}},
		{in: "n3", want: Selector{Client: "n3"}},
		{in: "zone=", want: Selector{Tag: "zone", Value: ""}},
		{in: "k=a=b", want: Selector{Tag: "k", Value: "a=b"}},
		{in: "=b", wantErr: "non-empty KEY"},
		{in: "", wantErr: "empty selector"},
	}
	for _, tt := range tests {
		got, err := ParseSelector(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseSelector(%q) = %+v, %v; want an error with %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSelector(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if got.String() != tt.in {
			t.Errorf("ParseSelector(%q).String() = %q: does not round-trip", tt.in, got.String())
		}
	}
}

// threeZones is a fixed placement of three tasks over one client per zone,
// one standby each: task i active on zone i+1, standby on the next zone.
func threeZones() (Input, *Plan) {
	in := input(3, 1, []string{"zone"},
		client("a", "zone=z1"), client("b", "zone=z2"), client("c", "zone=z3"))
	plan := &Plan{Tasks: []TaskPlacement{
		{Task: 0, Active: "a", Standby: []string{"b"}},
		{Task: 1, Active: "b", Standby: []string{"c"}},
		{Task: 2, Active: "c", Standby: []string{"a"}},
	}}
	return in, plan
}

func TestWhatIfTable(t *testing.T) {
	in, plan := threeZones()
	noStandby := input(2, 0, nil, client("a", "zone=z1"), client("b", "zone=z2"))
	noStandbyPlan := &Plan{Tasks: []TaskPlacement{{Task: 0, Active: "a"}, {Task: 1, Active: "b"}}}
	tests := []struct {
		name         string
		in           Input
		plan         *Plan
		lose         []Selector
		wantLost     []string
		wantBare     []int
		wantFailover []Failover
		wantNoAfter  bool
	}{
		{
			name: "losing a zone fails its task over to the standby, state kept",
			in:   in, plan: plan, lose: []Selector{{Tag: "zone", Value: "z1"}},
			wantLost: []string{"a"}, wantBare: []int{},
			wantFailover: []Failover{{Task: 0, From: "a", To: "b", Restore: false}},
		},
		{
			name: "losing a client by id is the same",
			in:   in, plan: plan, lose: []Selector{{Client: "b"}},
			wantLost: []string{"b"}, wantBare: []int{},
			wantFailover: []Failover{{Task: 1, From: "b", To: "c", Restore: false}},
		},
		{
			name: "losses add up: two zones leave the task held by both without a replica",
			in:   in, plan: plan, lose: []Selector{{Tag: "zone", Value: "z1"}, {Client: "b"}},
			wantLost: []string{"a", "b"}, wantBare: []int{0},
			wantFailover: []Failover{{Task: 0, From: "a", To: "c", Restore: true}, {Task: 1, From: "b", To: "c", Restore: false}},
		},
		{
			name: "without standbys a lost active's task restores from the changelog",
			in:   noStandby, plan: noStandbyPlan, lose: []Selector{{Tag: "zone", Value: "z2"}},
			wantLost: []string{"b"}, wantBare: []int{1},
			wantFailover: []Failover{{Task: 1, From: "b", To: "a", Restore: true}},
		},
		{
			name: "losing everyone leaves no plan after and nowhere to fail over",
			in:   noStandby, plan: noStandbyPlan, lose: []Selector{{Client: "a"}, {Client: "b"}},
			wantLost: []string{"a", "b"}, wantBare: []int{0, 1},
			wantFailover: []Failover{{Task: 0, From: "a", Restore: true}, {Task: 1, From: "b", Restore: true}},
			wantNoAfter:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := WhatIf(tt.in, tt.plan, tt.lose)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.ClientsLost, tt.wantLost) {
				t.Errorf("clients_lost = %v, want %v", res.ClientsLost, tt.wantLost)
			}
			if !slices.Equal(res.TasksWithoutReplica, tt.wantBare) || res.TasksWithoutReplica == nil {
				t.Errorf("tasks_without_replica = %#v, want %v", res.TasksWithoutReplica, tt.wantBare)
			}
			if !reflect.DeepEqual(res.Failover, tt.wantFailover) {
				t.Errorf("failover = %+v, want %+v", res.Failover, tt.wantFailover)
			}
			if (res.PlanAfter == nil) != tt.wantNoAfter {
				t.Fatalf("plan_after = %+v, want nil: %v", res.PlanAfter, tt.wantNoAfter)
			}
			if res.PlanAfter != nil {
				for _, tp := range res.PlanAfter.Tasks {
					for _, id := range append([]string{tp.Active}, tp.Standby...) {
						if slices.Contains(res.ClientsLost, id) {
							t.Errorf("plan after places task %d on lost client %s", tp.Task, id)
						}
					}
				}
			}
			if !reflect.DeepEqual(res.Lose, tt.lose) {
				t.Errorf("lose = %+v, want %+v", res.Lose, tt.lose)
			}
		})
	}
}

func TestWhatIfRejectsSelectorsThatMatchNothingAndForeignPlans(t *testing.T) {
	in, plan := threeZones()
	tests := []struct {
		name string
		plan *Plan
		lose []Selector
		want string
	}{
		{"no selector", plan, nil, "no selector"},
		{"unknown tag value", plan, []Selector{{Tag: "zone", Value: "z9"}}, "lose zone=z9: no client has this tag value"},
		{"unknown id, beside a good selector", plan, []Selector{{Tag: "zone", Value: "z1"}, {Client: "ghost"}}, "lose ghost: no client has this id"},
		{"plan naming a client the input lacks", &Plan{Tasks: []TaskPlacement{{Task: 0, Active: "x"}}}, []Selector{{Client: "a"}}, `client "x"`},
		{"plan with a task out of range", &Plan{Tasks: []TaskPlacement{{Task: 7, Active: "a"}}}, []Selector{{Client: "a"}}, "task 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := WhatIf(in, tt.plan, tt.lose)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("WhatIf = %+v, %v; want an error with %q", res, err, tt.want)
			}
		})
	}
}

// TestWhatIfAgreesWithExposure: losing one tag value leaves exactly the
// tasks the plan's own quality lists as exposed to it.
func TestWhatIfAgreesWithExposure(t *testing.T) {
	in := loadScenario(t, "testdata/six-nodes.json")
	in.NumStandbyReplicas = 1 // thinner, so that some values expose tasks
	plan := mustAssign(t, in)
	for _, e := range plan.Quality.Exposure {
		res, err := WhatIf(in, plan, []Selector{{Tag: e.Tag, Value: e.Value}})
		if err != nil {
			t.Fatal(err)
		}
		want := e.TasksWithoutReplica
		if want == nil {
			want = []int{}
		}
		if !slices.Equal(res.TasksWithoutReplica, want) {
			t.Errorf("losing %s=%s: tasks without replica %v, exposure says %v", e.Tag, e.Value, res.TasksWithoutReplica, want)
		}
	}
}

func TestWhatIfResultJSONHasEveryFieldAndNoNulls(t *testing.T) {
	in, plan := threeZones()
	res, err := WhatIf(in, plan, []Selector{{Tag: "zone", Value: "z3"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"lose":[{"tag":"zone","value":"z3"}]`, `"clients_lost":["c"]`, `"tasks_without_replica":[]`,
		`"failover":[{"task":2,"from":"c","to":"a","restore":false}]`, `"plan_after":{`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
	var back WhatIfResult
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Failover, res.Failover) {
		t.Fatalf("JSON does not round-trip: %v", err)
	}
}

func TestWhatIfFailsOverToACaughtUpWarmupWithoutRestore(t *testing.T) {
	in := input(1, 0, nil, client("a"), withLags(client("w"), map[int]int64{0: 0}), client("z"))
	plan := &Plan{Tasks: []TaskPlacement{{Task: 0, Active: "a", Warmup: []string{"w"}}}}
	res, err := WhatIf(in, plan, []Selector{{Client: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Failover{{Task: 0, From: "a", To: "w", Restore: false}}; !reflect.DeepEqual(res.Failover, want) {
		t.Fatalf("failover = %+v, want %+v", res.Failover, want)
	}
	if !slices.Equal(res.TasksWithoutReplica, []int{0}) {
		t.Fatalf("a warmup is no replica: tasks without replica = %v, want [0]", res.TasksWithoutReplica)
	}
}

func TestDecodeDocumentReturnsAMetadataDocumentsPlacement(t *testing.T) {
	doc := `{"generation": 3, "self": "b",
	  "clients": [{"id": "b", "tags": {"zone": "z2"}, "capacity": 2}, {"id": "a", "tags": {"zone": "z1"}}],
	  "tasks": [{"task": 1, "active": "", "standby": ["a"], "warmup": []},
	            {"task": 0, "active": "b", "standby": ["a"], "warmup": []}],
	  "probing_rebalance_needed": true,
	  "quality": {"dimensions": [{"tag": "zone", "values": 2, "tasks_repeating": 0}], "standby_shortfall": 1,
	              "active_load": {"min": 0, "max": 0.5}, "replica_load": {"min": 0.5, "max": 2}, "exposure": []}}`
	in, plan, err := DecodeDocument([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if plan == nil || len(plan.Tasks) != 2 || plan.Tasks[0].Task != 0 || plan.Tasks[0].Active != "b" || plan.Tasks[1].Active != "" {
		t.Fatalf("tasks = %+v; want the document's, ascending, task 1 in a hand-off", plan)
	}
	if len(plan.Clients) != 2 || plan.Clients[0].ID != "a" || !slices.Equal(plan.Clients[0].Standby, []int{0, 1}) ||
		!slices.Equal(plan.Clients[1].Active, []int{0}) || plan.Clients[1].Tags["zone"] != "z2" {
		t.Fatalf("clients = %+v", plan.Clients)
	}
	if !plan.ProbingRebalanceNeeded || plan.Quality.StandbyShortfall != 1 || plan.Quality.ReplicaLoad.Max != 2 {
		t.Fatalf("probing %v, quality %+v: not the document's", plan.ProbingRebalanceNeeded, plan.Quality)
	}
	if in.Tasks != 2 || in.NumStandbyReplicas != 1 || len(in.Clients) != 2 {
		t.Fatalf("input = %+v", in)
	}
	// The what-if of a live placement: task 1 has no active to lose.
	res, err := WhatIf(in, plan, []Selector{{Tag: "zone", Value: "z1"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.TasksWithoutReplica, []int{1}) || len(res.Failover) != 0 {
		t.Fatalf("losing z1: without replica %v, failover %+v; want [1] and none", res.TasksWithoutReplica, res.Failover)
	}

	if _, plan, err := DecodeDocument([]byte(`{"tasks": 1, "clients": [{"id": "a", "tags": {}}]}`)); err != nil || plan != nil {
		t.Fatalf("a scenario: plan %+v, %v; want nil", plan, err)
	}
}

// TestWhatIfOfALivePlacementRecomputesCrossZone: a metadata document
// whose cross_zone carries the leader's rack awareness decodes to an input
// with it, and the what-if's plan after the loss reports the survivors'
// cross-zone traffic.
func TestWhatIfOfALivePlacementRecomputesCrossZone(t *testing.T) {
	in := withRacks(input(3, 0, nil, client("a", "zone=a"), client("b", "zone=b"), client("c", "zone=c")),
		StrategyMinTraffic,
		taskParts(0, part(RoleInput, "a", "a")), taskParts(1, part(RoleInput, "b", "b")), taskParts(2, part(RoleInput, "c", "c")))
	plan, err := Assign(in)
	if err != nil {
		t.Fatal(err)
	}
	if plan.CrossZone == nil || plan.CrossZone.Total != 0 || plan.CrossZone.RackAwareness != nil {
		t.Fatalf("plan's cross-zone %+v; want 0 and no rack awareness of Assign's own", plan.CrossZone)
	}
	cz := *plan.CrossZone
	cz.RackAwareness = in.RackAwareness // as the leader publishes it
	doc, err := json.Marshal(Metadata{Generation: 1, Self: "a", Clients: metadataClients(plan), Tasks: plan.Tasks, CrossZone: &cz})
	if err != nil {
		t.Fatal(err)
	}
	din, live, err := DecodeDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(din.RackAwareness, in.RackAwareness) {
		t.Fatalf("decoded rack awareness %+v; want the leader's %+v", din.RackAwareness, in.RackAwareness)
	}
	res, err := WhatIf(din, live, []Selector{{Tag: "zone", Value: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	// Task 2's input has its one replica in zone c: whoever takes it
	// fetches across zones.
	if after := res.PlanAfter.CrossZone; after == nil || after.Total != 1 || after.Tasks[2].ActiveLocal {
		t.Fatalf("cross-zone after losing zone c: %+v; want task 2's one fetch", after)
	}
}

// metadataClients lists plan's clients as a metadata document does.
func metadataClients(plan *Plan) []MetadataClient {
	out := make([]MetadataClient, len(plan.Clients))
	for i, c := range plan.Clients {
		out[i] = MetadataClient{ID: c.ID, Tags: c.Tags, Capacity: 1, Active: c.Active, Standby: c.Standby, Warmup: c.Warmup}
	}
	return out
}
