package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
)

// readAll consumes n records of topic from the start.
func readAll(t *testing.T, c *kafkatest.Cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d of %d records before the deadline", topic, len(recs), n)
		}
		recs = append(recs, fs.Records()...)
	}
	return recs
}

func TestProducePutsEachLineInItsKeysSlot(t *testing.T) {
	c := kafkatest.New(t)
	for _, tc := range []struct {
		partitioner, separator, sepText string
	}{
		{"", "", "\t"}, // defaults: murmur2, TAB
		{"fnv1a", "TAB", "\t"},
		{"crc32", `\x1f`, "\x1f"},
		{"murmur2", "=>", "=>"},
	} {
		name := tc.partitioner
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			topic := c.Name("produce-" + name)
			c.CreateTopic(topic, 12, nil)
			var in strings.Builder
			const n = 300
			for i := 0; i < n; i++ {
				fmt.Fprintf(&in, "key-%d%svalue %d%swith the separator inside\n", i, tc.sepText, i, tc.sepText)
			}
			args := []string{"--brokers", strings.Join(c.Brokers, ","), "--topic", topic}
			if tc.partitioner != "" {
				args = append(args, "--partitioner", tc.partitioner)
			}
			if tc.separator != "" {
				args = append(args, "--separator", tc.separator)
			}
			var stdout, stderr bytes.Buffer
			if code := runProduce(context.Background(), args, strings.NewReader(in.String()), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d; stderr: %s", code, stderr.String())
			}
			if !strings.Contains(stdout.String(), fmt.Sprintf("produced %d records", n)) {
				t.Errorf("stdout %q does not report %d records", stdout.String(), n)
			}
			p, _ := partition.ByName(tc.partitioner)
			for _, r := range readAll(t, c, topic, n) {
				var i int
				if _, err := fmt.Sscanf(string(r.Key), "key-%d", &i); err != nil {
					t.Fatalf("unexpected key %q", r.Key)
				}
				if want := fmt.Sprintf("value %d%swith the separator inside", i, tc.sepText); string(r.Value) != want {
					t.Errorf("key %q: value %q, want %q", r.Key, r.Value, want)
				}
				if slot := p.Partition(r.Key, 12); slot != r.Partition {
					t.Errorf("key %q in partition %d, %s says %d", r.Key, r.Partition, p.Name(), slot)
				}
			}
		})
	}
}

func TestProduceReportsLinesWithoutSeparatorAndProducesTheRest(t *testing.T) {
	c := kafkatest.New(t)
	topic := c.Name("produce-bad-lines")
	c.CreateTopic(topic, 3, nil)
	in := "a\t1\nno separator here\n\nb\t2\r\nc\t3" // a blank line, CRLF and no final newline
	var stdout, stderr bytes.Buffer
	code := runProduce(context.Background(), []string{"--brokers", strings.Join(c.Brokers, ","), "--topic", topic},
		strings.NewReader(in), &stdout, &stderr)
	if code != 1 {
		t.Errorf("exit %d, want 1 for a bad line", code)
	}
	if !strings.Contains(stderr.String(), "stdin:2: no separator") {
		t.Errorf("stderr %q does not name line 2", stderr.String())
	}
	if !strings.Contains(stdout.String(), "produced 3 records") {
		t.Errorf("stdout %q: want the 3 good lines produced", stdout.String())
	}
	got := map[string]string{}
	for _, r := range readAll(t, c, topic, 3) {
		got[string(r.Key)] = string(r.Value)
	}
	if fmt.Sprint(got) != "map[a:1 b:2 c:3]" {
		t.Errorf("records %v, want a:1 b:2 c:3", got)
	}
}

func TestProduceRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing topic", []string{"--brokers", "127.0.0.1:1"}, "--topic and --brokers (or --config) are required"},
		{"bad configuration", []string{"--topic", "t", "--set", "partitioner=murmur3"}, "partitioner"},
		{"unknown partitioner", []string{"--brokers", "127.0.0.1:1", "--topic", "t", "--partitioner", "murmur3"}, `unknown partitioner "murmur3": valid are murmur2, fnv1a, crc32`},
		{"empty separator", []string{"--brokers", "127.0.0.1:1", "--topic", "t", "--separator", ""}, "--separator: must not be empty"},
		{"stray argument", []string{"--brokers", "127.0.0.1:1", "--topic", "t", "file.txt"}, `1 unexpected argument(s) after the flags, not shown (lines come from stdin`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := runProduce(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.want)
			}
		})
	}
}

func TestProduceTakesBrokersAndPartitionerFromTheConfiguration(t *testing.T) {
	c := kafkatest.New(t)
	topic := c.Name("produce-config")
	c.CreateTopic(topic, 12, nil)
	var in strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&in, "k%d\tv\n", i)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"--topic", topic, "--set", "application.id=produce-test",
		"--set", "bootstrap.servers=" + strings.Join(c.Brokers, ","), "--set", "partitioner=fnv1a"}
	if code := runProduce(context.Background(), args, strings.NewReader(in.String()), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "(partitioner fnv1a)") {
		t.Errorf("stdout %q: want the configured partitioner", stdout.String())
	}
	for _, r := range readAll(t, c, topic, 100) {
		if want := partition.FNV1a().Partition(r.Key, 12); r.Partition != want {
			t.Errorf("key %q in partition %d, fnv1a says %d", r.Key, r.Partition, want)
		}
	}
}

func TestProduceIsACommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch(context.Background(), []string{"produce", "--help"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("produce --help: exit %d, stderr %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "-partitioner string") {
		t.Errorf("help does not document -partitioner: %s", stderr.String())
	}
}
