package service

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

// TestGlobalTableIsQueriedLocallyOverHTTP: a global table is a store of the
// query server, answered from the instance's own copy (task -1), kept
// current as its topic is written, scanned across its partitions.
func TestGlobalTableIsQueriedLocallyOverHTTP(t *testing.T) {
	c := kafkatest.New(t)
	in, users, app := c.Name("gq-in"), c.Name("gq-users"), c.Name("gq")
	c.CreateTopic(in, 2, nil)
	c.CreateTopic(users, 3, map[string]*string{"cleanup.policy": new("compact")})
	c.Produce(&kgo.Record{Topic: users, Key: []byte("u1"), Value: []byte("ann")},
		&kgo.Record{Topic: users, Key: []byte("u2"), Value: []byte("bob")})

	topo := processor.New(app)
	processor.NewGlobalTable(topo, users, codec.String(), codec.String())
	processor.NewInput(topo, in, codec.String(), codec.String(), func(*processor.Context, string, string) error { return nil })
	cfg := load(t, "application.id="+app, "bootstrap.servers="+strings.Join(c.Brokers, ","),
		"session.timeout.ms=6000", "replication.factor=1")
	inst, err := New(Options{Config: cfg, Logger: quiet, ClientOpts: c.ClientOpts(), Topology: topo})
	if err != nil {
		t.Fatal(err)
	}
	runInstance(t, inst)
	base := "http://" + inst.Addr().String() + "/v1/stores/" + users
	get := func(path string, into any) int { return getJSON(t, base+path, into) }
	var ans struct {
		Value any   `json:"value"`
		Task  int32 `json:"task"`
		Role  string
	}
	kafkatest.Eventually(t, time.Minute, "u1 answered", func() bool { return get("/keys/u1", &ans) == http.StatusOK })
	if ans.Value != "ann" || ans.Task != -1 || ans.Role != "active" {
		t.Errorf("u1: %+v, want ann from task -1, active", ans)
	}
	if code := get("/keys/nobody", &ans); code != http.StatusNotFound {
		t.Errorf("absent key: status %d, want 404", code)
	}
	c.Produce(&kgo.Record{Topic: users, Key: []byte("u1"), Value: []byte("anne")})
	kafkatest.Eventually(t, time.Minute, "u1's update answered", func() bool {
		return get("/keys/u1", &ans) == http.StatusOK && ans.Value == "anne"
	})
	var scan struct {
		Items []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"items"`
	}
	if code := get("/scan", &scan); code != http.StatusOK {
		t.Fatalf("scan: status %d", code)
	}
	if len(scan.Items) != 2 || scan.Items[0].Value != "anne" || scan.Items[1].Value != "bob" {
		t.Errorf("scan: %+v, want u1=anne, u2=bob", scan.Items)
	}
}
