package query_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/internal/cutdial"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/query"
	"github.com/rackstream/rackstream/service"
)

// These tests run the query server in front of the real processor runtime
// (service, the built-in count processor), several instances in
// one process, against kfake or the real broker (RACKSTREAM_TEST_BROKERS).

const itToken = "it-token"

type instance struct {
	name   string
	svc    *service.Instance
	base   string
	client *http.Client    // nil: itClient
	dialer *cutdial.Dialer // cut: killed
	cancel context.CancelFunc
	done   chan error
}

func startInstance(t *testing.T, c *kafkatest.Cluster, app, topic, zone string, extra ...string) *instance {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.Sources{Set: append([]string{
		"application.id=" + app,
		"bootstrap.servers=" + strings.Join(c.Brokers, ","),
		"processor.type=count",
		"processor.input.topic=" + topic,
		"num.standby.replicas=1",
		"client.tag.zone=" + zone,
		"rack.aware.assignment.tags=zone",
		"application.server=" + ln.Addr().String(),
		"state.dir=" + filepath.Join(t.TempDir(), "state"),
		"commit.interval.ms=100",
		"session.timeout.ms=3000",
		"shutdown.timeout.ms=10000",
		"http.auth.token=" + itToken,
	}, extra...)})
	if err != nil {
		t.Fatal(err)
	}
	d := new(cutdial.Dialer)
	svc, err := service.New(service.Options{
		Config:     cfg,
		Logger:     slog.New(slog.DiscardHandler),
		Listener:   ln,
		ClientOpts: []kgo.Opt{kgo.Dialer(d.Dial)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{name: zone, svc: svc, base: "http://" + ln.Addr().String(), dialer: d, cancel: cancel, done: make(chan error, 1)}
	go func() { in.done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-in.done:
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop", in.name)
		}
	})
	return in
}

// kill crashes the instance as far as the group can tell.
// It returns once the instance's HTTP server is closed too: Abort closes it
// from Run's goroutine, which a loaded machine may run a little later, and
// until then a peer's forward could still reach it.
func (in *instance) kill(t *testing.T) {
	in.dialer.Cut()
	in.svc.Abort()
	kafkatest.Eventually(t, 30*time.Second, in.name+"'s HTTP server closed", func() bool {
		return get(t, in, "/healthz", "").code == -1
	})
}

type reply struct {
	code   int
	header http.Header
	body   map[string]any
	raw    string
}

func (r reply) String() string { return fmt.Sprintf("%d %s", r.code, strings.TrimSpace(r.raw)) }

var itClient = &http.Client{Timeout: 20 * time.Second}

func get(t *testing.T, in *instance, path, token string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, in.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := in.client
	if client == nil {
		client = itClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return reply{code: -1, raw: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{code: resp.StatusCode, header: resp.Header, raw: string(b)}
	_ = json.Unmarshal(b, &r.body)
	return r
}

func TestQueriesThroughTheRuntime(t *testing.T) {
	c := kafkatest.New(t)
	app, topic := c.Name("query-it"), c.Name("query-it-events")
	const partitions = 6
	c.CreateTopic(topic, partitions, nil)
	want := map[string]int64{}
	var recs []*kgo.Record
	for i := range 40 {
		k := fmt.Sprintf("user-%02d", i)
		for range i%4 + 1 {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte("x")})
			want[k]++
		}
	}
	c.Produce(recs...)
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	ins := []*instance{
		startInstance(t, c, app, topic, "z1"),
		startInstance(t, c, app, topic, "z2"),
		startInstance(t, c, app, topic, "z3"),
	}
	// Every instance ready, in one generation that places all three, with
	// every task's active and standby. (Not necessarily balanced: a member
	// that joins late gets standbys first, and actives after a probing
	// rebalance.)
	kafkatest.Eventually(t, 2*time.Minute, "three instances ready in one placement", func() bool {
		var gen float64 = -1
		for _, in := range ins {
			if r := get(t, in, "/readyz", ""); r.code != 200 {
				return false
			}
			r := get(t, in, "/v1/metadata", itToken)
			if r.code != 200 || len(r.body["clients"].([]any)) != 3 {
				return false
			}

			for _, tk := range r.body["tasks"].([]any) {
				tm := tk.(map[string]any)
				if tm["active"] == "" || len(tm["standby"].([]any)) != 1 {
					return false
				}
			}
			for _, cs := range r.body["status"].(map[string]any)["clients"].([]any) {
				if cs.(map[string]any)["ready"] != true {
					return false
				}
			}
			if g := r.body["generation"].(float64); gen >= 0 && g != gen {
				return false
			} else {
				gen = g
			}
		}
		return true
	})

	t.Run("every key reads the same through every instance", func(t *testing.T) {
		kafkatest.Eventually(t, time.Minute, "every count through every instance", func() bool {
			for _, k := range keys {
				var servedBy any
				for _, in := range ins {
					r := get(t, in, "/v1/stores/count/keys/"+k, itToken)
					if r.code != 200 || r.body["value"] != float64(want[k]) || r.body["role"] != "active" {
						return false
					}
					if servedBy != nil && r.body["served_by"] != servedBy {
						return false // the task moved between two reads: read again
					}
					servedBy = r.body["served_by"]
				}
			}
			return true
		})
	})

	t.Run("min_position refuses a replica behind it", func(t *testing.T) {
		// A latest read sees a processed value before its commit, and its
		// position is the store's checkpoint: wait for the first commit
		// to give the key a position to ask for.
		var r reply
		var pos float64
		kafkatest.Eventually(t, time.Minute, "user-03 read with a position of at least 1", func() bool {
			r = get(t, ins[0], "/v1/stores/count/keys/user-03", itToken)
			pos, _ = r.body["position"].(float64)
			return r.code == 200 && pos >= 1
		})
		if r := get(t, ins[0], fmt.Sprintf("/v1/stores/count/keys/user-03?min_position=%d", int64(pos)), itToken); r.code != 200 {
			t.Errorf("min_position at the position: %s", r)
		}
		r = get(t, ins[1], fmt.Sprintf("/v1/stores/count/keys/user-03?max_lag=1000000&min_position=%d", int64(pos)+1000), itToken)
		if r.code != http.StatusConflict || !strings.Contains(r.raw, "behind min_position") {
			t.Errorf("min_position ahead of every replica: %s", r)
		}
	})

	t.Run("scan returns every key once across pages", func(t *testing.T) {
		for _, in := range ins {
			var got []string
			cursor := ""
			for pages := 0; ; pages++ {
				q := "limit=7"
				if cursor != "" {
					q += "&cursor=" + url.QueryEscape(cursor)
				}
				var r reply
				kafkatest.Eventually(t, time.Minute, fmt.Sprintf("scan page %d", pages+1), func() bool {
					// 503 while a task moves (a probing rebalance): ask again.
					r = get(t, in, "/v1/stores/count/scan?"+q, itToken)
					return r.code != http.StatusServiceUnavailable
				})
				if r.code != 200 {
					t.Fatalf("page %d: %s", pages+1, r)
				}
				for _, it := range r.body["items"].([]any) {
					m := it.(map[string]any)
					k := m["key"].(string)
					if m["value"] != float64(want[k]) {
						t.Errorf("%s = %v, want %d", k, m["value"], want[k])
					}
					got = append(got, k)
				}
				cursor, _ = r.body["next_cursor"].(string)
				if cursor == "" {
					break
				}
			}
			if !slices.Equal(got, keys) {
				t.Errorf("via %s: got %v, want %v", in.name, got, keys)
			}
		}
	})

	t.Run("bad input and tokens", func(t *testing.T) {
		for _, tc := range []struct {
			path, token string
			code        int
			msg         string
		}{
			{"/v1/stores/count/keys/user-01", "", 401, "missing bearer token"},
			{"/v1/stores/count/keys/user-01", "wrong", 401, "wrong bearer token"},
			{"/metrics", "", 401, "missing bearer token"},
			{"/v1/stores/nope/keys/user-01", itToken, 404, `unknown store "nope" (stores: count)`},
			{"/v1/stores/count/keys/nobody", itToken, 404, `key "nobody" not found in store count`},
			{"/v1/stores/count/keys/user-01?max_lag=x", itToken, 400, `max_lag "x"`},
			{"/v1/stores/count/scan?limit=0", itToken, 400, "limit"},
		} {
			r := get(t, ins[2], tc.path, tc.token)
			if msg, _ := r.body["error"].(string); r.code != tc.code || !strings.Contains(msg, tc.msg) {
				t.Errorf("%s (token %q): %s, want %d %q", tc.path, tc.token, r, tc.code, tc.msg)
			}
		}
	})

	t.Run("metrics", func(t *testing.T) {
		names := []string{
			"rackstream_process_records_total", "rackstream_process_latency_seconds",
			"rackstream_consumer_lag_records", "rackstream_commit_latency_seconds", "rackstream_commit_failures_total",
			"rackstream_state_restore_remaining_records", "rackstream_state_restored_records_total",
			"rackstream_state_lag_records", "rackstream_rebalances_total", "rackstream_rebalance_duration_seconds",
			"rackstream_tasks", "rackstream_client_rebuilds_total",
			"rackstream_http_requests_total", "rackstream_http_request_duration_seconds",
		}
		// Series appear as the runtime records them (consumer lag after a
		// fetch, restored records after a restore that read some, on any
		// instance): poll, then name what is missing.
		var missing []string
		deadline := time.Now().Add(30 * time.Second)
		for {
			var all strings.Builder
			for _, in := range ins {
				all.WriteString(get(t, in, "/metrics", itToken).raw)
			}
			missing = missing[:0]
			for _, name := range names {
				if !strings.Contains(all.String(), "\n"+name) {
					missing = append(missing, name)
				}
			}
			if len(missing) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond) // polling interval, not synchronisation
		}
		if len(missing) > 0 {
			t.Errorf("/metrics lacks %v", missing)
		}
	})

	t.Run("owner killed: standby with max_lag, else 503 until the new owner is ready", func(t *testing.T) {
		// A key, asked through the instance that holds no replica of its
		// task: it must forward either way.
		ids := map[string]*instance{}
		for _, in := range ins {
			ids[get(t, in, "/v1/status", itToken).body["id"].(string)] = in
		}
		key := keys[0]
		task := partition.Murmur2().Partition([]byte(key), partitions)
		var (
			victim, standby, other *instance
			standbyID, killedID    any
		)
		// Before the kill, the input is committed (else the next owner
		// counts its records again) and the key's standby holds what its
		// active committed: its position at the changelog's end, read
		// after the input's commit, whose changelog records were
		// acknowledged before it. A standby's lag cannot say so: it counts
		// from the last end the standby fetched.
		adm := c.Admin()
		kafkatest.Eventually(t, time.Minute, "the input committed and "+key+"'s standby at the end of its changelog", func() bool {
			offsets, err := adm.FetchOffsets(t.Context(), app)
			if err != nil || offsets.Error() != nil {
				return false
			}
			for p, end := range c.EndOffsets(topic) {
				if o, ok := offsets.Lookup(topic, p); !ok || o.At < end {
					return false
				}
			}
			end := c.EndOffsets(app + "-count-changelog")[task]
			md := get(t, ins[1], "/v1/metadata", itToken)
			if md.code != 200 {
				return false
			}
			tk := md.body["tasks"].([]any)[task].(map[string]any)
			victim, standby = ids[tk["active"].(string)], ids[tk["standby"].([]any)[0].(string)]
			standbyID, killedID = tk["standby"].([]any)[0], tk["active"]
			var st struct {
				Replicas []query.ReplicaStatus `json:"replicas"`
			}
			if r := get(t, standby, "/v1/status", itToken); r.code != 200 || json.Unmarshal([]byte(r.raw), &st) != nil {
				return false
			}
			for _, rs := range st.Replicas {
				if rs.Store == "count" && rs.Task == task && rs.Role == query.RoleStandby && rs.Position >= end {
					return true
				}
			}
			return false
		})
		for _, in := range ins {
			if in != victim && in != standby {
				other = in
			}
		}
		victim.kill(t)

		// Within the session timeout the placement still names the killed
		// owner: without max_lag, 503; with it, the standby answers.
		r := get(t, other, "/v1/stores/count/keys/"+key, itToken)
		if r.code != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
			t.Errorf("owner just killed, no max_lag: %s", r)
		}
		kafkatest.Eventually(t, time.Minute, "an answer with max_lag", func() bool {
			r := get(t, other, "/v1/stores/count/keys/"+key+"?max_lag=1000", itToken)
			if r.code != 200 {
				return false
			}
			if r.body["role"] == "standby" {
				// The standby named before the kill, unless a rebalance
				// (a probing one, placing the last joiner's actives) moved
				// it between the metadata read and the kill.
				if r.body["served_by"] == killedID || r.body["lag"].(float64) > 1000 || r.body["value"] != float64(want[key]) {
					t.Errorf("standby answer %s", r)
				}
				if r.body["served_by"] != standbyID {
					t.Logf("the standby answering is not the one named before the kill (%v): the placement changed meanwhile", standbyID)
				}
			} else {
				t.Errorf("the answer with max_lag after the kill came from the %v, not the standby: %s", r.body["role"], r)
			}
			return true
		})
		kafkatest.Eventually(t, 2*time.Minute, "the new owner answers", func() bool {
			r := get(t, other, "/v1/stores/count/keys/"+key, itToken)
			switch r.code {
			case 503:
				if r.header.Get("Retry-After") == "" {
					t.Errorf("503 without Retry-After: %s", r)
				}
			case 200:
				if r.body["role"] != "active" || r.body["served_by"] == killedID || r.body["value"] != float64(want[key]) {
					t.Errorf("after failover: %s", r)
				}
				return true
			default:
				t.Errorf("unexpected answer %s", r)
			}
			return false
		})
	})
}

// Over mutual TLS (http.tls.client.auth=require): clients and instances
// alike present certificates of the one CA.
func TestQueriesOverTLSThroughTheRuntime(t *testing.T) {
	c := kafkatest.New(t)
	app, topic := c.Name("query-tls"), c.Name("query-tls-events")
	const partitions = 4
	c.CreateTopic(topic, partitions, nil)
	var recs []*kgo.Record
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%02d", i)
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(keys[i]), Value: []byte("x")})
	}
	c.Produce(recs...)
	ca := query.NewTestCA(t, "rackstream-test-ca")
	clientCert := ca.Leaf(t, 99)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{clientCert}}}}
	var ins []*instance
	for i, zone := range []string{"z1", "z2"} {
		cert, key, caFile := ca.WriteFiles(t, t.TempDir(), int64(i+2))
		in := startInstance(t, c, app, topic, zone, "http.tls.cert="+cert, "http.tls.key="+key, "http.tls.ca="+caFile,
			"http.tls.client.auth=require", "http.tls.client.ca="+caFile)
		in.base, in.client = strings.Replace(in.base, "http://", "https://", 1), client
		ins = append(ins, in)
	}
	var last reply
	defer func() {
		if t.Failed() {
			t.Logf("last metadata: %s", last)
		}
	}()
	kafkatest.Eventually(t, 2*time.Minute, "both instances in the placement, every task active", func() bool {
		for _, in := range ins {
			r := get(t, in, "/v1/metadata", itToken)
			last = r
			if r.code != 200 || len(r.body["clients"].([]any)) != 2 {
				return false
			}
			for _, tk := range r.body["tasks"].([]any) {
				if tk.(map[string]any)["active"] == "" {
					return false
				}
			}
		}
		return true
	})
	// Through the instance that is not a key's active, the lookup is
	// forwarded over HTTPS, verified against http.tls.ca, presenting the
	// instance's certificate, signed with a key derived from the token.
	kafkatest.Eventually(t, time.Minute, "every key through both instances over HTTPS", func() bool {
		for _, k := range keys {
			for _, in := range ins {
				if r := get(t, in, "/v1/stores/count/keys/"+k, itToken); r.code != 200 || r.body["value"] != float64(1) {
					return false
				}
			}
		}
		return true
	})
	if r := get(t, ins[0], "/v1/stores/count/scan?limit=3", itToken); r.code != 200 {
		t.Errorf("scan over HTTPS: %s", r)
	}
	forwarded := 0.0
	for _, in := range ins {
		m, err := in.svc.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range m {
			if mf.GetName() == "rackstream_http_forwards_total" {
				for _, s := range mf.GetMetric() {
					for _, l := range s.GetLabel() {
						if l.GetName() == "result" && l.GetValue() == "ok" {
							forwarded += s.GetCounter().GetValue()
						}
					}
				}
			}
		}
	}
	if forwarded < float64(len(keys)) {
		t.Errorf("%v lookups forwarded over HTTPS, want at least %d", forwarded, len(keys))
	}
	// Plain HTTP is not served.
	plain := &instance{base: strings.Replace(ins[0].base, "https://", "http://", 1)}
	if r := get(t, plain, "/healthz", ""); r.code == 200 {
		t.Errorf("plain HTTP answered: %s", r)
	}
	// A client without a certificate fails the handshake.
	anon := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	if resp, err := anon.Get(ins[0].base + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("a client without a certificate got %d", resp.StatusCode)
	}
}
