package service

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// TestBuiltinStreamJoinsStoreAnswersItsRecordsOverHTTP: the built-in
// stream join's store answers a key's buffered records of both sides, and
// every key's, at the window routes, oldest first.
func TestBuiltinStreamJoinsStoreAnswersItsRecordsOverHTTP(t *testing.T) {
	c := kafkatest.New(t)
	clicks, views, out, app := c.Name("sjq-clicks"), c.Name("sjq-views"), c.Name("sjq-out"), c.Name("sjq")
	for _, topic := range []string{clicks, views, out} {
		c.CreateTopic(topic, 2, nil)
	}
	cfg := load(t, "application.id="+app, "bootstrap.servers="+strings.Join(c.Brokers, ","),
		"processor.type=join", "processor.join=inner", "processor.input.topic="+clicks, "processor.join.stream.topic="+views,
		"processor.join.window.ms=60000", "processor.output.topic="+out,
		"session.timeout.ms=6000", "replication.factor=1", "commit.interval.ms=100")
	inst, err := New(Options{Config: cfg, Logger: quiet, ClientOpts: c.ClientOpts()})
	if err != nil {
		t.Fatal(err)
	}
	runInstance(t, inst)
	base := time.Now().Truncate(time.Second).Add(-time.Second)
	ms := base.UnixMilli()
	at := func(topic, key, value string, d int) *kgo.Record {
		return &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value), Timestamp: base.Add(time.Duration(d) * time.Millisecond)}
	}
	c.Produce(at(clicks, "ann", "c2", 300), at(views, "ann", "v1", 100), at(clicks, "ann", "c1", 200), at(views, "bob", "v2", 150))
	joinOutputs(t, c, out, 2)

	get := func(path string, ans any) bool {
		resp, err := http.Get("http://" + inst.Addr().String() + path)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && json.Unmarshal(b, ans) == nil
	}
	type record struct {
		Key       string          `json:"key"`
		Side      string          `json:"side"`
		Timestamp int64           `json:"timestamp"`
		Value     json.RawMessage `json:"value"`
	}
	show := func(rs []record) string {
		var s []string
		for _, r := range rs {
			s = append(s, fmt.Sprintf("%s %s %d %s", r.Key, r.Side, r.Timestamp-ms, r.Value))
		}
		return strings.Join(s, ", ")
	}
	var key struct{ Records []record }
	want := ` right 100 "v1",  left 200 "c1",  left 300 "c2"`
	kafkatest.Eventually(t, 20*time.Second, "ann's records", func() bool {
		return get("/v1/stores/join/windows/ann", &key) && show(key.Records) == want
	})
	path := fmt.Sprintf("/v1/stores/join/windows/ann?time_from=%d&time_to=%d", ms+150, ms+250)
	if !get(path, &key) || show(key.Records) != ` left 200 "c1"` {
		t.Errorf("ann's records in [150, 250]: %s", show(key.Records))
	}
	kafkatest.Eventually(t, 20*time.Second, "ann's committed records", func() bool {
		return get("/v1/stores/join/windows/ann?isolation=committed", &key) && show(key.Records) == want
	})
	var page struct{ Records []record }
	if !get("/v1/stores/join/windows?limit=10", &page) || show(page.Records) != `ann right 100 "v1", bob right 150 "v2", ann left 200 "c1", ann left 300 "c2"` {
		t.Errorf("every key's records: %s", show(page.Records))
	}
}
