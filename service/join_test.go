package service

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// joinOutputs reads topic from the start until it has n records and returns
// their values by key.
func joinOutputs(t *testing.T, c *kafkatest.Cluster, topic string, n int) map[string]string {
	t.Helper()
	cl := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]string{}
	seen := 0
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for seen < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: %d records after 2 minutes, want %d: %v", topic, seen, n, got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			got[string(r.Key)] = string(r.Value)
		})
	}
	return got
}

// TestBuiltinJoinWithACoPartitionedTable: `run` with processor.type=join
// enriches each record with its key's row of a co-partitioned table (left:
// null where there is none), and serves the table's partitions as the store
// named after its topic.
func TestBuiltinJoinWithACoPartitionedTable(t *testing.T) {
	c := kafkatest.New(t)
	in, prices, out, app := c.Name("bj-orders"), c.Name("bj-prices"), c.Name("bj-out"), c.Name("bj")
	c.CreateTopic(in, 3, nil)
	c.CreateTopic(prices, 3, map[string]*string{"cleanup.policy": new("compact")})
	c.CreateTopic(out, 3, nil)
	c.Produce(&kgo.Record{Topic: prices, Key: []byte("apple"), Value: []byte(`{"eur":1}`)},
		&kgo.Record{Topic: prices, Key: []byte("pear"), Value: []byte("2")})
	cfg := load(t, "application.id="+app, "bootstrap.servers="+strings.Join(c.Brokers, ","),
		"processor.type=join", "processor.input.topic="+in, "processor.table.topic="+prices, "processor.output.topic="+out,
		"session.timeout.ms=6000", "replication.factor=1", "commit.interval.ms=100")
	inst, err := New(Options{Config: cfg, Logger: quiet, ClientOpts: c.ClientOpts()})
	if err != nil {
		t.Fatal(err)
	}
	runInstance(t, inst)
	url := "http://" + inst.Addr().String() + "/v1/stores/" + prices + "/keys/apple"
	kafkatest.Eventually(t, time.Minute, "the table's store answers apple", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var ans struct{ Value map[string]int }
		return resp.StatusCode == http.StatusOK && json.Unmarshal(b, &ans) == nil && ans.Value["eur"] == 1
	})
	c.Produce(&kgo.Record{Topic: in, Key: []byte("apple"), Value: []byte("o1")},
		&kgo.Record{Topic: in, Key: []byte("pear"), Value: []byte(`{"n":2}`)},
		&kgo.Record{Topic: in, Key: []byte("plum"), Value: []byte("o3")})
	got := joinOutputs(t, c, out, 3)
	want := map[string]string{
		"apple": `{"value":"o1","table":{"eur":1}}`,
		"pear":  `{"value":{"n":2},"table":2}`,
		"plum":  `{"value":"o3","table":null}`,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("output %s = %s, want %s", k, got[k], v)
		}
	}
}

// TestBuiltinJoinWithAGlobalTableByAField: processor.table.global=true and
// processor.join.key.field look the table up by a field of the value, and
// processor.join=inner drops records the table has no row for.
func TestBuiltinJoinWithAGlobalTableByAField(t *testing.T) {
	c := kafkatest.New(t)
	in, users, out, app := c.Name("bg-orders"), c.Name("bg-users"), c.Name("bg-out"), c.Name("bg")
	c.CreateTopic(in, 2, nil)
	c.CreateTopic(users, 3, map[string]*string{"cleanup.policy": new("compact")})
	c.CreateTopic(out, 2, nil)
	c.Produce(&kgo.Record{Topic: users, Key: []byte("u1"), Value: []byte("ann")},
		&kgo.Record{Topic: users, Key: []byte("u2"), Value: []byte("bob")})
	cfg := load(t, "application.id="+app, "bootstrap.servers="+strings.Join(c.Brokers, ","),
		"processor.type=join", "processor.join=inner", "processor.table.global=true", "processor.join.key.field=user",
		"processor.input.topic="+in, "processor.table.topic="+users, "processor.output.topic="+out,
		"session.timeout.ms=6000", "replication.factor=1", "commit.interval.ms=100")
	inst, err := New(Options{Config: cfg, Logger: quiet, ClientOpts: c.ClientOpts()})
	if err != nil {
		t.Fatal(err)
	}
	runInstance(t, inst)
	c.Produce(&kgo.Record{Topic: in, Key: []byte("o1"), Value: []byte(`{"user":"u1"}`)},
		&kgo.Record{Topic: in, Key: []byte("o2"), Value: []byte(`{"user":"nobody"}`)},
		&kgo.Record{Topic: in, Key: []byte("o3"), Value: []byte(`{"user":"u2"}`)})
	// Once the 3 inputs are committed, their outputs are written: o2 has
	// none.
	kafkatest.Eventually(t, 2*time.Minute, "the 3 orders committed", func() bool {
		offs, err := c.Admin().FetchOffsets(t.Context(), app)
		if err != nil {
			return false
		}
		var n int64
		for _, o := range offs[in] {
			n += o.At
		}
		return n == 3
	})
	var written int64
	for _, end := range c.EndOffsets(out) {
		written += end
	}
	if written != 2 {
		t.Errorf("%d outputs for 3 orders, one of them for a user the table lacks; want 2 (inner join)", written)
	}
	got := joinOutputs(t, c, out, 2)
	want := map[string]string{"o1": `{"value":{"user":"u1"},"table":"ann"}`, "o3": `{"value":{"user":"u2"},"table":"bob"}`}
	if len(got) != 2 || got["o1"] != want["o1"] || got["o3"] != want["o3"] {
		t.Errorf("output %v, want %v", got, want)
	}
}
