package kafkaref

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor"
)

const rackScenarioFile = "testdata/rack_scenarios.jsonl"

// The committed rack-aware scenario list is exactly the seeded generator's
// output (-regenerate rewrites it with the other list).
func TestRackScenarioFileIsTheGeneratorsOutput(t *testing.T) {
	checkScenarioFile(t, rackScenarioFile, GenerateRackScenarios(RackScenarioSeed, RackScenarioCount),
		fmt.Sprintf("GenerateRackScenarios(%d, %d)", RackScenarioSeed, RackScenarioCount))
}

// TestRackAwareNeverCostsMoreThanKafkas runs every committed rack-aware
// scenario through the assignor (min_traffic, from scratch) and through
// Kafka Streams' TaskAssignmentUtils.optimizeRackAwareActiveTasks and
// optimizeRackAwareStandbyTasks, fed today's actives (the assignor's plan
// under strategy none), and scores both by Kafka's own cost function
// (KafkaCost, uniform weights). Both keep every client's active count: the
// active balance is equal. Kafka's standby optimisation, though, may put a
// standby beside its active or load one client more than ours allows, so:
//   - Kafka's plan never has a better spread than ours on some task while
//     as good on all others;
//   - where Kafka's plan has our spread on every task, our actives never
//     cost more; and where it also gives every client our standby count,
//     our whole plan never costs more.
//
// The rest is logged: totals, and how often each comparison applied.
func TestRackAwareNeverCostsMoreThanKafkas(t *testing.T) {
	scenarios, lines := readScenarioFile(t, rackScenarioFile)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ref := startReference(t, ctx)
	defer ref.Close()

	var (
		ours, kafka, today              [2]int // whole plan, actives
		sameWhole                       [2]int // whole plans where the spread is the same: ours, Kafka's
		sameSpread, sameLoad            int    // scenarios where the comparisons applied
		activesCheaper, wholeCheaper    int
		tasksBetter, tasksWorse, traded int
	)
	for i, s := range scenarios {
		var in assignor.Input
		if err := json.Unmarshal(lines[i], &in); err != nil {
			t.Fatalf("%s: decode as assignor.Input: %v", s.Name, err)
		}
		op, err := assignor.Assign(in)
		if err != nil {
			t.Fatalf("%s: Assign: %v", s.Name, err)
		}
		none := in
		ra := *in.RackAwareness
		ra.RackAwareStrategy = assignor.StrategyNone
		none.RackAwareness = &ra
		tp, err := assignor.Assign(none)
		if err != nil {
			t.Fatalf("%s: Assign (none): %v", s.Name, err)
		}
		kin, err := json.Marshal(withActives(s, tp))
		if err != nil {
			t.Fatal(err)
		}
		kr, err := ref.Run(kin)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		var kp assignor.Plan
		if err := json.Unmarshal(kr.Raw, &kp); err != nil {
			t.Fatalf("%s: decode Kafka's plan: %v", s.Name, err)
		}
		if len(kp.Tasks) != s.Tasks {
			t.Fatalf("%s: %d tasks in Kafka's plan, want %d", s.Name, len(kp.Tasks), s.Tasks)
		}
		if a, b, c := counts(op, false), counts(&kp, false), counts(tp, false); a != c || b != c {
			t.Fatalf("%s: active counts differ: ours %s, Kafka's %s, today's %s", s.Name, a, b, c)
		}
		better, worse := 0, 0
		for task := range s.Tasks {
			a, err := assignor.Spread(in, op.Tasks[task])
			if err != nil {
				t.Fatal(err)
			}
			b, err := assignor.Spread(in, kp.Tasks[task])
			if err != nil {
				t.Fatal(err)
			}
			switch assignor.CompareSpread(a, b) {
			case -1:
				worse++
			case 1:
				better++
			}
		}
		tasksBetter, tasksWorse = tasksBetter+better, tasksWorse+worse
		if worse > 0 && better == 0 {
			t.Errorf("%s: Kafka's plan has a better spread on %d tasks and a worse one on none:\nours  %s\nkafka %s",
				s.Name, worse, placements(op), placements(&kp))
		}
		if better > 0 {
			traded++
		}
		whole := [3]int{KafkaCost(s, op), KafkaCost(s, &kp), KafkaCost(s, tp)}
		act := [3]int{KafkaActiveCost(s, op), KafkaActiveCost(s, &kp), KafkaActiveCost(s, tp)}
		for j, x := range [][2]int{{whole[0], act[0]}, {whole[1], act[1]}, {whole[2], act[2]}} {
			p := [3]*[2]int{&ours, &kafka, &today}[j]
			p[0], p[1] = p[0]+x[0], p[1]+x[1]
		}
		if better > 0 || worse > 0 {
			continue
		}
		sameSpread++
		sameWhole[0], sameWhole[1] = sameWhole[0]+whole[0], sameWhole[1]+whole[1]
		if act[0] > act[1] {
			t.Errorf("%s: our actives cost %d by Kafka's function, Kafka's %d:\nours  %s\nkafka %s", s.Name, act[0], act[1], placements(op), placements(&kp))
		}
		if act[0] < act[1] {
			activesCheaper++
		}
		if counts(op, true) != counts(&kp, true) {
			continue
		}
		sameLoad++
		if whole[0] > whole[1] {
			t.Errorf("%s: our plan costs %d by Kafka's function, Kafka's %d:\nours  %s\nkafka %s", s.Name, whole[0], whole[1], placements(op), placements(&kp))
		}
		if whole[0] < whole[1] {
			wholeCheaper++
		}
	}
	t.Logf("%d rack-aware scenarios scored by Kafka's cost function (traffic_cost 10, non_overlap_cost 0), "+
		"whole plans / actives: ours %d / %d, Kafka Streams 4.4.0 %d / %d, today's (strategy none) %d / %d. "+
		"Tasks whose spread is better than in Kafka's plan: %d, worse: %d (Kafka traded spread in %d scenarios). "+
		"Same spread on every task in %d scenarios (whole plans: ours %d, Kafka's %d): our actives cheaper in %d, never dearer; "+
		"of those, the same standby count on every client in %d: our plan cheaper in %d, never dearer.",
		len(scenarios), ours[0], ours[1], kafka[0], kafka[1], today[0], today[1],
		tasksBetter, tasksWorse, traded, sameSpread, sameWhole[0], sameWhole[1], activesCheaper, sameLoad, wholeCheaper)
}

// counts renders every client's active count, or standby count.
func counts(p *assignor.Plan, standby bool) string {
	var b strings.Builder
	for _, c := range p.Clients {
		n := len(c.Active)
		if standby {
			n = len(c.Standby)
		}
		b.WriteString(c.ID + ":" + strconv.Itoa(n) + " ")
	}
	return b.String()
}

// withActives returns s with plan p's actives as every client's previous
// actives, caught up: the reference takes actives as given.
func withActives(s Scenario, p *assignor.Plan) Scenario {
	out := s
	out.Clients = make([]Client, len(s.Clients))
	byID := map[string]assignor.ClientPlacement{}
	for _, c := range p.Clients {
		byID[c.ID] = c
	}
	for i, c := range s.Clients {
		c.PreviousActive = byID[c.ID].Active
		c.Lags = map[string]int64{}
		for _, task := range c.PreviousActive {
			c.Lags[strconv.Itoa(task)] = 0
		}
		out.Clients[i] = c
	}
	return out
}

func placements(p *assignor.Plan) string {
	var b strings.Builder
	for _, tp := range p.Tasks {
		fmt.Fprintf(&b, "%d:%s%v ", tp.Task, tp.Active, tp.Standby)
	}
	return b.String()
}
