package kstreamsref

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// kafkaRuns is Kafka's answer to every scenario the tests need, computed
// once per test binary by one JVM: the hand-computed cases, the committed
// list, and part of the list again with Kafka's default retention. The Kafka-only checks and the differential test read
// the same results, so no scenario runs twice except where a test repeats
// one on purpose.
type kafkaRuns struct {
	ref *Reference
	// cases holds the result of referenceCases()[i], or its error.
	cases    []*Result
	caseErrs []error
	// list is testdata/scenarios.jsonl and results Kafka's answer to each.
	list    []Scenario
	results []*Result
	// defaulted is part of the list again with Kafka's default retention
	// (see defaultRetentionList), and defaultedResults Kafka's answers.
	defaulted        []Scenario
	defaultedResults []*Result
}

// defaultRetentionList returns scenarios of list again with the retention
// left to Kafka's default (the window's length plus grace), under which
// windows expire while records still arrive: the first 64 as they are,
// four of each combination of window type, aggregation and emit (the
// generator takes the 16 in turn), and the next 32 with every time and
// duration in seconds rather than milliseconds. Segments are a minute at
// least, so only the latter span several and drop whole ones.
func defaultRetentionList(list []Scenario) []Scenario {
	var out []Scenario
	for i, s := range list[:min(96, len(list))] {
		scale := int64(1)
		s.Name += "-default-retention"
		if i >= 64 {
			scale = 1000
			s.Name += "-seconds"
		}
		w := &s.Window
		w.RetentionMs = 0
		w.SizeMs, w.AdvanceMs, w.TimeDifferenceMs, w.GapMs, w.GraceMs =
			w.SizeMs*scale, w.AdvanceMs*scale, w.TimeDifferenceMs*scale, w.GapMs*scale, w.GraceMs*scale
		s.Records = slices.Clone(s.Records)
		for j := range s.Records {
			s.Records[j].Timestamp *= scale
		}
		out = append(out, s)
	}
	return out
}

var (
	kafkaOnce sync.Once
	kafka     *kafkaRuns
	kafkaErr  error
	// kafkaCtx bounds the JVM's life; TestMain cancels it at the end.
	kafkaCtx context.Context
)

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	kafkaCtx = ctx
	code := m.Run()
	if kafka != nil {
		if err := kafka.ref.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = max(code, 1)
		}
	}
	cancel()
	os.Exit(code)
}

// kafkaResults builds and starts the Java reference on first use and runs
// every scenario through it. It skips the test when Java or Maven is
// missing, except under CI, where that fails it.
func kafkaResults(t testing.TB) *kafkaRuns {
	t.Helper()
	kafkaOnce.Do(func() { kafka, kafkaErr = runKafka(kafkaCtx) })
	if errors.Is(kafkaErr, ErrNoToolchain) {
		kafkatest.SkipOrFail(t, "the Kafka Streams reference needs Java and Maven: %v", kafkaErr)
	}
	if kafkaErr != nil {
		t.Fatal(kafkaErr)
	}
	return kafka
}

func runKafka(ctx context.Context) (*kafkaRuns, error) {
	f, err := os.Open(scenarioFile)
	if err != nil {
		return nil, err
	}
	list, err := ReadScenarios(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	jar, err := Build(ctx, ".")
	if err != nil {
		return nil, err
	}
	ref, err := Start(ctx, jar)
	if err != nil {
		return nil, err
	}
	k := &kafkaRuns{ref: ref, list: list, defaulted: defaultRetentionList(list)}
	for i, c := range referenceCases() {
		res, err := ref.Run(c.scenario(i))
		k.cases = append(k.cases, res)
		k.caseErrs = append(k.caseErrs, err)
	}
	for _, run := range []struct {
		in  []Scenario
		out *[]*Result
	}{{k.list, &k.results}, {k.defaulted, &k.defaultedResults}} {
		for _, s := range run.in {
			res, err := ref.Run(s)
			if err != nil {
				ref.Close()
				return nil, err
			}
			*run.out = append(*run.out, res)
		}
	}
	return k, nil
}
