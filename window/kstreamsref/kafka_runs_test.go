package kstreamsref

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	// defaulted is the start of the list with Kafka's default retention
	// (see withDefaultRetention), and defaultedResults Kafka's answers.
	defaulted        []Scenario
	defaultedResults []*Result
}

// defaultedCount is how many scenarios of the list run again with Kafka's
// default retention: four of each combination of window type, aggregation
// and emit, since the generator takes the 16 combinations in turn.
const defaultedCount = 64

// withDefaultRetention returns the first n scenarios of list with the
// retention left to Kafka's default (the window's length plus grace), under
// which windows expire while records still arrive, and renamed.
func withDefaultRetention(list []Scenario, n int) []Scenario {
	out := make([]Scenario, 0, n)
	for _, s := range list[:min(n, len(list))] {
		s.Name += "-default-retention"
		s.Window.RetentionMs = 0
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
	k := &kafkaRuns{ref: ref, list: list, defaulted: withDefaultRetention(list, defaultedCount)}
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
