package service

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// TestLatestReadsSeeAProcessedRecordBeforeTheCommit runs the count over
// HTTP with a commit interval longer than the test (an hour), so nothing
// commits until the shutdown: a processed record's count answers at once
// at isolation=latest (and by default, at-least-once), with the position
// of the last commit (none yet: 0), while isolation=committed does not
// see it; after the shutdown's commit, a new instance on the same state
// directory answers it at isolation=committed too.
func TestLatestReadsSeeAProcessedRecordBeforeTheCommit(t *testing.T) {
	c := kafkatest.New(t)
	in, app := c.Name("fresh-in"), c.Name("fresh")
	c.CreateTopic(in, 1, nil)
	cfg := load(t, "application.id="+app, "bootstrap.servers="+strings.Join(c.Brokers, ","),
		"processor.type=count", "processor.input.topic="+in, "commit.interval.ms=3600000",
		"session.timeout.ms=6000", "replication.factor=1")
	start := func() (base string, stop func()) {
		inst, err := New(Options{Config: cfg, Logger: quiet, ClientOpts: c.ClientOpts()})
		if err != nil {
			t.Fatal(err)
		}
		return "http://" + inst.Addr().String() + "/v1/stores/count", runInstance(t, inst)
	}
	type answer struct {
		Value    any   `json:"value"`
		Position int64 `json:"position"`
		Items    []struct {
			Key string `json:"key"`
		} `json:"items"`
	}
	get := func(url string) (int, answer) {
		var a answer
		return getJSON(t, url, &a), a
	}
	committedOffset := func() int64 {
		offs, err := c.Admin().FetchOffsets(t.Context(), app)
		if err != nil {
			t.Fatalf("fetch offsets: %v", err)
		}
		if o, ok := offs.Lookup(in, 0); ok {
			return o.At
		}
		return -1
	}

	base, stop := start()
	const records = 5
	for range records {
		c.Produce(&kgo.Record{Topic: in, Partition: 0, Key: []byte("k"), Value: []byte("x")})
	}
	var a answer
	kafkatest.Eventually(t, time.Minute, "k's count of 5 at isolation=latest", func() bool {
		var code int
		code, a = get(base + "/keys/k?isolation=latest")
		return code == http.StatusOK && a.Value == float64(records)
	})
	if a.Position != 0 {
		t.Errorf("latest answer's position %d, want 0: the checkpoint, nothing committed yet", a.Position)
	}
	if code, a := get(base + "/keys/k"); code != http.StatusOK || a.Value != float64(records) {
		t.Errorf("default isolation (at-least-once: latest): status %d, value %v; want 200 and %d", code, a.Value, records)
	}
	if code, _ := get(base + "/keys/k?isolation=committed"); code != http.StatusNotFound {
		t.Errorf("isolation=committed before any commit: status %d, want 404", code)
	}
	if code, a := get(base + "/scan?isolation=latest"); code != http.StatusOK || len(a.Items) != 1 || a.Items[0].Key != "k" {
		t.Errorf("scan at isolation=latest: status %d, items %+v; want k", code, a.Items)
	}
	if code, a := get(base + "/scan?isolation=committed"); code != http.StatusOK || len(a.Items) != 0 {
		t.Errorf("scan at isolation=committed before any commit: status %d, items %+v; want none", code, a.Items)
	}
	// Nothing was committed: what latest showed was not yet durable.
	if o := committedOffset(); o > 0 {
		t.Fatalf("the group committed offset %d during the test; the one-hour interval should have committed nothing", o)
	}

	stop() // the shutdown commits
	if o := committedOffset(); o != records {
		t.Fatalf("committed offset after the shutdown %d, want %d", o, records)
	}
	base, _ = start()
	kafkatest.Eventually(t, time.Minute, "k's count of 5 at isolation=committed after the commit", func() bool {
		code, a := get(base + "/keys/k?isolation=committed")
		return code == http.StatusOK && a.Value == float64(records)
	})
}

// getJSON GETs url and decodes a 200 answer into into; it returns the
// status, 0 when the request failed (the server not listening yet).
func getJSON(t *testing.T, url string, into any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && json.Unmarshal(b, into) != nil {
		t.Fatalf("GET %s: %s", url, b)
	}
	return resp.StatusCode
}
