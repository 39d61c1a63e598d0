package kafkaref

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"testing"
)

var regenerate = flag.Bool("regenerate", false, "rewrite the committed scenario lists from their generators")

const scenarioFile = "testdata/scenarios.jsonl"

// The committed scenario list is exactly the seeded generator's output: no
// scenario can be dropped or edited by hand after seeing its result.
func TestScenarioFileIsTheGeneratorsOutput(t *testing.T) {
	checkScenarioFile(t, scenarioFile, GenerateScenarios(ScenarioSeed, ScenarioCount),
		fmt.Sprintf("GenerateScenarios(%d, %d)", ScenarioSeed, ScenarioCount))
}

// checkScenarioFile fails t unless path holds exactly scenarios (the output
// of generator), rewriting it first under -regenerate.
func checkScenarioFile(t *testing.T, path string, scenarios []Scenario, generator string) {
	t.Helper()
	var want bytes.Buffer
	if err := WriteScenarios(&want, scenarios); err != nil {
		t.Fatal(err)
	}
	if *regenerate {
		if err := os.WriteFile(path, want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v (create it with -regenerate)", path, err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%s differs from %s. After a deliberate change to the generator, regenerate it "+
			"(go test ./assignor/kafkaref/ -run %s -regenerate) and commit both; if only the Go toolchain changed "+
			"(math/rand/v2 does not promise stable sequences across releases), pin the generator's random source instead",
			path, generator, t.Name())
	}
}

// readScenarioFile reads a committed scenario list and its raw lines.
func readScenarioFile(t *testing.T, path string) ([]Scenario, [][]byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	scenarios, lines, err := ReadScenarios(f)
	if err != nil {
		t.Fatal(err)
	}
	return scenarios, lines
}

// The generator covers the ranges the Assignor issue asks for.
func TestGeneratedScenariosCoverTheRanges(t *testing.T) {
	scenarios := GenerateScenarios(ScenarioSeed, ScenarioCount)
	dims, standbys := map[int]int{}, map[int]int{}
	minClients, maxClients := 1<<30, 0
	unevenFirstKey, unlisted, fewerClientsThanReplicas := 0, 0, 0
	for _, s := range scenarios {
		dims[len(s.RackAwareAssignmentTags)]++
		standbys[s.NumStandbyReplicas]++
		minClients, maxClients = min(minClients, len(s.Clients)), max(maxClients, len(s.Clients))
		if len(s.Clients) <= s.NumStandbyReplicas {
			fewerClientsThanReplicas++
		}
		perValue := map[string]int{}
		for _, c := range s.Clients {
			perValue[c.Tags[s.RackAwareAssignmentTags[0]]]++
			if len(c.Tags) > len(s.RackAwareAssignmentTags) {
				unlisted++
			}
			// Every task has its active, caught up.
			for _, task := range c.PreviousActive {
				if task < 0 || task >= s.Tasks {
					t.Fatalf("%s: client %s active for task %d of %d", s.Name, c.ID, task, s.Tasks)
				}
			}
		}
		lo, hi := 1<<30, 0
		for _, n := range perValue {
			lo, hi = min(lo, n), max(hi, n)
		}
		if len(perValue) > 1 && hi >= 2*lo {
			unevenFirstKey++
		}
	}
	for d := 1; d <= 4; d++ {
		if dims[d] < ScenarioCount/10 {
			t.Errorf("%d scenarios with %d tag dimensions, want at least %d", dims[d], d, ScenarioCount/10)
		}
	}
	for n := 1; n <= 3; n++ {
		if standbys[n] < ScenarioCount/10 {
			t.Errorf("%d scenarios with %d standbys, want at least %d", standbys[n], n, ScenarioCount/10)
		}
	}
	if minClients != 2 || maxClients != 60 {
		t.Errorf("clients range over [%d, %d], want [2, 60]", minClients, maxClients)
	}
	if unevenFirstKey < ScenarioCount/4 {
		t.Errorf("%d scenarios with uneven first-key values (largest >= 2x smallest), want at least %d", unevenFirstKey, ScenarioCount/4)
	}
	if unlisted == 0 || fewerClientsThanReplicas == 0 {
		t.Errorf("want clients with an unlisted tag (%d) and scenarios with fewer clients than replicas (%d)", unlisted, fewerClientsThanReplicas)
	}
	t.Logf("dimensions %v, standbys %v, clients [%d, %d], uneven %d, fewer clients than replicas %d",
		dims, standbys, minClients, maxClients, unevenFirstKey, fewerClientsThanReplicas)
}
