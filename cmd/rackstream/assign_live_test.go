package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/service"
	"github.com/rackstream/rackstream/tags"
)

// TestAssignReplaysALiveMetadataDocumentToTheSamePlacement: the
// /v1/metadata of a running group, settled, given to `rackstream assign`,
// gives back the very placement the group runs, with the same quality,
// replanned with the settings the leader used (the instances' own differ).
// The
// group asks for more standbys than it can place (two instances, two
// standbys per task): a replan that guessed num.standby.replicas from the
// placement (one standby per task) would report no shortfall; the
// document's settings make it the group's.
func TestAssignReplaysALiveMetadataDocumentToTheSamePlacement(t *testing.T) {
	c := kafkatest.New(t)
	app, topic := c.Name("assign-live"), c.Name("assign-live-events")
	c.CreateTopic(topic, 4, nil)
	var ins []*service.Instance
	for i, zone := range []string{"a", "b"} {
		cfg, err := config.Load(config.Sources{Set: []string{
			"application.id=" + app, "bootstrap.servers=" + strings.Join(c.Brokers, ","),
			"processor.type=count", "processor.input.topic=" + topic,
			"http.listen=127.0.0.1:0", "state.dir=" + t.TempDir(),
			"num.standby.replicas=2", "client.tag.zone=" + zone, "rack.aware.assignment.tags=zone",
			"acceptable.recovery.lag=" + strconv.Itoa(500+100*i), "max.warmup.replicas=1", "num.stream.threads=2",
			"session.timeout.ms=3000", "commit.interval.ms=200", "shutdown.timeout.ms=5000",
		}})
		if err != nil {
			t.Fatal(err)
		}
		in, err := service.New(service.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- in.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
		ins = append(ins, in)
	}

	var body []byte
	var doc assignor.Metadata
	var settings []*assignor.MetadataSettings
	start := time.Now()
	kafkatest.Eventually(t, 2*time.Minute, "a settled placement of both instances", func() bool {
		gens := map[int32]bool{}
		settings = settings[:0]
		for _, in := range ins {
			resp, err := cluster.HTTPClient.Get("http://" + in.Addr().String() + "/v1/metadata")
			if err != nil {
				return false
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			var d assignor.Metadata
			if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(b, &d) != nil {
				return false
			}
			if len(d.Clients) != 2 || d.ProbingRebalanceNeeded {
				return false
			}
			for _, tp := range d.Tasks {
				if tp.Active == "" || len(tp.Standby) != 1 || len(tp.Warmup) != 0 {
					return false
				}
			}
			for _, cs := range d.Status.Clients {
				if !cs.Ready {
					return false
				}
			}
			gens[d.Generation] = true
			body, doc = b, d
			settings = append(settings, d.Settings)
		}
		return len(gens) == 1
	})
	t.Logf("settled in %v at generation %d", time.Since(start), doc.Generation)
	// The instances' acceptable.recovery.lag differ (500 and 600): both
	// documents show the leader's.
	if s := doc.Settings; s == nil || s.Source != assignor.SettingsFromLeader || s.NumStandbyReplicas != 2 ||
		s.AcceptableRecoveryLag != 500 && s.AcceptableRecoveryLag != 600 || s.MaxWarmupReplicas != 1 ||
		!reflect.DeepEqual(s.RackAwareAssignmentTags, tags.Keys{"zone"}) || !reflect.DeepEqual(settings[0], settings[1]) {
		t.Fatalf("the documents' settings are %+v and %+v; want the leader's on both", settings[0], settings[1])
	}

	replay := func(doc []byte) assignor.Plan {
		t.Helper()
		code, out, errs := runCLI(t, string(doc))
		if code != 0 {
			t.Fatalf("assign exit %d: %s", code, errs)
		}
		var p assignor.Plan
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := replay(body)
	if !reflect.DeepEqual(p.Tasks, doc.Tasks) {
		t.Errorf("replayed tasks %+v, live %+v", p.Tasks, doc.Tasks)
	}
	for _, pc := range p.Clients {
		for _, dc := range doc.Clients {
			if pc.ID == dc.ID && (!reflect.DeepEqual(pc.Active, dc.Active) || !reflect.DeepEqual(pc.Standby, dc.Standby) || !reflect.DeepEqual(pc.Warmup, dc.Warmup)) {
				t.Errorf("client %s: replayed %v/%v/%v, live %v/%v/%v", pc.ID, pc.Active, pc.Standby, pc.Warmup, dc.Active, dc.Standby, dc.Warmup)
			}
		}
	}
	if p.ProbingRebalanceNeeded || !reflect.DeepEqual(p.Quality, doc.Quality) {
		t.Errorf("replayed quality %+v (probing %v), live %+v", p.Quality, p.ProbingRebalanceNeeded, doc.Quality)
	}
	if doc.Quality.StandbyShortfall != 4 {
		t.Errorf("live standby shortfall %d, want 4 (4 tasks, 1 of 2 standbys each)", doc.Quality.StandbyShortfall)
	}

	// The same document without its settings: the guess of one standby
	// per task hides the shortfall.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	delete(raw, "settings")
	guessed, _ := json.Marshal(raw)
	if g := replay(guessed); g.Quality.StandbyShortfall != 0 {
		t.Errorf("without settings the replay's shortfall is %d; the test no longer shows what the settings are for", g.Quality.StandbyShortfall)
	}
}
