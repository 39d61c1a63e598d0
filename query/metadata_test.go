package query

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/tags"
)

func TestMetadataPlacementIsIdenticalOnEveryInstance(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	var first map[string]any
	for _, n := range c.nodes {
		a := c.get(n, "/v1/metadata")
		if a.code != http.StatusOK {
			t.Fatalf("%s: %s", n.id, a)
		}
		if a.json["self"] != n.id {
			t.Errorf("self = %v, want %s", a.json["self"], n.id)
		}
		delete(a.json, "self")
		delete(a.json, "status")
		if first == nil {
			first = a.json
		} else if !reflect.DeepEqual(first, a.json) {
			t.Errorf("placement via %s differs:\n%v\n%v", n.id, a.json, first)
		}
	}
	want := map[string]any{
		"generation": 7.0, "partitioner": "murmur2", "partitions": 6.0, "probing_rebalance_needed": false,
		"clients": []any{
			map[string]any{"id": "n1", "endpoint": c.p.Members[0].Endpoint, "tags": map[string]any{"zone": "z1"}, "capacity": 1.0,
				"active": []any{0.0, 3.0}, "standby": []any{2.0, 5.0}, "warmup": []any{}},
			map[string]any{"id": "n2", "endpoint": c.p.Members[1].Endpoint, "tags": map[string]any{"zone": "z2"}, "capacity": 1.0,
				"active": []any{1.0, 4.0}, "standby": []any{0.0, 3.0}, "warmup": []any{}},
			map[string]any{"id": "n3", "endpoint": c.p.Members[2].Endpoint, "tags": map[string]any{"zone": "z3"}, "capacity": 1.0,
				"active": []any{2.0, 5.0}, "standby": []any{1.0, 4.0}, "warmup": []any{}},
		},
	}
	for k, v := range want {
		if !reflect.DeepEqual(first[k], v) {
			t.Errorf("%s = %v, want %v", k, first[k], v)
		}
	}
	task0 := first["tasks"].([]any)[0]
	if !reflect.DeepEqual(task0, map[string]any{"task": 0.0, "active": "n1", "standby": []any{"n2"}, "warmup": []any{}}) {
		t.Errorf("tasks[0] = %v", task0)
	}
	q := first["quality"].(map[string]any)
	if dims := q["dimensions"].([]any); len(dims) != 1 || dims[0].(map[string]any)["tag"] != "zone" {
		t.Errorf("quality = %v", q)
	}
}

func TestMetadataStatusIsGatheredLiveAndNamesUnreachablePeers(t *testing.T) {
	c := newCluster(t, clusterOpts{tweak: func(_ int, o *Options) { o.StatusTimeout = 500 * time.Millisecond }})
	streamTime := int64(42_000)
	c.nodes[0].rt.replica(storeCounts, 2).set(func(s *ReplicaStatus) { s.Lag, s.StreamTime = 12, &streamTime })
	c.nodes[0].rt.replica(storeDocs, 2).set(func(s *ReplicaStatus) { s.Lag = 30 })
	c.nodes[1].rt.mu.Lock()
	c.nodes[1].rt.err = &NotReady{Condition: "task 1 is restoring"}
	c.nodes[1].rt.mu.Unlock()
	c.nodes[2].stop()
	// A peer that accepts connections and never answers: bounded by the
	// status timeout.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	p := *c.p
	p.Members = append(p.Members[:len(p.Members):len(p.Members)], p.Members[0])
	p.Members[3].ProcessID, p.Members[3].Endpoint = "n4", silent.Addr().String()
	c.nodes[0].rt.mu.Lock()
	c.nodes[0].rt.p = &p
	c.nodes[0].rt.mu.Unlock()

	start := time.Now()
	a := c.get(c.nodes[0], "/v1/metadata")
	took := time.Since(start)
	if a.code != http.StatusOK {
		t.Fatal(a)
	}
	t.Logf("metadata with a silent peer took %v", took)
	var doc struct {
		Status struct {
			AsOf    string `json:"as_of"`
			Clients []struct {
				ID     string `json:"id"`
				Ready  bool   `json:"ready"`
				Reason string `json:"reason"`
			} `json:"clients"`
			Lags []assignor.MetadataLag `json:"lags"`
		} `json:"status"`
	}
	if err := json.Unmarshal(a.body, &doc); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339, doc.Status.AsOf); err != nil {
		t.Errorf("as_of %q: %v", doc.Status.AsOf, err)
	}
	st := doc.Status.Clients
	if len(st) != 4 || !st[0].Ready || st[1].Ready || st[1].Reason != "task 1 is restoring" ||
		st[2].Ready || st[2].Reason != "unreachable: n3 could not be reached (details in n1's log)" ||
		st[3].Ready || st[3].Reason != "unreachable: n4 did not answer within 500ms" {
		t.Errorf("status clients: %+v", st)
	}
	found := false
	for _, l := range doc.Status.Lags {
		if l.Task == 2 && l.Client == "n1" {
			found = true
			if l.Role != "standby" || l.Lag != 30 {
				t.Errorf("lag of n1 on task 2: %+v, want standby 30 (the most of its stores')", l)
			}
			if l.StreamTime == nil || *l.StreamTime != streamTime {
				t.Errorf("stream time of n1 on task 2: %v, want %d", l.StreamTime, streamTime)
			}
		}
		if l.Client == "n3" || l.Client == "n4" {
			t.Errorf("lag of an unreachable peer: %+v", l)
		}
	}
	if !found {
		t.Errorf("no lag of n1 on task 2: %+v", doc.Status.Lags)
	}
}

func TestAssignReadsTheMetadataDocument(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	a := c.get(c.nodes[0], "/v1/metadata")
	in, err := assignor.DecodeInput(a.body)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := assignor.Assign(in)
	if err != nil {
		t.Fatal(err)
	}
	// Fed back as the previous plan, the placement stays where it is.
	for i, tp := range plan.Tasks {
		if want := c.p.Members[c.p.Tasks[i].Active].ProcessID; tp.Active != want {
			t.Errorf("task %d: active %s, want %s", i, tp.Active, want)
		}
	}
}

func TestMetricsExposeRequestsByRouteAndCode(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	key := []byte("m")
	c.put(storeCounts, key, []byte("1"))
	n := c.other(key)
	c.get(n, keyPath(storeCounts, key))
	c.get(n, keyPath(storeCounts, []byte("absent-key")))
	c.get(n, "/v1/stores/nope/keys/a")
	a := c.get(n, "/metrics")
	if a.code != http.StatusOK {
		t.Fatal(a)
	}
	for _, want := range []string{
		`rackstream_http_requests_total{code="200",route="keys"} 1`,
		`rackstream_http_requests_total{code="404",route="keys"} 2`,
		`rackstream_http_request_duration_seconds_count{route="keys"} 3`,
		`rackstream_http_forwards_total{result="ok",route="keys"}`,
		`rackstream_http_forwards_in_flight 0`,
	} {
		if !strings.Contains(string(a.body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestMetadataOfALargeGroupIsBoundedByTheStatusTimeout(t *testing.T) {
	c := newCluster(t, clusterOpts{members: 2, tweak: func(_ int, o *Options) { o.StatusTimeout = 300 * time.Millisecond }})
	// 200 members that accept connections and never answer.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	p := *c.p
	p.Members = append(p.Members[:len(p.Members):len(p.Members)], make([]balancer.Member, 200)...)
	for i := 2; i < len(p.Members); i++ {
		p.Members[i] = balancer.Member{ProcessID: fmt.Sprintf("s%03d", i), Endpoint: silent.Addr().String()}
	}
	c.nodes[0].rt.mu.Lock()
	c.nodes[0].rt.p = &p
	c.nodes[0].rt.mu.Unlock()
	start := time.Now()
	a := c.get(c.nodes[0], "/v1/metadata")
	t.Logf("metadata of 202 members, 200 silent: %v", time.Since(start))
	var doc assignor.Metadata
	if err := json.Unmarshal(a.body, &doc); err != nil || a.code != 200 {
		t.Fatalf("%v: %s", err, a)
	}
	if len(doc.Status.Clients) != 202 || !doc.Status.Clients[0].Ready || !doc.Status.Clients[1].Ready {
		t.Fatalf("status of the live members: %+v", doc.Status.Clients[:2])
	}
	for _, cs := range doc.Status.Clients[2:] {
		if cs.Ready || !(strings.Contains(cs.Reason, "unreachable") || strings.Contains(cs.Reason, "not asked: no time left of the 300ms status timeout")) {
			t.Fatalf("silent member: %+v", cs)
		}
	}
	if n := forwards(t, c.nodes[0], routeMetadata, resultRejected); n != 0 {
		t.Errorf("%v status requests were refused for lack of forward slots", n)
	}
}

// TestMetadataIsTheAssignorsDocument: /v1/metadata decodes strictly into
// assignor.Metadata, the one definition of the document, and carries the
// assignment settings, which assign's decoder then uses as they are.
func TestMetadataIsTheAssignorsDocument(t *testing.T) {
	settings := &assignor.MetadataSettings{Settings: assignor.Settings{NumStandbyReplicas: 2, AcceptableRecoveryLag: 77, MaxWarmupReplicas: 3,
		RackAwareAssignmentTags: []string{"zone"}}, ProbingRebalanceIntervalMs: 60000}
	c := newCluster(t, clusterOpts{tweak: func(_ int, o *Options) { o.Settings = settings }})
	a := c.get(c.nodes[1], "/v1/metadata")
	if a.code != http.StatusOK {
		t.Fatal(a)
	}
	var doc assignor.Metadata
	dec := json.NewDecoder(strings.NewReader(string(a.body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("the document has a field assignor.Metadata does not define: %v", err)
	}
	want := *settings
	want.Source = assignor.SettingsFromInstance
	if doc.Settings == nil || !reflect.DeepEqual(*doc.Settings, want) {
		t.Errorf("settings %+v, want %+v", doc.Settings, want)
	}
	if doc.Self != "n2" || doc.Generation != 7 || len(doc.Tasks) != 6 || len(doc.Clients) != 3 || len(doc.Status.Clients) != 3 {
		t.Errorf("document %+v", doc)
	}
	in, plan, err := assignor.DecodeDocument(a.body)
	if err != nil || plan == nil {
		t.Fatalf("DecodeDocument: %v", err)
	}
	// Every task has one standby; the settings say two (a shortfall),
	// and the decoder takes the settings, not a guess from the placement.
	if in.NumStandbyReplicas != 2 || in.AcceptableRecoveryLag != 77 || in.MaxWarmupReplicas != 3 || !reflect.DeepEqual(in.RackAwareAssignmentTags, tags.Keys{"zone"}) {
		t.Errorf("decoded settings %+v", in)
	}

	// A placement that carries the leader's settings shows them, whatever
	// this instance's own; the probing interval stays its own.
	lp := *c.p
	lp.Settings = &assignor.Settings{NumStandbyReplicas: 1, AcceptableRecoveryLag: 5, MaxWarmupReplicas: 1, RackAwareAssignmentTags: tags.Keys{"zone", "rack"}}
	c.nodes[0].rt.mu.Lock()
	c.nodes[0].rt.p = &lp
	c.nodes[0].rt.mu.Unlock()
	a = c.get(c.nodes[0], "/v1/metadata")
	var led assignor.Metadata
	if err := json.Unmarshal(a.body, &led); err != nil {
		t.Fatal(err)
	}
	leader := assignor.MetadataSettings{Source: assignor.SettingsFromLeader, Settings: assignor.Settings{NumStandbyReplicas: 1, AcceptableRecoveryLag: 5, MaxWarmupReplicas: 1,
		RackAwareAssignmentTags: []string{"zone", "rack"}}, ProbingRebalanceIntervalMs: 60000}
	if led.Settings == nil || !reflect.DeepEqual(*led.Settings, leader) {
		t.Errorf("settings of a placement with the leader's: %+v, want %+v", led.Settings, leader)
	}

	// Without settings (an instance that knows none) the field is absent.
	c = newCluster(t, clusterOpts{members: 1})
	if a := c.get(c.nodes[0], "/v1/metadata"); a.code != 200 || a.json["settings"] != nil {
		t.Errorf("no settings: %s", a)
	}
}
