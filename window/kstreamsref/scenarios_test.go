package kstreamsref

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/rackstream/rackstream/partition"
)

var regenerate = flag.Bool("regenerate", false, "rewrite testdata/scenarios.jsonl from GenerateScenarios")

const scenarioFile = "testdata/scenarios.jsonl"

// The committed scenario list is exactly the seeded generator's output: no
// scenario can be dropped or edited by hand after seeing its result.
func TestScenarioFileIsTheGeneratorsOutput(t *testing.T) {
	var want bytes.Buffer
	if err := WriteScenarios(&want, GenerateScenarios(ScenarioSeed, ScenarioCount)); err != nil {
		t.Fatal(err)
	}
	if *regenerate {
		if err := os.WriteFile(scenarioFile, want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(scenarioFile)
	if err != nil {
		t.Fatalf("read %s: %v (create it with -regenerate)", scenarioFile, err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%s differs from GenerateScenarios(%d, %d). After a deliberate change to the generator, regenerate it "+
			"(go test ./window/kstreamsref/ -run %s -regenerate) and commit both; if only the Go toolchain changed "+
			"(math/rand/v2 does not promise stable sequences across releases), pin the generator's random source instead",
			scenarioFile, ScenarioSeed, ScenarioCount, t.Name())
	}
	parsed, err := ReadScenarios(bytes.NewReader(got))
	if err != nil || len(parsed) != ScenarioCount {
		t.Fatalf("read back %d scenarios, err %v; want %d", len(parsed), err, ScenarioCount)
	}
}

// Every scenario is well formed: keys in their murmur2 partition, each
// partition ending with a closing record past every window, a retention
// that keeps every window; and the list mixes the cases the comparison
// needs.
func TestGeneratedScenariosAreWellFormedAndCoverTheCases(t *testing.T) {
	scenarios := GenerateScenarios(ScenarioSeed, ScenarioCount)
	combos := map[[3]string]int{}
	outOfOrder, multiPartition, sameTimestamp := 0, 0, 0
	for _, s := range scenarios {
		combos[[3]string{string(s.Window.Type), string(s.Aggregation), string(s.Emit)}]++
		if s.Partitions > 1 {
			multiPartition++
		}
		reach := s.Window.SizeMs + s.Window.TimeDifferenceMs + s.Window.GapMs + s.Window.GraceMs
		for p := range s.Partitions {
			recs := s.PartitionRecords(p)
			if len(recs) == 0 {
				t.Fatalf("%s: partition %d has no records", s.Name, p)
			}
			closing := recs[len(recs)-1]
			if !strings.HasPrefix(closing.Key, ClosingKeyPrefix) {
				t.Fatalf("%s: partition %d ends with %q, not a closing key", s.Name, p, closing.Key)
			}
			var maxTS, seen int64 = 0, -1
			for _, r := range recs[:len(recs)-1] {
				if strings.HasPrefix(r.Key, ClosingKeyPrefix) {
					t.Fatalf("%s: partition %d: input key %q looks like a closing key", s.Name, p, r.Key)
				}
				if r.Timestamp < seen {
					outOfOrder++
				}
				if r.Timestamp == seen {
					sameTimestamp++
				}
				seen = max(seen, r.Timestamp)
				maxTS = max(maxTS, r.Timestamp)
			}
			if closing.Timestamp <= maxTS+reach+1 {
				t.Errorf("%s: partition %d: closing record at %d does not close windows of a record at %d (reach %d)",
					s.Name, p, closing.Timestamp, maxTS, reach)
			}
			if s.Window.RetentionMs <= closing.Timestamp {
				t.Errorf("%s: retention %d expires windows before the closing record at %d", s.Name, s.Window.RetentionMs, closing.Timestamp)
			}
		}
		for _, r := range s.Records {
			if got := partition.Murmur2().Partition([]byte(r.Key), s.Partitions); got != r.Partition {
				t.Fatalf("%s: key %q in partition %d, murmur2 says %d", s.Name, r.Key, r.Partition, got)
			}
		}
	}
	if want := len(WindowTypes) * 2 * 2; len(combos) != want {
		t.Errorf("%d combinations of window type, aggregation and emit, want %d", len(combos), want)
	}
	for c, n := range combos {
		if n < ScenarioCount/len(WindowTypes)/4 {
			t.Errorf("%v: %d scenarios", c, n)
		}
	}
	if multiPartition < ScenarioCount/2 || outOfOrder < ScenarioCount || sameTimestamp < ScenarioCount/10 {
		t.Errorf("%d scenarios with several partitions, %d out-of-order records, %d repeated timestamps: too few",
			multiPartition, outOfOrder, sameTimestamp)
	}
	t.Logf("%d scenarios: %d with several partitions, %d out-of-order records, %d repeated timestamps",
		len(scenarios), multiPartition, outOfOrder, sameTimestamp)
}
