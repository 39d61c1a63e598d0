package client

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/partition"
)

// fakeCluster is a few HTTP servers that speak the query API's routes with
// a placement the test controls: enough to see where the client sends each
// request. Every instance answers keys as if it held them.
type fakeCluster struct {
	t         *testing.T
	mu        sync.Mutex // guards md
	md        assignor.Metadata
	servers   map[string]*httptest.Server // by process id
	keys      map[string]*atomic.Int64    // key requests, by process id
	metadatas atomic.Int64
	// answer, when set, overrides an instance's key answer.
	answer func(id string, w http.ResponseWriter, r *http.Request) bool
	token  string
	tls    bool
}

func newFakeCluster(t *testing.T, tlsOn bool, token string, tasks int, ids ...string) *fakeCluster {
	f := &fakeCluster{t: t, servers: map[string]*httptest.Server{}, keys: map[string]*atomic.Int64{}, token: token, tls: tlsOn}
	f.md = assignor.Metadata{Generation: 1, Partitioner: "murmur2", Partitions: tasks}
	for _, id := range ids {
		var srv *httptest.Server
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.serve(id, w, r) })
		if tlsOn {
			srv = httptest.NewTLSServer(h)
		} else {
			srv = httptest.NewServer(h)
		}
		t.Cleanup(srv.Close)
		f.servers[id] = srv
		f.keys[id] = new(atomic.Int64)
		f.md.Clients = append(f.md.Clients, assignor.MetadataClient{ID: id, Endpoint: srv.Listener.Addr().String()})
	}
	// Task i: active ids[i%n], standby ids[(i+1)%n].
	for i := range tasks {
		f.md.Tasks = append(f.md.Tasks, assignor.TaskPlacement{Task: i, Active: ids[i%len(ids)], Standby: []string{ids[(i+1)%len(ids)]}})
	}
	return f
}

func (f *fakeCluster) endpoint(id string) string { return f.servers[id].Listener.Addr().String() }

func (f *fakeCluster) serve(id string, w http.ResponseWriter, r *http.Request) {
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"missing bearer token"}`)
		return
	}
	f.mu.Lock()
	md := f.md
	f.mu.Unlock()
	switch {
	case r.URL.Path == "/v1/metadata":
		f.metadatas.Add(1)
		json.NewEncoder(w).Encode(md)
	case strings.HasPrefix(r.URL.Path, "/v1/stores/counts/keys/"):
		f.keys[id].Add(1)
		if f.answer != nil && f.answer(id, w, r) {
			return
		}
		key, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(r.URL.Path, "/v1/stores/counts/keys/"))
		task := partition.Murmur2().Partition(key, int32(md.Partitions))
		role := "active"
		if md.Tasks[task].Active != id {
			role = "standby"
		}
		json.NewEncoder(w).Encode(map[string]any{"key": base64.RawURLEncoding.EncodeToString(key), "value": len(key),
			"task": task, "served_by": id, "role": role, "lag": 0, "position": 7, "generation": md.Generation})
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":"unknown store %q"}`, r.URL.Path)
	}
}

// client returns a client of f with o, its endpoints after one of f's.
func (f *fakeCluster) client(o Options) *Client {
	f.t.Helper()
	var first string
	for _, in := range f.md.Clients {
		first = in.Endpoint
		break
	}
	o.Endpoints = append([]string{first}, o.Endpoints...)
	c, err := New(o)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(c.Close)
	return c
}

func (f *fakeCluster) activeOf(key string) string {
	return f.md.Tasks[partition.Murmur2().Partition([]byte(key), int32(f.md.Partitions))].Active
}

func TestGetAsksTheKeysActiveDirectly(t *testing.T) {
	f := newFakeCluster(t, false, "", 6, "a", "b", "c")
	c := f.client(Options{})
	for i := range 30 {
		key := fmt.Sprintf("user-%d", i)
		before := map[string]int64{}
		for id, n := range f.keys {
			before[id] = n.Load()
		}
		v, err := c.Get(t.Context(), "counts", []byte(key))
		if err != nil {
			t.Fatal(err)
		}
		owner := f.activeOf(key)
		if v.ServedBy != owner || v.Role != "active" || string(v.Key) != key {
			t.Errorf("%s answered by %s (%s), key %q; want the active %s", key, v.ServedBy, v.Role, v.Key, owner)
		}
		for id, n := range f.keys {
			if want := before[id] + map[bool]int64{true: 1}[id == owner]; n.Load() != want {
				t.Errorf("%s: instance %s got %d key requests, want %d (only the owner is asked)", key, id, n.Load()-before[id], want-before[id])
			}
		}
	}
	if n := f.metadatas.Load(); n != 1 {
		t.Errorf("%d metadata reads for a stable placement, want 1", n)
	}
}

func TestGetFallsBackToAStandbyWithinMaxLagWhenTheActiveIsDown(t *testing.T) {
	f := newFakeCluster(t, false, "", 3, "a", "b", "c")
	c := f.client(Options{Endpoints: []string{f.endpoint("b")}}) // "a" is about to go
	key := "k"
	for f.activeOf(key) != "a" {
		key += "k"
	}
	if _, err := c.Metadata(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.servers["a"].Close()

	_, err := c.Get(t.Context(), "counts", []byte(key))
	var e *Error
	if !errors.As(err, &e) || e.Instance != "a" || e.Status != 0 || !strings.Contains(err.Error(), "GET /v1/stores/counts/keys/") {
		t.Fatalf("Get without MaxLag with the active down: %v; want an *Error naming instance a and the request", err)
	}
	v, err := c.Get(t.Context(), "counts", []byte(key), ReadMaxLag(100))
	if err != nil {
		t.Fatal(err)
	}
	standby := f.md.Tasks[v.Task].Standby[0]
	if v.ServedBy != standby || v.Role != "standby" {
		t.Errorf("answered by %s (%s), want the standby %s", v.ServedBy, v.Role, standby)
	}
	if !strings.Contains(string(v.Raw), fmt.Sprint(len(key))) {
		t.Errorf("value %s", v.Raw)
	}
}

func TestANewerGenerationOrAForwardedAnswerRefreshesThePlacement(t *testing.T) {
	f := newFakeCluster(t, false, "", 6, "a", "b", "c")
	c := f.client(Options{})
	if _, err := c.Get(t.Context(), "counts", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// A rebalance: task placement rotates, generation 2.
	f.mu.Lock()
	f.md.Generation = 2
	for i := range f.md.Tasks {
		f.md.Tasks[i].Active, f.md.Tasks[i].Standby[0] = f.md.Tasks[i].Standby[0], f.md.Tasks[i].Active
	}
	f.mu.Unlock()
	reads := f.metadatas.Load()
	if _, err := c.Get(t.Context(), "counts", []byte("x")); err != nil { // answered at generation 2
		t.Fatal(err)
	}
	if got := f.metadatas.Load(); got != reads {
		t.Fatalf("metadata read before any sign of a change")
	}
	v, err := c.Get(t.Context(), "counts", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if f.metadatas.Load() != reads+1 || c.Generation() != 2 || v.ServedBy != f.activeOf("x") {
		t.Errorf("after an answer at generation 2: %d metadata reads (want 1), generation %d, served by %s (want %s)",
			f.metadatas.Load()-reads, c.Generation(), v.ServedBy, f.activeOf("x"))
	}

	// An instance that forwarded (served_by is not who we asked) means the
	// placement moved too.
	f.answer = func(id string, w http.ResponseWriter, r *http.Request) bool {
		json.NewEncoder(w).Encode(map[string]any{"value": 1, "served_by": "elsewhere", "role": "active", "generation": 2})
		return true
	}
	reads = f.metadatas.Load()
	c.Get(t.Context(), "counts", []byte("x"))
	c.Get(t.Context(), "counts", []byte("x"))
	if f.metadatas.Load() != reads+1 {
		t.Errorf("a forwarded answer caused %d metadata reads, want 1", f.metadatas.Load()-reads)
	}
}

func TestNotFoundAndUnknownStoreAreTold(t *testing.T) {
	f := newFakeCluster(t, false, "", 2, "a")
	f.answer = func(id string, w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"key \"x\" not found in store counts (task 1)","code":"key_not_found","instance":"a"}`)
		return true
	}
	c := f.client(Options{})
	_, err := c.Get(t.Context(), "counts", []byte("x"))
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("absent key: %v, want ErrNotFound", err)
	}
	_, err = c.Get(t.Context(), "nope", []byte("x"))
	var e *Error
	if errors.Is(err, ErrNotFound) || !errors.As(err, &e) || e.Status != 404 || !strings.Contains(e.Message, "unknown store") {
		t.Errorf("unknown store: %v, want a 404 *Error that is not ErrNotFound", err)
	}
}

func TestErrorBodiesDecodeInEveryShape(t *testing.T) {
	for _, tc := range []struct{ body, code, msg string }{
		{`{"error":"boom"}`, "", "boom"},
		{`{"error":"boom","code":"unavailable"}`, "unavailable", "boom"},
		{`{"error":"boom","code":"unavailable","instance":"p1"}`, "unavailable", "boom"},
		{`{"code":"unavailable","message":"boom"}`, "unavailable", "boom"},
		{`{"error":{"code":"unavailable","message":"boom"}}`, "unavailable", "boom"},
		{`not json`, "", "not json"},
		{`{"other":1}`, "", `{"other":1}`},
	} {
		code, msg, _ := decodeError([]byte(tc.body))
		if code != tc.code || msg != tc.msg {
			t.Errorf("%s: code %q message %q, want %q %q", tc.body, code, msg, tc.code, tc.msg)
		}
	}
}

func TestTokenAndTLSWithACustomCA(t *testing.T) {
	f := newFakeCluster(t, true, "s3cret", 2, "a", "b")
	pool := x509.NewCertPool()
	pool.AddCert(f.servers["a"].Certificate())
	pool.AddCert(f.servers["b"].Certificate())
	c := f.client(Options{RootCAs: pool, AuthToken: "s3cret"})
	if _, err := c.Get(t.Context(), "counts", []byte("x")); err != nil {
		t.Fatalf("with the CA and the token: %v", err)
	}
	_, err := f.client(Options{RootCAs: pool, AuthToken: "wrong"}).Get(t.Context(), "counts", []byte("x"))
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusUnauthorized || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong token: %v; want a 401 *Error that does not show the token", err)
	}
	_, err = f.client(Options{AuthToken: "s3cret", RootCAs: x509.NewCertPool()}).Get(t.Context(), "counts", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted certificate: %v; want a certificate error", err)
	}
}

func TestScannerPagesWithTheCursor(t *testing.T) {
	f := newFakeCluster(t, false, "", 2, "a", "b")
	pages := map[string]string{
		"":   `{"items":[{"key":"YQ","value":1,"task":0},{"key":"Yg","value":2,"task":1}],"next_cursor":"c1","generation":1}`,
		"c1": `{"items":[{"key":"Yw","value":3,"task":0}],"generation":1}`,
	}
	var seen []string
	var mu sync.Mutex
	for _, srv := range f.servers {
		inner := srv.Config.Handler
		srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/scan") {
				inner.ServeHTTP(w, r)
				return
			}
			mu.Lock()
			seen = append(seen, r.URL.RawQuery)
			mu.Unlock()
			fmt.Fprint(w, pages[r.URL.Query().Get("cursor")])
		})
	}
	c := f.client(Options{})
	var keys []string
	var sum int
	for it, err := range c.Scanner(context.Background(), "counts", ScanRequest{Prefix: []byte("x"), Limit: 2}, ReadMaxLag(5)) {
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := it.Decode(&n); err != nil {
			t.Fatal(err)
		}
		keys, sum = append(keys, string(it.Key)), sum+n
	}
	if strings.Join(keys, ",") != "a,b,c" || sum != 6 {
		t.Errorf("scanned %v (sum %d), want a,b,c (6)", keys, sum)
	}
	if len(seen) != 2 || !strings.Contains(seen[0], "prefix=eA") || !strings.Contains(seen[0], "max_lag=5") || !strings.Contains(seen[1], "cursor=c1") {
		t.Errorf("scan requests %v", seen)
	}
}

func TestAnInstanceThatGaveNoAnswerIsAskedLast(t *testing.T) {
	f := newFakeCluster(t, false, "", 3, "a", "b", "c")
	// "a" accepts connections and drops them: no answer, as from a
	// host that is gone.
	f.answer = func(id string, w http.ResponseWriter, r *http.Request) bool {
		if id != "a" {
			return false
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return true
	}
	c := f.client(Options{Endpoints: []string{f.endpoint("b")}, MaxLag: 10})
	var keys []string
	for i := 0; len(keys) < 5; i++ {
		if k := fmt.Sprint("key-", i); f.activeOf(k) == "a" {
			keys = append(keys, k)
		}
	}
	var first int64 // requests a got on the first read (net/http may retry a dropped GET once)
	for i, key := range keys {
		v, err := c.Get(t.Context(), "counts", []byte(key))
		if err != nil {
			t.Fatal(err)
		}
		if v.ServedBy == "a" || v.Role != "standby" {
			t.Errorf("%s served by %s (%s)", key, v.ServedBy, v.Role)
		}
		if i == 0 {
			first = f.keys["a"].Load()
		} else if n := f.keys["a"].Load(); n != first {
			t.Errorf("after %d reads of a's keys, a got %d requests, want the %d of the first read only", i+1, n, first)
		}
	}
}

// TestOptionsMaxLagReadsZeroAsActivesOnly: an option's zero value is its
// default (actives only), Zero lets a caught-up standby answer, and a value
// below Zero is refused.
func TestOptionsMaxLagReadsZeroAsActivesOnly(t *testing.T) {
	for _, tc := range []struct{ opt, sent int64 }{{0, -1}, {Zero, 0}, {7, 7}} {
		if got := standbyLag(tc.opt); got != tc.sent {
			t.Errorf("MaxLag %d sends max_lag %d, want %d", tc.opt, got, tc.sent)
		}
		var rc readConfig
		ReadMaxLag(tc.opt).applyRead(&rc)
		if rc.maxLag != tc.sent {
			t.Errorf("ReadMaxLag(%d) sends max_lag %d, want %d", tc.opt, rc.maxLag, tc.sent)
		}
	}
	c, err := New(Options{Endpoints: []string{"localhost:1"}})
	if err != nil || c.maxLag != -1 || c.hc.Timeout != 5*time.Second {
		t.Errorf("zero options: %v, max_lag %d, timeout %v; want actives only and 5s", err, c.maxLag, c.hc.Timeout)
	}
	for _, o := range []Options{{}, {Endpoints: []string{"nohost"}}, {Endpoints: []string{"localhost:1"}, MaxLag: -2},
		{Endpoints: []string{"localhost:1"}, RequestTimeout: -time.Second}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}
