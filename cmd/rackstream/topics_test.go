package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// topicsCreate runs `rackstream topics create args...` and returns its exit
// code and output.
func topicsCreate(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runTopics(context.Background(), append([]string{"create"}, args...), nil, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func partitionCount(t *testing.T, c *kafkatest.Cluster, topic string) int {
	t.Helper()
	td, err := c.Admin().ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return len(td[topic].Partitions)
}

func TestTopicsCreateIsIdempotentAndNamesAWrongCount(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.Name("topics-in"), c.Name("topics-out")
	sets := []string{
		"--set", "application.id=" + c.Name("topics-app"),
		"--set", "bootstrap.servers=" + strings.Join(c.Brokers, ","),
		"--set", "replication.factor=1",
		"--set", "processor.type=count",
		"--set", "processor.input.topic=" + in,
		"--set", "processor.output.topic=" + out,
	}

	code, stdout, stderr := topicsCreate(t, append(sets, "--partitions", "3")...)
	if code != 0 {
		t.Fatalf("first create: exit %d; stderr: %s", code, stderr)
	}
	for _, topic := range []string{in, out} {
		if n := partitionCount(t, c, topic); n != 3 {
			t.Errorf("%s has %d partitions, want 3", topic, n)
		}
		if !strings.Contains(stdout, "topic "+topic) || !strings.Contains(stdout, "created with 3 partitions") {
			t.Errorf("stdout does not report %s created: %s", topic, stdout)
		}
	}

	// Again, without --partitions: both exist with the input's count.
	code, stdout, stderr = topicsCreate(t, sets...)
	if code != 0 || strings.Count(stdout, "exists with 3 partitions") != 2 {
		t.Fatalf("second create: exit %d; stdout: %s; stderr: %s", code, stdout, stderr)
	}

	code, _, stderr = topicsCreate(t, append(sets, "--partitions", "5")...)
	if code != 2 {
		t.Fatalf("a wrong count: exit %d, want 2; stderr: %s", code, stderr)
	}
	for _, want := range []string{"topic " + in + " (processor.input.topic) exists with 3 partitions, not 5", "topic " + out + " (processor.output.topic) exists with 3 partitions, not 5", strings.Join(c.Brokers, ",")} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestTopicsCreateCoPartitionsTheOutputWithTheInput(t *testing.T) {
	c := kafkatest.New(t)
	in, out, extra := c.Name("topics-in"), c.Name("topics-out"), c.Name("topics-extra")
	c.CreateTopic(in, 4, nil)
	code, stdout, stderr := topicsCreate(t,
		"--set", "application.id="+c.Name("topics-app"),
		"--set", "bootstrap.servers="+strings.Join(c.Brokers, ","),
		"--set", "processor.type=latest",
		"--set", "processor.input.topic="+in,
		"--set", "processor.output.topic="+out,
		"--topic", extra,
		"--replication-factor", "1")
	if code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, stderr)
	}
	for _, topic := range []string{out, extra} {
		if n := partitionCount(t, c, topic); n != 4 {
			t.Errorf("%s has %d partitions, want the input's 4", topic, n)
		}
	}
	if !strings.Contains(stdout, "the partitions of processor.input.topic "+in) {
		t.Errorf("stdout does not say where the count came from: %s", stdout)
	}
}

func TestTopicsCreateRefusesToGuessACount(t *testing.T) {
	c := kafkatest.New(t)
	in := c.Name("topics-in")
	code, _, stderr := topicsCreate(t,
		"--set", "application.id="+c.Name("topics-app"),
		"--set", "bootstrap.servers="+strings.Join(c.Brokers, ","),
		"--set", "processor.type=count",
		"--set", "processor.input.topic="+in)
	if code != 2 || !strings.Contains(stderr, "processor.input.topic "+in+" does not exist yet: pass --partitions N") {
		t.Fatalf("exit %d, want 2 and a request for --partitions; stderr: %s", code, stderr)
	}
	if n := partitionCount(t, c, in); n != 0 {
		t.Errorf("%s was created with %d partitions", in, n)
	}
}

func TestTopicsCreateNamesAnUnreachableBroker(t *testing.T) {
	code, _, stderr := topicsCreate(t, "--brokers", "127.0.0.1:1", "--topic", "t", "--partitions", "1", "--timeout", "1s")
	if code != 1 || !strings.Contains(stderr, "on 127.0.0.1:1") {
		t.Fatalf("exit %d, want 1 and the broker named; stderr: %s", code, stderr)
	}
}

func TestTopicsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "Usage: rackstream topics create"},
		{[]string{"--help"}, 0, "Usage: rackstream topics create"},
		{[]string{"delete"}, 2, `unknown subcommand "delete"`},
		{[]string{"create", "--topic", "t", "--partitions", "1"}, 2, "--config or --brokers is required"},
		{[]string{"create", "--brokers", "b:1", "--partitions", "-1"}, 2, "--partitions -1"},
		{[]string{"create", "--brokers", "b:1", "stray"}, 2, "unexpected argument"},
	} {
		var stdout, stderr bytes.Buffer
		code := runTopics(context.Background(), tc.args, nil, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("topics %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}

func TestProduceToAMissingTopicSaysHowToCreateIt(t *testing.T) {
	c := kafkatest.New(t)
	topic := c.Name("produce-missing")
	var stdout, stderr bytes.Buffer
	code := runProduce(context.Background(), []string{"--brokers", strings.Join(c.Brokers, ","), "--topic", topic, "--timeout", "10s"},
		strings.NewReader("k\tv\n"), &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr: %s", code, stderr.String())
	}
	want := "topic " + topic + " does not exist on " + strings.Join(c.Brokers, ",") + ": create it first, with rackstream topics create --brokers"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
}

func TestRunWithAMissingInputSaysHowToCreateIt(t *testing.T) {
	c := kafkatest.New(t)
	file := writeValidateConfig(t,
		"application.id="+c.Name("run-missing"),
		"bootstrap.servers="+strings.Join(c.Brokers, ","),
		"processor.type=count",
		"processor.input.topic="+c.Name("run-missing-in"),
		"http.listen=127.0.0.1:0",
		"state.dir="+t.TempDir(),
	)
	var stderr bytes.Buffer
	if code := runRun(t.Context(), []string{"--config", file}, nil, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{"(missing)", "rackstream topics create --config FILE"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}
