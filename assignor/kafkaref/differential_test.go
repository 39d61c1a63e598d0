package kafkaref

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/harness/kafkatest"
)

var update = flag.Bool("update", false, "write the side-by-side figures to bench/kafkaref.md")

// benchFile is where -update writes the figures, relative to this package.
const benchFile = "../../bench/kafkaref.md"

// startReference builds and starts the Java reference, skipping the test
// when Java or Maven is missing, except under CI, where that fails it.
func startReference(t testing.TB, ctx context.Context) *Reference {
	t.Helper()
	jar, err := Build(ctx, ".")
	if errors.Is(err, ErrNoToolchain) {
		kafkatest.SkipOrFail(t, "the Kafka reference check needs Java and Maven: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Start(ctx, jar)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// side accumulates one placer's figures over all scenarios.
type side struct {
	repeating  []int // tasks_repeating by priority rank of the key
	shortfall  int
	replicaMax float64 // sum over scenarios of replica_load.max
	replicaGap float64 // sum over scenarios of replica_load.max - min
	elapsed    time.Duration
}

func (s *side) add(q assignor.Quality) {
	for rank, d := range q.Dimensions {
		for len(s.repeating) <= rank {
			s.repeating = append(s.repeating, 0)
		}
		s.repeating[rank] += d.TasksRepeating
	}
	s.shortfall += q.StandbyShortfall
	s.replicaMax += q.ReplicaLoad.Max
	s.replicaGap += q.ReplicaLoad.Max - q.ReplicaLoad.Min
}

// TestStandbysAtLeastAsWellSpreadAsKafkas runs every committed scenario
// through the assignor and through Kafka Streams' own standby assignment,
// with the same actives, and requires for every task a spread at least as
// good as Kafka's and no fewer standbys.
func TestStandbysAtLeastAsWellSpreadAsKafkas(t *testing.T) {
	scenarios, lines := readScenarioFile(t, scenarioFile)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	started := time.Now()
	ref := startReference(t, ctx)
	defer ref.Close()

	var (
		ours, kafka             side
		tasksBetter, tasksTotal int
		scenariosBetter         int
		loadHigher, loadLower   int      // scenarios where our replica_load.max is above / below Kafka's
		loadHigherSameSpread    []string // ... above, although every task's spread equals Kafka's
		ranks                   []int    // scenarios with a key of each priority rank
		tasksByRank             []int
		firstReply, kafkaCPU    time.Duration
	)
	for i, s := range scenarios {
		var in assignor.Input
		if err := json.Unmarshal(lines[i], &in); err != nil {
			t.Fatalf("%s: decode as assignor.Input: %v", s.Name, err)
		}
		goStart := time.Now()
		plan, err := assignor.Assign(in)
		ours.elapsed += time.Since(goStart)
		if err != nil {
			t.Errorf("%s: Assign: %v", s.Name, err)
			continue
		}
		ref0 := time.Now()
		kp, err := ref.Run(lines[i])
		if i == 0 {
			firstReply = time.Since(ref0)
		}
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		kafka.elapsed += time.Duration(kp.ElapsedNanos)
		kafkaCPU += time.Duration(kp.CPUNanos)
		var kplan assignor.Plan
		if err := json.Unmarshal(kp.Raw, &kplan); err != nil {
			t.Fatalf("%s: decode Kafka's plan: %v", s.Name, err)
		}
		if len(plan.Tasks) != s.Tasks || len(kplan.Tasks) != s.Tasks {
			t.Fatalf("%s: %d tasks in our plan, %d in Kafka's, want %d", s.Name, len(plan.Tasks), len(kplan.Tasks), s.Tasks)
		}

		better := false
		for task := range s.Tasks {
			c, problems := compareTask(s, in, plan.Tasks[task], kplan.Tasks[task])
			for _, p := range problems {
				t.Errorf("%s task %d: %s", s.Name, task, p)
			}
			if c > 0 {
				tasksBetter++
				better = true
			}
			tasksTotal++
		}
		if better {
			scenariosBetter++
		}

		oq, err := assignor.Measure(in, plan)
		if err != nil {
			t.Fatalf("%s: measure our plan: %v", s.Name, err)
		}
		kq, err := assignor.Measure(in, &kplan)
		if err != nil {
			t.Fatalf("%s: measure Kafka's plan: %v", s.Name, err)
		}
		ours.add(oq)
		kafka.add(kq)
		switch {
		case oq.ReplicaLoad.Max > kq.ReplicaLoad.Max+1e-9:
			loadHigher++
			if !better {
				loadHigherSameSpread = append(loadHigherSameSpread, fmt.Sprintf("%s (%.3g vs %.3g)", s.Name, oq.ReplicaLoad.Max, kq.ReplicaLoad.Max))
			}
		case oq.ReplicaLoad.Max < kq.ReplicaLoad.Max-1e-9:
			loadLower++
		}
		for rank := range s.RackAwareAssignmentTags {
			for len(ranks) <= rank {
				ranks, tasksByRank = append(ranks, 0), append(tasksByRank, 0)
			}
			ranks[rank]++
			tasksByRank[rank] += s.Tasks
		}
	}
	if err := ref.Close(); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(started)

	var b strings.Builder
	fmt.Fprintf(&b, "%d scenarios from %s (GenerateScenarios(%d, %d)), %d tasks; the same actives on both sides.\n\n",
		len(scenarios), scenarioFile, ScenarioSeed, ScenarioCount, tasksTotal)
	fmt.Fprintf(&b, "| figure (totals over all scenarios) | Rackstream | Kafka Streams 4.4.0 |\n|---|---:|---:|\n")
	for rank := range ranks {
		fmt.Fprintf(&b, "| tasks_repeating, key of priority %d (%d scenarios, %d tasks) | %d | %d |\n",
			rank+1, ranks[rank], tasksByRank[rank], at(ours.repeating, rank), at(kafka.repeating, rank))
	}
	fmt.Fprintf(&b, "| standby_shortfall | %d | %d |\n", ours.shortfall, kafka.shortfall)
	fmt.Fprintf(&b, "| replica_load.max, mean per scenario | %.3f | %.3f |\n", ours.replicaMax/float64(len(scenarios)), kafka.replicaMax/float64(len(scenarios)))
	fmt.Fprintf(&b, "| replica_load max - min, mean per scenario | %.3f | %.3f |\n", ours.replicaGap/float64(len(scenarios)), kafka.replicaGap/float64(len(scenarios)))
	fmt.Fprintf(&b, "| placement time, all scenarios | %s | %s (CPU %s) |\n",
		ours.elapsed.Round(time.Millisecond), kafka.elapsed.Round(time.Millisecond), kafkaCPU.Round(time.Millisecond))
	fmt.Fprintf(&b, "\nTasks with a strictly better spread than Kafka's: %d of %d, in %d of %d scenarios; worse: none allowed (the test fails).\n",
		tasksBetter, tasksTotal, scenariosBetter, len(scenarios))
	fmt.Fprintf(&b, "Scenarios where our replica_load.max is higher than Kafka's: %d, lower: %d", loadHigher, loadLower)
	if len(loadHigherSameSpread) > 0 {
		fmt.Fprintf(&b, "; higher although no task's spread is better (load the spread did not force): %d: %s",
			len(loadHigherSameSpread), strings.Join(loadHigherSameSpread, ", "))
	}
	fmt.Fprintf(&b, ".\n")
	fmt.Fprintf(&b, "Replica load counts actives and standbys per unit of capacity (warmups excluded). Kafka's time is measured inside the JVM "+
		"(building its ApplicationState and assigning, no JSON); the JVM's first reply took %s (startup, class loading, no JIT yet) "+
		"and the whole differential run %s.\n", firstReply.Round(time.Millisecond), wall.Round(time.Millisecond))
	t.Log("\n" + b.String())

	if *update && !t.Failed() {
		if err := writeSection(benchFile, "differential", "## Standby spread against Kafka Streams, scenario by scenario\n\n"+
			"`go test ./assignor/kafkaref/ -run TestStandbysAtLeastAsWellSpreadAsKafkas -update`\n\n"+b.String()); err != nil {
			t.Fatal(err)
		}
	}
}

// compareTask compares one task's placement in our plan and in Kafka's: c
// is CompareSpread of our spread against Kafka's, and problems says what
// breaks the differential's rules (a worse spread, fewer standbys, or a
// different active, which would void the comparison).
func compareTask(s Scenario, in assignor.Input, ours, kafka assignor.TaskPlacement) (c int, problems []string) {
	if ours.Active != kafka.Active {
		return 0, []string{fmt.Sprintf("active on %s in our plan, on %s in Kafka's (actives are fixed by the scenario)", ours.Active, kafka.Active)}
	}
	ourSpread, err := assignor.Spread(in, ours)
	if err != nil {
		return 0, []string{fmt.Sprintf("our spread: %v", err)}
	}
	kafkaSpread, err := assignor.Spread(in, kafka)
	if err != nil {
		return 0, []string{fmt.Sprintf("Kafka's spread: %v", err)}
	}
	c = assignor.CompareSpread(ourSpread, kafkaSpread)
	if c < 0 {
		problems = append(problems, fmt.Sprintf("our spread %v over %v is worse than Kafka's %v: ours %s+%v %s, Kafka's %s+%v %s",
			ourSpread, s.RackAwareAssignmentTags, kafkaSpread,
			ours.Active, ours.Standby, describeTags(s, ours), kafka.Active, kafka.Standby, describeTags(s, kafka)))
	}
	if len(ours.Standby) < len(kafka.Standby) {
		problems = append(problems, fmt.Sprintf("%d standbys in our plan (%v), %d in Kafka's (%v)",
			len(ours.Standby), ours.Standby, len(kafka.Standby), kafka.Standby))
	}
	return c, problems
}

func at(xs []int, i int) int {
	if i < len(xs) {
		return xs[i]
	}
	return 0
}

// describeTags renders a task's replicas' values of the rack-aware keys.
func describeTags(s Scenario, t assignor.TaskPlacement) string {
	byID := map[string]Client{}
	for _, c := range s.Clients {
		byID[c.ID] = c
	}
	var parts []string
	for _, id := range append([]string{t.Active}, t.Standby...) {
		var vals []string
		for _, k := range s.RackAwareAssignmentTags {
			vals = append(vals, byID[id].Tags[k])
		}
		parts = append(parts, "("+strings.Join(vals, ",")+")")
	}
	return strings.Join(parts, " ")
}

// writeSection replaces the part of path between <!-- name --> and
// <!-- /name --> with body, creating the file or appending the section as
// needed, so that the differential and the scale runs update one file.
func writeSection(path, name, body string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("update %s: %w", path, err)
	}
	text := string(old)
	if text == "" {
		text = "# Rackstream's placement against Kafka Streams'\n\n" +
			"Written by the tests of `assignor/kafkaref` (see its package doc); do not edit by hand.\n"
	}
	begin, end := "<!-- "+name+" -->", "<!-- /"+name+" -->"
	section := begin + "\n" + strings.TrimRight(body, "\n") + "\n" + end
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i >= 0 && j > i {
		text = text[:i] + section + text[j+len(end):]
	} else {
		text = strings.TrimRight(text, "\n") + "\n\n" + section + "\n"
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("update %s: %w", path, err)
	}
	return nil
}
