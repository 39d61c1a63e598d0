package service

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// TestAWindowedCountIsQueriedByTime runs the built-in windowed count with
// record times from a JSON field, and reads its windows over HTTP at both
// isolations: a key's, and every key's in pages.
func TestAWindowedCountIsQueriedByTime(t *testing.T) {
	c := kafkatest.New(t)
	in, app := c.Name("win-in"), c.Name("win")
	c.CreateTopic(in, 2, nil)
	cfg := load(t, "application.id="+app, "bootstrap.servers="+strings.Join(c.Brokers, ","),
		"processor.type=count", "processor.input.topic="+in, "processor.timestamp.field=ts",
		"processor.window.type=tumbling", "processor.window.size.ms=60000", "processor.window.retention.ms=86400000",
		"commit.interval.ms=100", "session.timeout.ms=6000", "replication.factor=1")
	inst, err := New(Options{Config: cfg, Logger: quiet, ClientOpts: c.ClientOpts()})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + inst.Addr().String() + "/v1/stores/count"
	runInstance(t, inst)
	for _, r := range []struct {
		key string
		ts  string
	}{{"b", "3000"}, {"a", "1000"}, {"a", "2000"}, {"a", "61000"}} { // b first: it may share a's task, whose window [0, 60000) a's last record closes
		c.Produce(&kgo.Record{Topic: in, Key: []byte(r.key), Value: []byte(`{"ts": ` + r.ts + `}`)})
	}
	type window struct {
		Key   string `json:"key"`
		Start int64  `json:"start"`
		End   int64  `json:"end"`
		Value int64  `json:"value"`
	}
	var a struct {
		Windows  []window `json:"windows"`
		Role     string   `json:"role"`
		Position int64    `json:"position"`
	}
	for _, iso := range []string{"latest", "committed"} {
		kafkatest.Eventually(t, time.Minute, "a's two windows at isolation="+iso, func() bool {
			return getJSON(t, base+"/windows/a?time_from=0&time_to=120000&isolation="+iso, &a) == http.StatusOK && len(a.Windows) == 2
		})
		if w := a.Windows; w[0] != (window{Start: 0, End: 60000, Value: 2}) || w[1] != (window{Start: 60000, End: 120000, Value: 1}) || a.Role != "active" {
			t.Errorf("a's windows at isolation=%s: %+v (role %s)", iso, w, a.Role)
		}
	}
	var page struct {
		Windows    []window `json:"windows"`
		NextCursor string   `json:"next_cursor"`
	}
	kafkatest.Eventually(t, time.Minute, "two windows starting in [0, 59999]", func() bool {
		return getJSON(t, base+"/windows?time_from=0&time_to=59999&isolation=committed", &page) == http.StatusOK && len(page.Windows) == 2
	})
	if code := getJSON(t, base+"/windows?time_from=0&time_to=59999&limit=1", &page); code != http.StatusOK || len(page.Windows) != 1 || page.NextCursor == "" {
		t.Fatalf("first page: status %d, %+v", code, page)
	}
	first, cursor := page.Windows[0], page.NextCursor
	page.NextCursor = "" // absent on the last page: not decoded over
	if code := getJSON(t, base+"/windows?time_from=0&time_to=59999&limit=1&cursor="+cursor, &page); code != http.StatusOK || len(page.Windows) != 1 || page.NextCursor != "" {
		t.Fatalf("second page: status %d, %+v", code, page)
	}
	if got := []window{first, page.Windows[0]}; got[0] != (window{Key: "a", End: 60000, Value: 2}) || got[1] != (window{Key: "b", End: 60000, Value: 1}) {
		t.Errorf("every key's windows starting in [0, 59999]: %+v", got)
	}
	if code := getJSON(t, base+"/keys/a", &a); code != http.StatusBadRequest {
		t.Errorf("a key lookup of the window store: status %d, want 400", code)
	}
}
