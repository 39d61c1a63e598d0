package query

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/harness/kafkatest"
)

// asPeer signs a request as a hop forwarded by from to the node to, with
// the cluster's token, at time at: what an instance does.
func (c *cluster) asPeer(from string, to *node, at time.Time) func(*http.Request) {
	return func(r *http.Request) { signHop(r, hopKey(c.token), from, to.id, c.p.Generation, at) }
}

// recorder is a listener that records the requests it receives and
// answers each with a 200 of its own.
type recorder struct {
	ln  net.Listener
	srv *http.Server
	mu  sync.Mutex
	got []*http.Request // guarded by mu
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{ln: ln}
	rec.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.got = append(rec.got, r.Clone(r.Context()))
		rec.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"served_by": "recorder"})
	})}
	go rec.srv.Serve(ln)
	t.Cleanup(func() { rec.srv.Close() })
	return rec
}

func (rec *recorder) requests() []*http.Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]*http.Request(nil), rec.got...)
}

func TestForwardedHopCarriesASignatureNeverTheToken(t *testing.T) {
	const token = "s3cret-token"
	rec := newRecorder(t)
	c := newCluster(t, clusterOpts{members: 2, token: token})
	key := c.repoint(c.nodes[0], 1, rec.ln.Addr().String())
	if a := c.get(c.nodes[0], keyPath(storeCounts, key)+"?min_position=0"); a.code != http.StatusOK || a.json["served_by"] != "recorder" {
		t.Fatalf("forward: %s", a)
	}
	got := rec.requests()
	if len(got) != 1 {
		t.Fatalf("the peer received %d requests, want 1", len(got))
	}
	r := got[0]
	for name, vs := range r.Header {
		for _, v := range vs {
			if strings.Contains(v, token) {
				t.Errorf("header %s carries the token: %q", name, v)
			}
		}
	}
	if r.Header.Get("Authorization") != "" {
		t.Errorf("Authorization sent to a peer: %q", r.Header.Get("Authorization"))
	}
	if r.Header.Get(HeaderForwardedBy) != "n1" || r.Header.Get(HeaderGeneration) != "7" || r.Header.Get(HeaderForwardSignature) == "" {
		t.Errorf("hop headers: %v", r.Header)
	}
	if r.URL.RawQuery != "min_position=0" || r.URL.EscapedPath() != keyPath(storeCounts, key) {
		t.Errorf("forwarded %s?%s", r.URL.EscapedPath(), r.URL.RawQuery)
	}
	// The signature verifies under the token's key, only within the
	// window, and under no other key.
	now := time.Now()
	if got := checkHop(r, hopKey(token), "n2", now); got != hopValid {
		t.Errorf("check with the token's key: %v, want valid", got)
	}
	if got := checkHop(r, hopKey("another"), "n2", now); got != hopBadMAC {
		t.Errorf("check with another token's key: %v, want a bad MAC", got)
	}
	if got := checkHop(r, hopKey(token), "n2", now.Add(hopWindow+2*time.Second)); got != hopExpired {
		t.Errorf("check past the window: %v, want expired", got)
	}
	// Changing what it covers breaks it: the path, the query, the
	// generation, the time, the sender, the receiver.
	if got := checkHop(r, hopKey(token), "n3", now); got != hopBadMAC {
		t.Errorf("replayed to another instance: %v, want a bad MAC", got)
	}
	for name, change := range map[string]func(*http.Request){
		"path":       func(r *http.Request) { r.URL.Path, r.URL.RawPath = "/v1/stores/docs/keys/x", "" },
		"query":      func(r *http.Request) { r.URL.RawQuery = "max_lag=300" },
		"generation": func(r *http.Request) { r.Header.Set(HeaderGeneration, "8") },
		"sender":     func(r *http.Request) { r.Header.Set(HeaderForwardedBy, "n9") },
		"time":       func(r *http.Request) { r.Header.Set(HeaderForwardTime, "1") },
	} {
		m := r.Clone(r.Context())
		change(m)
		if got := checkHop(m, hopKey(token), "n2", now); got != hopBadMAC {
			t.Errorf("%s changed: %v, want a bad MAC", name, got)
		}
	}
}

func TestAMemberWithAnInvalidEndpointGetsNoForwardedRequests(t *testing.T) {
	rec := newRecorder(t)
	addr := rec.ln.Addr().String()
	logs := &kafkatest.LogBuffer{}
	c := newCluster(t, clusterOpts{members: 2, token: "tok", tweak: func(_ int, o *Options) { o.Logger = logs.Logger() }})
	bad := []string{
		addr + "/any/path?x=", // steers the path: today's request would reach the recorder
		addr + "?x=",
		"user@" + addr,
		addr + "#frag",
		"127.0.0.1:99999",
		"",
	}
	for i, ep := range bad {
		key := c.repoint(c.nodes[0], 1, ep)
		for range 2 {
			a := c.get(c.nodes[0], keyPath(storeCounts, key))
			if a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), "active n2 announces no valid endpoint") ||
				(ep != "" && strings.Contains(a.errMsg(), ep)) {
				t.Errorf("endpoint %q: %s", ep, a)
			}
		}
		if n := forwards(t, c.nodes[0], routeKeys, resultBadEndpoint); n != float64(2*(i+1)) {
			t.Errorf("endpoint %q: bad_endpoint forwards = %v, want %d", ep, n, 2*(i+1))
		}
	}
	if got := rec.requests(); len(got) != 0 {
		t.Errorf("the member with an invalid endpoint received %d requests, e.g. %s", len(got), got[0].URL)
	}
	// One warning per member and endpoint, however many requests.
	if n := strings.Count(logs.String(), "a member announces no valid endpoint"); n != len(bad) {
		t.Errorf("%d warnings for %d endpoints:\n%s", n, len(bad), logs.String())
	}
	// The metadata's status gathering skips it the same way.
	a := c.get(c.nodes[0], "/v1/metadata")
	if a.code != http.StatusOK || !strings.Contains(string(a.body), "unreachable: n2 announces no valid endpoint") {
		t.Errorf("metadata: %s", a)
	}
}

// A client's Rackstream-Forwarded-By header without a valid signature gets
// no peer treatment: its keys have the client limit. The marker still
// narrows what it may do: it is answered locally, never forwarded. With no
// token, no hop is authenticated at all.
func TestAClientPosingAsAPeerGetsNoPeerTreatment(t *testing.T) {
	for _, token := range []string{"tok", ""} {
		t.Run("token="+token, func(t *testing.T) {
			c := newCluster(t, clusterOpts{token: token})
			key := []byte("posing")
			c.put(storeCounts, key, []byte("1"))
			other := c.other(key)
			pose := func(r *http.Request) {
				if token != "" {
					r.Header.Set("Authorization", "Bearer "+token)
				}
				r.Header.Set(HeaderForwardedBy, "n9")
				r.Header.Set(HeaderGeneration, "7")
			}
			// Answered locally, not forwarded to the owner.
			notHere := other.id + " holds no replica of task"
			if a := c.do(other, keyPath(storeCounts, key), pose); a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), notHere) {
				t.Errorf("lookup through a non-owner: %s", a)
			}
			// The client's key limit, not a peer's.
			long := strings.Repeat("k", 5000)
			if a := c.do(c.owner(key), "/v1/stores/counts/keys/"+long, pose); a.code != http.StatusBadRequest || !strings.Contains(a.errMsg(), "the limit is 4096") {
				t.Errorf("long key: %s", a)
			}
			if a := c.do(c.owner(key), "/v1/stores/counts/scan?from="+long, pose); a.code != http.StatusBadRequest || !strings.Contains(a.errMsg(), "the limit is 4096") {
				t.Errorf("scan from a long key: %s", a)
			}
			// A signature that does not verify is not a peer's either.
			forged := func(r *http.Request) {
				pose(r)
				r.Header.Set(HeaderForwardTime, "1700000000")
				r.Header.Set(HeaderForwardSignature, "AAAA")
			}
			if a := c.do(other, keyPath(storeCounts, key), forged); a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), notHere) {
				t.Errorf("forged signature with the bearer token: %s", a)
			}
			if a := c.do(c.owner(key), "/v1/stores/counts/scan?from="+long, forged); a.code != http.StatusBadRequest || !strings.Contains(a.errMsg(), "the limit is 4096") {
				t.Errorf("scan from a long key, forged signature: %s", a)
			}
		})
	}
}

func TestAnUnverifiedHopWithoutTheTokenIs401(t *testing.T) {
	c := newCluster(t, clusterOpts{members: 1, token: "tok"})
	n := c.nodes[0]
	path := "/v1/stores/counts/keys/a"
	if a := c.do(n, path, func(r *http.Request) {
		c.asPeer("n9", n, time.Now())(r)
		r.Header.Set(HeaderForwardSignature, "AAAA")
	}); a.code != http.StatusUnauthorized || a.json["code"] != codeHopSignature {
		t.Errorf("bad signature: %s", a)
	}
	if a := c.do(n, path, c.asPeer("n9", n, time.Now().Add(-2*hopWindow))); a.code != http.StatusUnauthorized || a.json["code"] != codeHopExpired {
		t.Errorf("stale signature: %s", a)
	}
	// Signed for another path: replayed elsewhere, it does not verify.
	if a := c.do(n, path, func(r *http.Request) {
		u := *r.URL
		r.URL.Path = "/v1/stores/counts/keys/b"
		c.asPeer("n9", n, time.Now())(r)
		r.URL = &u
	}); a.code != http.StatusUnauthorized || a.json["code"] != codeHopSignature {
		t.Errorf("signature of another path: %s", a)
	}
	if a := c.do(n, path, c.asPeer("n9", n, time.Now())); a.code != http.StatusNotFound {
		t.Errorf("valid hop: %s", a)
	}
}

func TestASignedHopIsAnsweredLocallyNeverForwardedAgain(t *testing.T) {
	c := newCluster(t, clusterOpts{token: "tok"})
	key := []byte("hop")
	c.put(storeCounts, key, []byte("1"))
	other := c.other(key)
	a := c.do(other, keyPath(storeCounts, key), c.asPeer("n9", other, time.Now()))
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), other.id+" holds no replica of task") || a.header.Get("Retry-After") == "" {
		t.Fatalf("forwarded to a non-owner: %s", a)
	}
	if n := forwards(t, other, routeKeys, resultOK) + forwards(t, other, routeKeys, resultError); n != 0 {
		t.Errorf("the non-owner forwarded %v requests", n)
	}
	// The owner answers a forwarded request itself.
	if a := c.do(c.owner(key), keyPath(storeCounts, key), c.asPeer("n9", c.owner(key), time.Now())); a.code != http.StatusOK {
		t.Errorf("forwarded to the owner: %s", a)
	}
	// A peer's scan bounds may be as long as stored keys.
	if a := c.do(c.owner(key), "/v1/stores/counts/scan?from="+strings.Repeat("k", 5000)+"&tasks="+fmt.Sprint(c.task(key)), c.asPeer("n9", c.owner(key), time.Now())); a.code != http.StatusOK {
		t.Errorf("long scan bound from a peer: %s", a)
	}
	// A normal request through the non-owner takes exactly one forward.
	if a := c.get(other, keyPath(storeCounts, key)); a.code != http.StatusOK {
		t.Fatal(a)
	}
	if n := forwards(t, other, routeKeys, resultOK); n != 1 {
		t.Errorf("forwards = %v, want 1", n)
	}
}

// Each field is length-prefixed: moving bytes from one field to the next
// changes the MAC.
func TestHopMACSeparatesItsFields(t *testing.T) {
	key := hopKey("tok")
	base := hop{method: "GET", path: "/v1/stores/s/keys/a", rawQuery: "b", generation: "7", unix: "1700000000", from: "n1", to: "n2"}
	moved := base
	moved.path, moved.rawQuery = "/v1/stores/s/keys/ab", ""
	if bytes.Equal(base.mac(key), moved.mac(key)) {
		t.Error("moving a byte from the query to the path keeps the MAC")
	}
	swapped := base
	swapped.from, swapped.to = base.to, base.from
	if bytes.Equal(base.mac(key), swapped.mac(key)) {
		t.Error("swapping sender and receiver keeps the MAC")
	}
	if !bytes.Equal(base.mac(key), base.mac(hopKey("tok"))) || hopKey("") != nil {
		t.Error("the MAC is not a function of the token and the hop alone")
	}
}

// staleLoop gives each of c's two nodes a placement in which the other
// holds key's task, and neither a replica of it: placements as stale as
// they get, where a request forwarded again would bounce between them.
func (c *cluster) staleLoop(key []byte) {
	task := c.task(key)
	for i, n := range c.nodes {
		p := *c.p
		p.Tasks = slices.Clone(p.Tasks)
		p.Tasks[task] = balancer.Replicas{Active: 1 - i}
		n.rt.mu.Lock()
		n.rt.p = &p
		for _, reps := range n.rt.reps {
			delete(reps, task)
		}
		n.rt.mu.Unlock()
	}
}

// A request that arrived as a hop is answered locally or refused, never
// forwarded again, whatever the authentication: with no token there is no
// hop key, and the marker alone must still stop a second hop (it only
// narrows what the request may do).
func TestAHopIsNeverForwardedAgainWhateverTheAuthentication(t *testing.T) {
	ca := newTestCA(t, "cluster")
	leaf := ca.leaf(t, 60)
	for _, tc := range []struct {
		name string
		co   clusterOpts
	}{
		{"http.auth=none", clusterOpts{}},
		{"mTLS only", clusterOpts{
			tls: func(i int) (*tls.Config, *tls.Config) {
				certFile, keyFile, caFile := ca.WriteFiles(t, t.TempDir(), int64(10+i))
				srv, peer, err := LoadTLS(TLSFiles{Cert: certFile, Key: keyFile, CA: caFile, ClientAuth: ClientAuthRequire, ClientCA: caFile})
				if err != nil {
					t.Fatal(err)
				}
				return srv, peer
			},
			client: &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{leaf}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.co.members = 2
			tc.co.tweak = func(_ int, o *Options) { o.MaxForwards = 4 }
			c := newCluster(t, tc.co)
			key := []byte("stale")
			c.staleLoop(key)
			first, second := c.nodes[0], c.nodes[1]
			for _, path := range []string{keyPath(storeCounts, key), fmt.Sprintf("/v1/stores/counts/scan?tasks=%d", c.task(key))} {
				a := c.get(first, path)
				if a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), second.id+" holds no replica of task") {
					t.Errorf("%s through %s: %s, want 503 from %s, which holds no replica", path, first.id, a, second.id)
				}
			}
			for _, n := range c.nodes {
				want := 0.0
				if n == first {
					want = 1
				}
				for _, route := range []string{routeKeys, routeScan} {
					if got := forwards(t, n, route, resultOK) + forwards(t, n, route, resultError) + forwards(t, n, route, resultRejected); got != want {
						t.Errorf("%s forwarded %v %s requests, want %v", n.id, got, route, want)
					}
				}
			}
		})
	}
}
