package kstreamsref

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Rackstream's pure core (package window, driven by RunCore as a task
// drives it) answers every scenario as Kafka Streams 4.4.0 does: under
// emit-final the same output, record for record and in order (the closing
// keys' windows aside, which stay open); under emit-on-update the same
// output too, record for record; in both modes the same final store and,
// per partition, the same dropped-records-total. The scenarios are the
// committed list and the hand-computed cases of TestReferenceIsKafkaStreams.
func TestWindowCoreEqualsKafkaStreams(t *testing.T) {
	runs := kafkaResults(t)
	t.Run("hand-computed cases", func(t *testing.T) {
		for i, c := range referenceCases() {
			s := c.scenario(i)
			if why := outsideCore(s); why != "" {
				t.Logf("%s (%s): not compared: %s", s.Name, c.name, why)
				continue
			}
			if runs.caseErrs[i] != nil {
				t.Fatalf("%s: %v", s.Name, runs.caseErrs[i])
			}
			for _, d := range compareWithKafka(t, s, runs.cases[i]) {
				t.Errorf("%s (%s): %s", s.Name, c.name, d)
			}
		}
	})
	t.Run("scenario list", func(t *testing.T) { compareList(t, runs.list, runs.results) })
	t.Run("scenario list with Kafka's default retention", func(t *testing.T) {
		compareList(t, runs.defaulted, runs.defaultedResults)
	})
}

// compareList compares the core with Kafka on generated scenarios, and
// stops after a few that differ.
func compareList(t *testing.T, list []Scenario, results []*Result) {
	failed := 0
	var outputs, stored, dropped int
	for i, s := range list {
		if why := outsideCore(s); why != "" {
			t.Fatalf("%s: a generated scenario the core cannot answer: %s", s.Name, why)
		}
		for _, pr := range results[i].Partitions {
			outputs += len(pr.Output)
			stored += len(pr.Store)
			dropped += int(pr.DroppedRecords)
		}
		diffs := compareWithKafka(t, s, results[i])
		for _, d := range diffs {
			t.Errorf("%s (%s %s %s): %s", s.Name, s.Window.Type, s.Aggregation, s.Emit, d)
		}
		if len(diffs) > 0 {
			if failed++; failed == 5 {
				t.Fatalf("stopping after %d scenarios that differ", failed)
			}
		}
	}
	t.Logf("%d scenarios compared: %d output records, %d stored windows, %d drops",
		len(list), outputs, stored, dropped)
}

// outsideCore says why RunCore cannot answer s as Kafka does, or "": the
// emit-final throttle by wall clock, which Rackstream does not have.
func outsideCore(s Scenario) string {
	if s.EmitIntervalMs != 0 {
		return "Kafka's emit-final throttle by wall clock; Rackstream has none"
	}
	return ""
}

// compareWithKafka runs s through the core and lists every difference
// from Kafka's result.
func compareWithKafka(t *testing.T, s Scenario, kafka *Result) []string {
	t.Helper()
	core, err := RunCore(s)
	if err != nil {
		t.Fatal(err)
	}
	var diffs []string
	for p := range s.Partitions {
		k, c := kafka.Partitions[p], core.Partitions[p]
		kOut, cOut := k.Output, c.Output
		if s.Emit == Final {
			kOut, cOut = withoutClosingKeys(kOut), withoutClosingKeys(cOut)
		}
		if !sameOutput(cOut, kOut) {
			diffs = append(diffs, fmt.Sprintf("partition %d output:\n%s", p, outputDiff(cOut, kOut)))
		}
		if !slices.Equal(c.Store, k.Store) {
			diffs = append(diffs, fmt.Sprintf("partition %d store:\n core  %v\n kafka %v", p, c.Store, k.Store))
		}
		if c.DroppedRecords != k.DroppedRecords {
			diffs = append(diffs, fmt.Sprintf("partition %d dropped records: core %d, kafka %d", p, c.DroppedRecords, k.DroppedRecords))
		}
	}
	return diffs
}

func withoutClosingKeys(out []Output) []Output {
	var kept []Output
	for _, o := range out {
		if !strings.HasPrefix(o.Key, ClosingKeyPrefix) {
			kept = append(kept, o)
		}
	}
	return kept
}

// outputDiff shows two outputs from their first difference on.
func outputDiff(core, kafka []Output) string {
	i := 0
	for i < len(core) && i < len(kafka) && core[i].String() == kafka[i].String() {
		i++
	}
	tail := func(o []Output) []Output { return o[i:min(len(o), i+12)] }
	return fmt.Sprintf(" equal for %d records, then\n core  %v\n kafka %v", i, tail(core), tail(kafka))
}
