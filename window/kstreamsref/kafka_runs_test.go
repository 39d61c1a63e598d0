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
// once per test binary by one JVM: the hand-computed cases and the
// committed list. The Kafka-only checks and the differential test read
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
	k := &kafkaRuns{ref: ref, list: list, results: make([]*Result, len(list))}
	for i, c := range referenceCases() {
		res, err := ref.Run(c.scenario(i))
		k.cases = append(k.cases, res)
		k.caseErrs = append(k.caseErrs, err)
	}
	for i, s := range list {
		if k.results[i], err = ref.Run(s); err != nil {
			ref.Close()
			return nil, err
		}
	}
	return k, nil
}
