package kstreamsref

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// system is one of Rackstream's answers to a scenario: the pure core
// (RunCore) or the runtime path (RunProcessor).
type system struct {
	name string
	run  func(Scenario) (*Result, error)
	// kafkaTimestamps is whether its output records carry Kafka's
	// timestamps. The runtime stamps a result with its input record's time,
	// a documented difference that RunProcessor checks itself.
	kafkaTimestamps bool
}

var (
	coreSystem    = system{name: "core", run: RunCore, kafkaTimestamps: true}
	runtimeSystem = system{name: "runtime", run: RunProcessor}
)

// Rackstream's pure core (package window, driven by RunCore as a task
// drives it) answers every scenario as Kafka Streams 4.4.0 does: under
// emit-final the same output, record for record and in order (the closing
// keys' windows aside, which stay open); under emit-on-update the same
// output too, record for record; in both modes the same final store and,
// per partition, the same dropped-records-total. The scenarios are the
// committed list and the hand-computed cases of TestReferenceIsKafkaStreams.
func TestWindowCoreEqualsKafkaStreams(t *testing.T) { equalsKafka(t, coreSystem) }

// Rackstream's runtime path answers every scenario as Kafka Streams 4.4.0
// does, as the core does: processor.NewWindowedAggregation as an input's
// handler in processor's TestDriver (RunProcessor), with its stores, its
// staged writes, its emits through a windowed output, and the late-record
// count the runtime exports. Output records are compared without their
// timestamps, which RunProcessor checks are the input records'.
func TestRuntimeEqualsKafkaStreams(t *testing.T) { equalsKafka(t, runtimeSystem) }

func equalsKafka(t *testing.T, sys system) {
	runs := kafkaResults(t)
	t.Run("hand-computed cases", func(t *testing.T) {
		for i, c := range referenceCases() {
			s := c.scenario(i)
			if why := outsideRackstream(s); why != "" {
				t.Logf("%s (%s): not compared: %s", s.Name, c.name, why)
				continue
			}
			if runs.caseErrs[i] != nil {
				t.Fatalf("%s: %v", s.Name, runs.caseErrs[i])
			}
			for _, d := range compareWithKafka(t, sys, s, runs.cases[i]) {
				t.Errorf("%s (%s): %s", s.Name, c.name, d)
			}
		}
	})
	t.Run("scenario list", func(t *testing.T) { compareList(t, sys, runs.list, runs.results) })
	t.Run("scenario list with Kafka's default retention", func(t *testing.T) {
		compareList(t, sys, runs.defaulted, runs.defaultedResults)
	})
}

// compareList compares sys with Kafka on generated scenarios, and stops
// after a few that differ.
func compareList(t *testing.T, sys system, list []Scenario, results []*Result) {
	failed := 0
	var outputs, stored, dropped int
	for i, s := range list {
		if why := outsideRackstream(s); why != "" {
			t.Fatalf("%s: a generated scenario Rackstream cannot answer: %s", s.Name, why)
		}
		for _, pr := range results[i].Partitions {
			outputs += len(pr.Output)
			stored += len(pr.Store)
			dropped += int(pr.DroppedRecords)
		}
		diffs := compareWithKafka(t, sys, s, results[i])
		for _, d := range diffs {
			t.Errorf("%s (%s %s %s): %s", s.Name, s.Window.Type, s.Aggregation, s.Emit, d)
		}
		if len(diffs) > 0 {
			if failed++; failed == 5 {
				t.Fatalf("stopping after %d scenarios that differ", failed)
			}
		}
	}
	t.Logf("%s: %d scenarios compared: %d output records, %d stored windows, %d drops",
		sys.name, len(list), outputs, stored, dropped)
}

// outsideRackstream says why Rackstream cannot answer s as Kafka does, or
// "": the emit-final throttle by wall clock, which Rackstream does not
// have.
func outsideRackstream(s Scenario) string {
	if s.EmitIntervalMs != 0 {
		return "Kafka's emit-final throttle by wall clock; Rackstream has none"
	}
	return ""
}

// compareWithKafka runs s through sys and lists every difference from
// Kafka's result.
func compareWithKafka(t *testing.T, sys system, s Scenario, kafka *Result) []string {
	t.Helper()
	got, err := sys.run(s)
	if err != nil {
		t.Fatal(err)
	}
	return resultDiffs(sys.name, s.Emit, got, kafka, sys.kafkaTimestamps)
}

// resultDiffs lists every difference of got, who's answer, from Kafka's,
// partition by partition: the output records in order (under Final
// without the closing keys' windows, which stay open; without timestamps
// unless timestamps), the final store and the dropped records.
func resultDiffs(who string, emit Emit, got, kafka *Result, timestamps bool) []string {
	if len(got.Partitions) != len(kafka.Partitions) {
		return []string{fmt.Sprintf("%d partitions, kafka %d", len(got.Partitions), len(kafka.Partitions))}
	}
	var diffs []string
	for p := range kafka.Partitions {
		k, g := kafka.Partitions[p], got.Partitions[p]
		kOut, gOut := k.Output, g.Output
		if emit == Final {
			kOut, gOut = withoutClosingKeys(kOut), withoutClosingKeys(gOut)
		}
		if !timestamps {
			kOut, gOut = withoutTimestamps(kOut), withoutTimestamps(gOut)
		}
		if !sameOutput(gOut, kOut) {
			diffs = append(diffs, fmt.Sprintf("partition %d output:\n%s", p, outputDiff(who, gOut, kOut)))
		}
		if !slices.Equal(g.Store, k.Store) {
			diffs = append(diffs, fmt.Sprintf("partition %d store:\n %-7s %v\n kafka   %v", p, who, g.Store, k.Store))
		}
		if g.DroppedRecords != k.DroppedRecords {
			diffs = append(diffs, fmt.Sprintf("partition %d dropped records: %s %d, kafka %d", p, who, g.DroppedRecords, k.DroppedRecords))
		}
	}
	return diffs
}

// withoutTimestamps returns out with every timestamp 0.
func withoutTimestamps(out []Output) []Output {
	kept := slices.Clone(out)
	for i := range kept {
		kept[i].Timestamp = 0
	}
	return kept
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

// outputDiff shows two outputs, who's and Kafka's, from their first
// difference on.
func outputDiff(who string, got, kafka []Output) string {
	i := 0
	for i < len(got) && i < len(kafka) && got[i].String() == kafka[i].String() {
		i++
	}
	tail := func(o []Output) []Output { return o[i:min(len(o), i+12)] }
	return fmt.Sprintf(" equal for %d records, then\n %-7s %v\n kafka   %v", i, who, tail(got), tail(kafka))
}
