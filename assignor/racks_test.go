package assignor

import (
	"errors"
	"strings"
	"testing"
)

// TestRackAwarePlacement pins, scenario by scenario, where min_traffic
// puts replicas and what the plan reports. Costs are the defaults (traffic
// 10, non-overlap 1) unless a case says otherwise; without rates every
// partition flow weighs 1.
func TestRackAwarePlacement(t *testing.T) {
	zone := []string{"zone"}
	in := func(s string) PartitionRacks { return part(RoleInput, s, s) }
	tests := []struct {
		name string
		in   Input
		// wantActive is each task's active; nil to skip.
		wantActive []string
		// wantTotal is the plan's cross-zone total.
		wantTotal float64
		// wantNoneTotal, when set, is today's total on the same input: the
		// case is only meaningful where min_traffic saves something.
		wantNoneTotal float64
		// wantUnknown are substrings of the plan's unknown reasons.
		wantUnknown []string
	}{
		{
			name: "fresh group, input on one replica per zone: each active goes to its input's zone",
			in: withRacks(input(3, 0, nil, client("a", "zone=a"), client("b", "zone=b"), client("c", "zone=c")),
				StrategyMinTraffic, taskParts(0, in("c")), taskParts(1, in("a")), taskParts(2, in("b"))),
			wantActive:    []string{"c", "a", "b"},
			wantNoneTotal: 3,
		},
		{
			name: "replication factor 2 of 3 zones: every active sits with a replica, two per client",
			in: withRacks(input(6, 0, nil, client("a", "zone=a"), client("b", "zone=b"), client("c", "zone=c")),
				StrategyMinTraffic,
				taskParts(0, part(RoleInput, "b", "b", "c")), taskParts(1, part(RoleInput, "a", "a", "c")),
				taskParts(2, part(RoleInput, "a", "a", "b")), taskParts(3, part(RoleInput, "c", "b", "c")),
				taskParts(4, part(RoleInput, "c", "a", "c")), taskParts(5, part(RoleInput, "b", "a", "b"))),
			wantNoneTotal: 6,
		},
		{
			name: "uneven racks: the one client of zone b takes the two tasks read there, and no more",
			in: withRacks(input(6, 0, nil, client("a1", "zone=a"), client("a2", "zone=a"), client("b1", "zone=b")),
				StrategyMinTraffic,
				taskParts(0, in("b")), taskParts(1, in("b")), taskParts(2, in("a")),
				taskParts(3, in("a")), taskParts(4, in("a")), taskParts(5, in("a"))),
			wantActive:    []string{"b1", "b1", "a1", "a1", "a2", "a2"},
			wantNoneTotal: 4,
		},
		{
			name: "a rack without replicas of any partition: its one client pays one fetch, no more",
			in: withRacks(input(3, 0, nil, client("a", "zone=a"), client("b", "zone=b"), client("c", "zone=c")),
				StrategyMinTraffic, taskParts(0, in("a")), taskParts(1, in("b")), taskParts(2, in("a"))),
			wantTotal: 1,
		},
		{
			name: "produce traffic: inputs everywhere, each active goes where its changelog and output leaders are",
			in: withRacks(input(2, 0, nil, client("a", "zone=a"), client("b", "zone=b")),
				StrategyMinTraffic,
				taskParts(0, part(RoleInput, "a", "a", "b"), part(RoleChangelog, "b", "a", "b"), part(RoleOutput, "b", "a", "b")),
				taskParts(1, part(RoleInput, "b", "a", "b"), part(RoleChangelog, "a", "a", "b"), part(RoleOutput, "a", "a", "b"))),
			wantActive:    []string{"b", "a"},
			wantNoneTotal: 4,
		},
		{
			name: "standbys fetch their changelog from a replica in their zone, spread kept",
			in: withRacks(input(6, 1, zone,
				client("a1", "zone=a"), client("a2", "zone=a"), client("b1", "zone=b"),
				client("b2", "zone=b"), client("c1", "zone=c"), client("c2", "zone=c")),
				StrategyMinTraffic,
				taskParts(0, in("a"), part(RoleChangelog, "a", "a", "c")), taskParts(1, in("b"), part(RoleChangelog, "b", "b", "a")),
				taskParts(2, in("c"), part(RoleChangelog, "c", "c", "b")), taskParts(3, in("a"), part(RoleChangelog, "a", "a", "b")),
				taskParts(4, in("b"), part(RoleChangelog, "b", "b", "c")), taskParts(5, in("c"), part(RoleChangelog, "c", "c", "a"))),
		},
		{
			name: "a client without the rack tag keeps its task and takes none; the reason names it",
			in: withRacks(input(3, 0, nil, client("a", "zone=a"), client("b", "zone=b"), client("x")),
				StrategyMinTraffic, taskParts(0, in("b")), taskParts(1, in("a")), taskParts(2, in("a"))),
			wantActive:  []string{"b", "a", "x"},
			wantTotal:   1,
			wantUnknown: []string{`1 clients without a rack, by tag "zone"`, ": x"},
		},
		{
			name: "a broker without a rack pins the tasks of its partitions; the others still trade; the reason names them",
			in: withRacks(input(3, 0, nil, client("a", "zone=a"), client("b", "zone=b"), client("c", "zone=c")),
				StrategyMinTraffic,
				taskParts(0, part(RoleInput, "c", "c", "")), taskParts(1, in("a")), taskParts(2, in("b"))),
			wantActive:  []string{"a", "c", "b"},
			wantTotal:   2,
			wantUnknown: []string{"1 tasks with a partition whose replica or leader has no broker.rack", "0 (input-0)"},
		},
		{
			name: "a task without partition racks stays where placed",
			in: withRacks(input(2, 0, nil, client("a", "zone=a"), client("b", "zone=b")),
				StrategyMinTraffic, taskParts(0, in("b"))),
			wantActive:  []string{"a", "b"},
			wantUnknown: []string{"1 tasks without partition racks", ": 1"},
			wantTotal:   1,
		},
		{
			name: "no client rack tag configured: nothing moves",
			in: func() Input {
				in := withRacks(input(2, 0, nil, client("a", "zone=a"), client("b", "zone=b")),
					StrategyMinTraffic, taskParts(0, in("b")), taskParts(1, in("a")))
				in.RackAwareness.ClientRackTag = ""
				return in
			}(),
			wantActive:  []string{"a", "b"},
			wantTotal:   2,
			wantUnknown: []string{"client_rack_tag (none configured)"},
		},
		{
			name: "stickiness vs traffic: caught-up clients swap tasks when 2 x traffic_cost beats 2 x non_overlap_cost",
			in: withRacks(input(2, 0, nil,
				withLags(withActive(client("a", "zone=a"), 0), map[int]int64{0: 0, 1: 0}),
				withLags(withActive(client("b", "zone=b"), 1), map[int]int64{0: 0, 1: 0})),
				StrategyMinTraffic, taskParts(0, in("b")), taskParts(1, in("a"))),
			wantActive:    []string{"b", "a"},
			wantNoneTotal: 2,
		},
		{
			name: "stickiness vs traffic: non_overlap_cost above traffic_cost keeps every task where it was",
			in: func() Input {
				in := withRacks(input(2, 0, nil,
					withLags(withActive(client("a", "zone=a"), 0), map[int]int64{0: 0, 1: 0}),
					withLags(withActive(client("b", "zone=b"), 1), map[int]int64{0: 0, 1: 0})),
					StrategyMinTraffic, taskParts(0, in("b")), taskParts(1, in("a")))
				in.RackAwareness.NonOverlapCost = 11
				return in
			}(),
			wantActive: []string{"a", "b"},
			wantTotal:  2,
		},
		{
			name: "never to a client that is not caught up: state held only by the previous active keeps it there",
			in: withRacks(input(2, 0, nil,
				withLags(withActive(client("a", "zone=a"), 0), map[int]int64{0: 0}),
				withLags(withActive(client("b", "zone=b"), 1), map[int]int64{1: 0})),
				StrategyMinTraffic, taskParts(0, in("b")), taskParts(1, in("a"))),
			wantActive: []string{"a", "b"},
			wantTotal:  2,
		},
		{
			name: "balance_subtopology plans as min_traffic",
			in: withRacks(input(3, 0, nil, client("a", "zone=a"), client("b", "zone=b"), client("c", "zone=c")),
				StrategyBalanceSubtopology, taskParts(0, in("c")), taskParts(1, in("a")), taskParts(2, in("b"))),
			wantActive:    []string{"c", "a", "b"},
			wantNoneTotal: 3,
		},
		{
			name: "rates weigh flows: the heavy task gets the one local slot",
			in: func() Input {
				in := withRacks(input(2, 0, nil, client("a", "zone=a"), client("b", "zone=b")),
					StrategyMinTraffic, taskParts(0, in("a")), taskParts(1, in("a")))
				in.RackAwareness.Tasks[0].Rates = &TaskRates{Input: 100}
				in.RackAwareness.Tasks[1].Rates = &TaskRates{Input: 5000}
				return in
			}(),
			wantActive:    []string{"b", "a"},
			wantTotal:     100,
			wantNoneTotal: 5000,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustAssign(t, tc.in)
			cz := p.CrossZone
			if cz == nil {
				t.Fatal("plan without cross_zone")
			}
			if tc.wantActive != nil {
				checkActives(t, p, tc.wantActive)
			}
			if cz.Total != tc.wantTotal {
				t.Fatalf("cross-zone total %v, want %v (%s)", cz.Total, tc.wantTotal, describe(p))
			}
			joined := strings.Join(cz.Unknown, "\n")
			for _, w := range tc.wantUnknown {
				if !strings.Contains(joined, w) {
					t.Fatalf("unknown %q lacks %q", joined, w)
				}
			}
			if len(tc.wantUnknown) == 0 && len(cz.Unknown) > 0 {
				t.Fatalf("unexpected unknown: %q", joined)
			}
			none := mustAssign(t, withStrategy(tc.in, StrategyNone))
			if tc.wantNoneTotal != 0 && none.CrossZone.Total != tc.wantNoneTotal {
				t.Fatalf("none's total %v, want %v (%s)", none.CrossZone.Total, tc.wantNoneTotal, describe(none))
			}
			if got, err := CrossZoneOf(tc.in, p); err != nil || planJSON(t, &Plan{CrossZone: got}) != planJSON(t, &Plan{CrossZone: cz}) {
				t.Fatalf("CrossZoneOf(plan) = %+v, %v; the plan says %+v", got, err, cz)
			}
			if objective(t, tc.in, p) > objective(t, tc.in, none) {
				t.Fatalf("min_traffic costs %d, none %d", objective(t, tc.in, p), objective(t, tc.in, none))
			}
			// Local flags agree with the bytes.
			for _, tz := range cz.Tasks {
				local := tz.ActiveLocal
				for _, l := range tz.StandbyLocal {
					local = local && l
				}
				if tz.Fetch == 0 && !local || tz.Bytes != tz.Fetch+tz.Produce {
					t.Fatalf("task %d: %+v", tz.Task, tz)
				}
			}
		})
	}
}

// TestRackAwareNoneIsToday: with strategy none the plan is today's, racks
// known or not, and reports its cross-zone bytes.
func TestRackAwareNoneIsToday(t *testing.T) {
	base := input(4, 1, []string{"zone"}, client("a", "zone=a"), client("b", "zone=b"), client("c", "zone=c"))
	in := withRacks(base, StrategyNone,
		taskParts(0, part(RoleInput, "c", "c"), part(RoleChangelog, "c", "c", "b")),
		taskParts(1, part(RoleInput, "a", "a")), taskParts(2, part(RoleInput, "b", "b")), taskParts(3, part(RoleInput, "b", "b")))
	p := mustAssign(t, in)
	today := mustAssign(t, base)
	if p.CrossZone == nil || p.CrossZone.Strategy != StrategyNone {
		t.Fatalf("cross_zone = %+v", p.CrossZone)
	}
	p.CrossZone = nil
	if a, b := planJSON(t, p), planJSON(t, today); a != b {
		t.Fatalf("none differs from today:\n%s\n%s", a, b)
	}
	in.RackAwareness.RackAwareStrategy = ""
	p = mustAssign(t, in)
	if p.CrossZone.Strategy != StrategyNone {
		t.Fatalf(`strategy "" reported as %q`, p.CrossZone.Strategy)
	}
	if _, err := CrossZoneOf(base, p); err == nil {
		t.Fatal("CrossZoneOf without rack awareness: no error")
	}
}

func TestRackAwarenessRejectsBrokenInput(t *testing.T) {
	base := func() Input {
		return withRacks(input(2, 0, nil, client("a", "zone=a"), client("b", "zone=b")),
			StrategyMinTraffic, taskParts(0, part(RoleInput, "a", "a")), taskParts(1, part(RoleInput, "b", "b")))
	}
	tests := []struct {
		field string
		edit  func(*RackAwareness)
	}{
		{"rack_awareness.strategy", func(ra *RackAwareness) { ra.RackAwareStrategy = "fastest" }},
		{"rack_awareness.traffic_cost", func(ra *RackAwareness) { ra.TrafficCost = -1 }},
		{"rack_awareness.non_overlap_cost", func(ra *RackAwareness) { ra.NonOverlapCost = -1 }},
		{"rack_awareness.tasks[1].task", func(ra *RackAwareness) { ra.Tasks[1].Task = 2 }},
		{"rack_awareness.tasks[1].task", func(ra *RackAwareness) { ra.Tasks[1].Task = 0 }},
		{"rack_awareness.tasks[0].partitions[0].role", func(ra *RackAwareness) { ra.Tasks[0].Partitions[0].Role = "table" }},
		{"rack_awareness.tasks[0].rates.output", func(ra *RackAwareness) { ra.Tasks[0].Rates = &TaskRates{Output: -3} }},
	}
	for _, tc := range tests {
		in := base()
		tc.edit(in.RackAwareness)
		_, err := Assign(in)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("want a *FieldError at %s, got %v", tc.field, err)
		}
	}
}

func TestRackAwarenessJSON(t *testing.T) {
	doc := `{"tasks": 2, "clients": [{"id": "a", "tags": {"zone": "a"}}, {"id": "b", "tags": {"zone": "b"}}],
	 "rack_awareness": {"strategy": "min_traffic", "client_rack_tag": "zone",
	  "tasks": [{"task": 0, "partitions": [{"topic": "in", "partition": 0, "role": "input", "replicas": ["b"], "leader": "b"}]},
	            {"task": 1, "rates": {"input": 10}, "partitions": [{"topic": "in", "partition": 1, "role": "input", "replicas": ["a"], "leader": "a"}]}]}}`
	in, err := DecodeInput([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	ra := in.RackAwareness
	if ra.TrafficCost != DefaultTrafficCost || ra.NonOverlapCost != DefaultNonOverlapCost {
		t.Fatalf("defaults not applied: %+v", ra)
	}
	p := mustAssign(t, in)
	checkActives(t, p, []string{"b", "a"})
	js := planJSON(t, p)
	want := `"cross_zone":{"strategy":"min_traffic","unknown":[],"total":0,"fetch":0,"produce":0,` +
		`"tasks":[{"task":0,"bytes":0,"fetch":0,"produce":0,"active_local":true,"standby_local":[]},` +
		`{"task":1,"bytes":0,"fetch":0,"produce":0,"active_local":true,"standby_local":[]}]}`
	if !strings.Contains(js, want) {
		t.Fatalf("plan JSON lacks %s:\n%s", want, js)
	}
	bad := strings.Replace(doc, `"client_rack_tag"`, `"client_rack"`, 1)
	if _, err := DecodeInput([]byte(bad)); err == nil || !strings.Contains(err.Error(), "client_rack") {
		t.Fatalf("unknown field accepted: %v", err)
	}
}
