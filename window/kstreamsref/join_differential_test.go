package kstreamsref

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

const joinScenarioFile = "testdata/join_scenarios.jsonl"

// The committed join scenario list is exactly the seeded generator's
// output.
func TestJoinScenarioFileIsTheGeneratorsOutput(t *testing.T) {
	var want bytes.Buffer
	if err := WriteJoinScenarios(&want, GenerateJoinScenarios(JoinScenarioSeed, JoinScenarioCount)); err != nil {
		t.Fatal(err)
	}
	if *regenerate {
		if err := os.WriteFile(joinScenarioFile, want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(joinScenarioFile)
	if err != nil {
		t.Fatalf("read %s: %v (create it with -regenerate)", joinScenarioFile, err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%s differs from GenerateJoinScenarios(%d, %d); after a deliberate generator change run "+
			"go test ./window/kstreamsref/ -run %s -regenerate and commit both", joinScenarioFile, JoinScenarioSeed, JoinScenarioCount, t.Name())
	}
}

// joinCases are hand-computed join scenarios: one behaviour each, small
// enough to follow, with Kafka's answer written out.
func joinCases() []struct {
	s    JoinScenario
	want []string
} {
	l := func(key string, v, ts int64) JoinRecord {
		return JoinRecord{Side: "left", Key: key, Value: v, Timestamp: ts}
	}
	r := func(key string, v, ts int64) JoinRecord {
		return JoinRecord{Side: "right", Key: key, Value: v, Timestamp: ts}
	}
	sym := func(kind JoinKind, d, g int64) JoinSpec {
		return JoinSpec{Kind: kind, BeforeMs: d, AfterMs: d, GraceMs: g}
	}
	type c = struct {
		s    JoinScenario
		want []string
	}
	return []c{
		{JoinScenario{Name: "left-waits-for-grace", Join: sym(Left, 10, 5), Records: []JoinRecord{l("a", 1, 100), l("z", 2, 115), l("z", 3, 116)}},
			[]string{"a:1|-@100"}},
		{JoinScenario{Name: "left-partner-prevents-lone", Join: sym(Left, 10, 0), Records: []JoinRecord{l("a", 1, 100), r("a", 2, 108), l("z", 3, 200)}},
			[]string{"a:1|2@108"}},
		{JoinScenario{Name: "outer-right-first", Join: sym(Outer, 10, 0), Records: []JoinRecord{l("b", 1, 100), r("c", 2, 100), l("z", 3, 200)}},
			[]string{"c:-|2@100", "b:1|-@100"}},
		{JoinScenario{Name: "left-lagging-at-once", Join: sym(Left, 10, 50), Records: []JoinRecord{l("z", 1, 200), l("a", 2, 100)}},
			[]string{"a:2|-@100"}},
		{JoinScenario{Name: "head-hint-delays", Join: sym(Left, 10, 0), Records: []JoinRecord{
			l("x", 1, 100), l("a", 2, 105), l("b", 3, 108), l("z", 4, 112), r("c", 5, 116), l("c", 6, 116), l("z", 7, 119)}},
			[]string{"x:1|-@100", "c:6|5@116", "a:2|-@105", "b:3|-@108"}},
	}
}

// TestStreamJoinCoreEqualsKafkaStreams: Rackstream's join core
// (window.StreamJoin, driven by RunJoinCore as a task drives it) answers
// every join scenario as Kafka Streams 4.4.0 does, with the unmatched
// records' throttle at 0: the same results, record for record and in
// order (the closing keys' aside), and per partition the same
// dropped-records-total.
func TestStreamJoinCoreEqualsKafkaStreams(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	jar, err := Build(ctx, ".")
	if errors.Is(err, ErrNoToolchain) {
		kafkatest.SkipOrFail(t, "the Kafka Streams reference needs Java and Maven: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Start(ctx, jar)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ref.Close(); err != nil {
			t.Error(err)
		}
	}()
	t.Run("hand-computed cases", func(t *testing.T) {
		for _, c := range joinCases() {
			c.s.Partitions = 1
			kafka, err := ref.RunJoin(c.s)
			if err != nil {
				t.Fatal(err)
			}
			if got := joinStrings(withoutClosingJoins(kafka.Partitions[0].Output)); !slices.Equal(got, c.want) {
				t.Errorf("%s: Kafka answers %q, the case says %q", c.s.Name, got, c.want)
			}
			for _, d := range compareJoinWithKafka(t, c.s, kafka) {
				t.Errorf("%s: %s", c.s.Name, d)
			}
		}
	})
	f, err := os.Open(joinScenarioFile)
	if err != nil {
		t.Fatal(err)
	}
	list, err := ReadJoinScenarios(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("scenario list", func(t *testing.T) { compareJoinList(t, ref, list) })
	t.Run("scenario list in seconds", func(t *testing.T) { compareJoinList(t, ref, inSeconds(list[:60])) })
}

// inSeconds returns scenarios with every time and duration in seconds
// rather than milliseconds: segments are a minute at least, so only then
// do whole segments expire and records' store writes get skipped.
func inSeconds(list []JoinScenario) []JoinScenario {
	out := make([]JoinScenario, len(list))
	for i, s := range list {
		s.Name += "-seconds"
		s.Join.BeforeMs, s.Join.AfterMs, s.Join.GraceMs = s.Join.BeforeMs*1000, s.Join.AfterMs*1000, s.Join.GraceMs*1000
		s.Records = slices.Clone(s.Records)
		for j := range s.Records {
			s.Records[j].Timestamp *= 1000
		}
		out[i] = s
	}
	return out
}

// compareJoinList compares the core with Kafka on a list of scenarios, and
// stops after a few that differ.
func compareJoinList(t *testing.T, ref *Reference, list []JoinScenario) {
	failed, outputs, lone, dropped := 0, 0, 0, 0
	for _, s := range list {
		kafka, err := ref.RunJoin(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range kafka.Partitions {
			outputs += len(p.Output)
			dropped += int(p.DroppedRecords)
			for _, o := range p.Output {
				if o.Left == nil || o.Right == nil {
					lone++
				}
			}
		}
		diffs := compareJoinWithKafka(t, s, kafka)
		for _, d := range diffs {
			t.Errorf("%s (%s %+v): %s", s.Name, s.Join.Kind, s.Join, d)
		}
		if len(diffs) > 0 {
			if failed++; failed == 5 {
				t.Fatalf("stopping after %d scenarios that differ", failed)
			}
		}
	}
	t.Logf("%d join scenarios compared: %d results, %d of them unmatched records, %d drops", len(list), outputs, lone, dropped)
	if lone == 0 || outputs == lone {
		t.Errorf("the list lacks pairs or unmatched records: %d results, %d unmatched", outputs, lone)
	}
}

// compareJoinWithKafka runs s through the core and lists every difference
// from Kafka's result.
func compareJoinWithKafka(t *testing.T, s JoinScenario, kafka *JoinResult) []string {
	t.Helper()
	core, err := RunJoinCore(s)
	if err != nil {
		t.Fatal(err)
	}
	var diffs []string
	for p := range s.Partitions {
		k, c := kafka.Partitions[p], core.Partitions[p]
		ks, cs := joinStrings(withoutClosingJoins(k.Output)), joinStrings(withoutClosingJoins(c.Output))
		if !slices.Equal(cs, ks) {
			i := 0
			for i < len(cs) && i < len(ks) && cs[i] == ks[i] {
				i++
			}
			diffs = append(diffs, fmt.Sprintf("partition %d output equal for %d results, then\n core  %v\n kafka %v",
				p, i, cs[i:min(len(cs), i+10)], ks[i:min(len(ks), i+10)]))
		}
		if c.DroppedRecords != k.DroppedRecords {
			diffs = append(diffs, fmt.Sprintf("partition %d dropped records: core %d, kafka %d", p, c.DroppedRecords, k.DroppedRecords))
		}
	}
	return diffs
}

func withoutClosingJoins(out []JoinOutput) []JoinOutput {
	return slices.DeleteFunc(slices.Clone(out), func(o JoinOutput) bool { return strings.HasPrefix(o.Key, ClosingKeyPrefix) })
}

func joinStrings(out []JoinOutput) []string {
	s := make([]string, len(out))
	for i, o := range out {
		s[i] = o.String()
	}
	return s
}
