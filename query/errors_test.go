package query

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

func TestEveryErrorHasOneShape(t *testing.T) {
	c := newCluster(t, clusterOpts{token: "tok"})
	key := []byte("shape")
	c.put(storeCounts, key, []byte("1"))
	owner := c.owner(key)
	n := c.other(key)
	owner.rt.replica(storeCounts, c.task(key)).set(func(s *ReplicaStatus) { s.Position = 5 })
	bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok") }
	for _, tc := range []struct {
		name     string
		path     string
		prep     func(*http.Request)
		status   int
		code     string
		instance string // "" : none (before authentication)
	}{
		{"missing token", "/v1/metadata", nil, 401, codeMissingToken, ""},
		{"wrong token", "/v1/metadata", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, 401, codeWrongToken, ""},
		{"bad input", "/v1/stores/counts/keys/a?max_lag=x", bearer, 400, "bad_request", n.id},
		{"unknown route", "/v1/nothing", bearer, 404, codeNoRoute, n.id},
		{"unknown store", "/v1/stores/nope/keys/a", bearer, 404, codeUnknownStore, n.id},
		// Relayed from the owner, which served it.
		{"absent key", keyPath(storeCounts, []byte("absent-key-of-some-task")), bearer, 404, codeKeyNotFound, ""},
		{"behind min_position", keyPath(storeCounts, key) + "?min_position=9", bearer, 409, codeBehindMinimum, n.id},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := c.do(n, tc.path, tc.prep)
			if a.code != tc.status || a.json == nil || a.errMsg() == "" || a.json["code"] != tc.code {
				t.Fatalf("got %s, want %d with code %q", a, tc.status, tc.code)
			}
			if tc.instance != "" && a.json["instance"] != tc.instance {
				t.Errorf("instance %v, want %s", a.json["instance"], tc.instance)
			}
			if tc.status == 401 && a.json["instance"] != nil {
				t.Errorf("an unauthenticated request learns the instance: %s", a)
			}
			for k := range a.json {
				if k != "error" && k != "code" && k != "instance" {
					t.Errorf("field %q beyond the error shape: %s", k, a)
				}
			}
		})
	}
	// POST (405) and no placement (503) have the shape too.
	resp, err := http.Post(n.url+"/v1/metadata", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("POST: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	n.rt.mu.Lock()
	n.rt.p = nil
	n.rt.mu.Unlock()
	if a := c.get(n, keyPath(storeCounts, key)); a.code != 503 || a.json["code"] != "unavailable" || a.json["instance"] != n.id {
		t.Errorf("no placement: %s", a)
	}
}

// Peer URLs and dial errors go to the log only; the client reads words.
func TestPeerURLsAndDialErrorsStayInTheLog(t *testing.T) {
	logs := &kafkatest.LogBuffer{}
	c := newCluster(t, clusterOpts{tweak: func(_ int, o *Options) { o.Logger = logs.Logger() }})
	key := []byte("gone")
	owner, n := c.owner(key), c.other(key)
	owner.stop()
	ownerAddr := strings.TrimPrefix(owner.url, "http://")
	for _, path := range []string{keyPath(storeCounts, key), "/v1/stores/counts/scan", "/v1/metadata"} {
		a := c.get(n, path)
		shown := string(a.body)
		if path == "/v1/metadata" {
			// The placement lists the endpoints, for clients that route keys
			// themselves; the status says why one is down, in words.
			st, _ := a.json["status"].(map[string]any)
			shown = fmt.Sprint(st["clients"])
			if !strings.Contains(shown, "unreachable: "+owner.id+" could not be reached") {
				t.Errorf("metadata status: %s", shown)
			}
		} else if a.code != 503 || !strings.Contains(a.errMsg(), "active "+owner.id+" could not be reached (details in "+n.id+"'s log)") {
			t.Errorf("%s: %s", path, a)
		}
		for _, leak := range []string{ownerAddr, "http://", "dial", "connect", "refused"} {
			if strings.Contains(shown, leak) {
				t.Errorf("%s: the answer shows %q: %s", path, leak, shown)
			}
		}
	}
	if l := logs.String(); !strings.Contains(l, "forward failed") || !strings.Contains(l, ownerAddr) || !strings.Contains(l, "connection refused") {
		t.Errorf("the log lacks the details:\n%s", l)
	}
}

func TestReadinessNeverShowsARawError(t *testing.T) {
	c := newCluster(t, clusterOpts{members: 1})
	n := c.nodes[0]
	raw := "fetch orders/3 from 10.0.0.7:9092: dial tcp 10.0.0.7:9092: connect: connection refused"
	n.rt.mu.Lock()
	n.rt.err = errors.New(raw)
	n.rt.mu.Unlock()
	for _, path := range []string{"/readyz", "/v1/status"} {
		a := c.get(n, path)
		if strings.Contains(string(a.body), "10.0.0.7") || strings.Contains(string(a.body), "dial") {
			t.Errorf("%s shows the raw error: %s", path, a)
		}
		if a.json["reason"] != "not ready (details in n1's log)" {
			t.Errorf("%s: %s", path, a)
		}
	}
	// A condition in words is shown; its cause is not.
	n.rt.mu.Lock()
	n.rt.err = &NotReady{Condition: "topology app: partition counts differ: inputs orders=8; changelogs app-counts-changelog=6", Cause: errors.New(raw)}
	n.rt.mu.Unlock()
	if a := c.get(n, "/readyz"); a.json["reason"] != "topology app: partition counts differ: inputs orders=8; changelogs app-counts-changelog=6" {
		t.Errorf("readyz: %s", a)
	}
}

func TestAScanWithNoMatchAnswersAnEmptyList(t *testing.T) {
	c := newCluster(t, clusterOpts{token: "tok"})
	c.put(storeCounts, []byte("a"), []byte("1"))
	for _, n := range c.nodes {
		a := c.get(n, "/v1/stores/counts/scan?prefix=nomatch")
		if a.code != 200 || !strings.Contains(string(a.body), `"items":[]`) {
			t.Errorf("via %s: %s", n.id, a)
		}
	}
	// A peer's page of a task with no match, too.
	a := c.do(c.nodes[0], "/v1/stores/counts/scan?prefix=nomatch&tasks=0", c.asPeer("n9", c.nodes[0], time.Now()))
	if a.code != 200 || !strings.Contains(string(a.body), `"items":[]`) {
		t.Errorf("peer page: %s", a)
	}
}

// The one answer not in the JSON shape: a malformed escape in the request
// path is refused by net/http before any handler runs.
func TestAMalformedPathEscapeIsNetHTTPsPlainText400(t *testing.T) {
	c := newCluster(t, clusterOpts{members: 1})
	// Go's client refuses to send such a path: write it by hand.
	conn, err := net.Dial("tcp", c.nodes[0].ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /v1/stores/counts/keys/%zz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

func TestStorageErrorsStayInTheLog(t *testing.T) {
	logs := &kafkatest.LogBuffer{}
	c := newCluster(t, clusterOpts{members: 1, tasks: 1, tweak: func(_ int, o *Options) { o.Logger = logs.Logger() }})
	n := c.nodes[0]
	raw := "leveldb: corrupted block in /var/lib/rackstream/app/0/counts/000005.ldb"
	n.rt.replica(storeCounts, 0).mu.Lock()
	n.rt.replica(storeCounts, 0).err = errors.New(raw)
	n.rt.replica(storeCounts, 0).mu.Unlock()
	for _, path := range []string{keyPath(storeCounts, []byte("a")), "/v1/stores/counts/scan"} {
		a := c.get(n, path)
		if a.code != 503 || strings.Contains(string(a.body), "/var/lib") || !strings.Contains(a.errMsg(), "n1: reading task 0 failed (details in its log)") &&
			!strings.Contains(a.errMsg(), "n1: scanning task 0 failed (details in its log)") {
			t.Errorf("%s: %s", path, a)
		}
	}
	if !strings.Contains(logs.String(), raw) {
		t.Errorf("the log lacks the error:\n%s", logs.String())
	}
}
