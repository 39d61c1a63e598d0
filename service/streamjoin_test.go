package service

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// TestBuiltinStreamJoin: `run` with processor.type=join in stream mode
// creates the join's store changelog, meets the records of the two streams
// by key within processor.join.window.ms, and under processor.join=outer
// emits the unmatched ones of both sides alone once their window closes.
func TestBuiltinStreamJoin(t *testing.T) {
	c := kafkatest.New(t)
	clicks, views, out, app := c.Name("bsj-clicks"), c.Name("bsj-views"), c.Name("bsj-out"), c.Name("bsj")
	for _, topic := range []string{clicks, views, out} {
		c.CreateTopic(topic, 1, nil)
	}
	cfg := load(t, "application.id="+app, "bootstrap.servers="+strings.Join(c.Brokers, ","),
		"processor.type=join", "processor.join=outer", "processor.input.topic="+clicks, "processor.join.stream.topic="+views,
		"processor.join.window.ms=1000", "processor.output.topic="+out,
		"session.timeout.ms=6000", "replication.factor=1", "commit.interval.ms=100")
	inst, err := New(Options{Config: cfg, Logger: quiet, ClientOpts: c.ClientOpts()})
	if err != nil {
		t.Fatal(err)
	}
	runInstance(t, inst)
	base := time.Now().Truncate(time.Second)
	at := func(topic, key, value string, ms int) *kgo.Record {
		return &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value), Timestamp: base.Add(time.Duration(ms) * time.Millisecond)}
	}
	c.Produce(at(views, "ann", "v1", 0), at(views, "cat", "v3", 100), at(clicks, "ann", "c1", 400), at(clicks, "bob", "c2", 500))
	c.Produce(at(clicks, "zed", "close", 5000))
	got := joinOutputs(t, c, out, 3)
	want := map[string]string{
		"ann": `{"left":"c1","right":"v1"}`,
		"bob": `{"left":"c2","right":null}`,
		"cat": `{"left":null,"right":"v3"}`,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("output %s = %s, want %s", k, got[k], v)
		}
	}
	kafkatest.Eventually(t, time.Minute, "the join's changelog", func() bool {
		return len(c.ConsumeAll(app+"-join-changelog")) > 0
	})
}
