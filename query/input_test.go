package query

import (
	"net/http"
	"strings"
	"testing"
)

func TestEveryBadInputGetsItsStatusAndAClearMessage(t *testing.T) {
	c := newCluster(t, clusterOpts{tweak: func(_ int, o *Options) { o.MaxKeyBytes = 16 }})
	c.put(storeCounts, []byte("a"), []byte("1"))
	long := strings.Repeat("x", 17)
	n := c.nodes[0]
	// A cursor of another scan.
	other := c.get(n, "/v1/stores/counts/scan?limit=1&prefix=a")
	c.put(storeCounts, []byte("a2"), []byte("1"))
	other = c.get(n, "/v1/stores/counts/scan?limit=1&prefix=a")
	cursor, _ := other.json["next_cursor"].(string)
	if cursor == "" {
		t.Fatalf("no cursor: %s", other)
	}
	for _, tc := range []struct {
		name, path string
		code       int
		msg        string
	}{
		{"unknown store names it", "/v1/stores/nope/keys/a", 404, `unknown store "nope" (stores: counts, docs, joined, names, raw, wins)`},
		{"unknown store in scan", "/v1/stores/nope/scan", 404, `unknown store "nope"`},
		{"invalid store name", "/v1/stores/a%20b/keys/a", 400, `invalid store name "a b"`},
		{"empty store name", "/v1/stores//keys/a", 400, "empty store name"},
		{"empty key", "/v1/stores/counts/keys/", 400, "empty key"},
		{"key over the limit", "/v1/stores/counts/keys/" + long, 400, "key is 17 bytes; the limit is 16"},
		{"negative max_lag", "/v1/stores/counts/keys/a?max_lag=-1", 400, `max_lag "-1": want a whole number, 0 or more`},
		{"non-numeric max_lag", "/v1/stores/counts/keys/a?max_lag=ten", 400, `max_lag "ten"`},
		{"non-numeric min_position", "/v1/stores/counts/keys/a?min_position=1.5", 400, `min_position "1.5"`},
		{"unknown key_encoding", "/v1/stores/counts/keys/a?key_encoding=hex", 400, `key_encoding "hex": want string (the default) or base64url`},
		{"key not base64url", "/v1/stores/counts/keys/a+b?key_encoding=base64url", 400, `key "a+b" is not base64url`},
		{"empty base64url key", "/v1/stores/counts/keys/%3D?key_encoding=base64url", 400, "empty key"},
		{"unknown parameter", "/v1/stores/counts/keys/a?max-lag=3", 400, `unknown query parameter "max-lag": valid are key_encoding, max_lag, min_position`},
		{"repeated parameter", "/v1/stores/counts/keys/a?max_lag=1&max_lag=2", 400, "query parameter max_lag given 2 times"},
		{"bad query escape", "/v1/stores/counts/keys/a?max_lag=%zz", 400, "query string"},
		{"absent key", "/v1/stores/counts/keys/b", 404, `key "b" not found in store counts`},
		{"unknown route", "/v1/tables/x", 404, "no route for path /v1/tables/x"},
		{"unknown store subresource", "/v1/stores/counts/range", 404, "want /v1/stores/{store}/keys/{key}, /v1/stores/{store}/scan, /v1/stores/{store}/windows/{key} or /v1/stores/{store}/windows"},
		{"scan limit zero", "/v1/stores/counts/scan?limit=0", 400, `limit "0": want a whole number from 1 to 1000`},
		{"scan limit too large", "/v1/stores/counts/scan?limit=1001", 400, `limit "1001"`},
		{"scan from after to", "/v1/stores/counts/scan?from=b&to=a", 400, `from "b" is after to "a"`},
		{"scan prefix over the limit", "/v1/stores/counts/scan?prefix=" + long, 400, "prefix is 17 bytes; the limit is 16"},
		{"scan garbage cursor", "/v1/stores/counts/scan?cursor=%21%21", 400, `invalid cursor "!!": pass next_cursor from a previous page unchanged`},
		{"scan cursor of another scan", "/v1/stores/counts/scan?cursor=" + cursor, 400, "cursor belongs to a different scan"},
		{"scan unknown task", "/v1/stores/counts/scan?tasks=1,99", 400, "tasks: task 99 does not exist (tasks are 0 to 5)"},
		{"scan bad tasks", "/v1/stores/counts/scan?tasks=1,x", 400, `tasks: "x" is not a task id`},
		{"scan tasks bitmap not base64url", "/v1/stores/counts/scan?tasks=~%21", 400, `tasks bitmap "!" is not base64url`},
		{"scan tasks bitmap of no task", "/v1/stores/counts/scan?tasks=~AA", 400, "tasks bitmap names no task"},
		{"scan min_position", "/v1/stores/counts/scan?min_position=3", 400, `unknown query parameter "min_position"`},
		{"scan from not base64url", "/v1/stores/counts/scan?key_encoding=base64url&from=%2B", 400, `from "+" is not base64url`},
		{"metadata parameter", "/v1/metadata?x=1", 400, `unknown query parameter "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := c.get(n, tc.path)
			if a.code != tc.code || !strings.Contains(a.errMsg(), tc.msg) {
				t.Errorf("GET %s: got %s, want %d with %q", tc.path, a, tc.code, tc.msg)
			}
		})
	}
}

func TestOnlyGETIsAllowed(t *testing.T) {
	c := newCluster(t, clusterOpts{members: 1})
	resp, err := http.Post(c.nodes[0].url+"/v1/stores/counts/keys/a", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func TestOversizedHeadersAreRefused(t *testing.T) {
	c := newCluster(t, clusterOpts{members: 1, tweak: func(_ int, o *Options) { o.MaxHeaderBytes = 1024 }})
	a := c.do(c.nodes[0], "/healthz", func(r *http.Request) { r.Header.Set("X-Big", strings.Repeat("b", 8<<10)) })
	if a.code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("got %s, want 431", a)
	}
}

func TestTokenGuardsEveryRouteButHealthAndReadiness(t *testing.T) {
	c := newCluster(t, clusterOpts{token: "s3cret"})
	key := []byte("guarded")
	c.put(storeCounts, key, []byte("1"))
	n := c.other(key) // its lookups are forwarded: the token travels
	for _, path := range []string{keyPath(storeCounts, key), "/v1/stores/counts/scan", "/v1/metadata", "/v1/status", "/metrics", "/v1/nothing"} {
		a := c.do(n, path, nil)
		if a.code != http.StatusUnauthorized || !strings.Contains(a.errMsg(), "missing bearer token") || a.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s without token: %s", path, a)
		}
		a = c.do(n, path, func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3creT") })
		if a.code != http.StatusUnauthorized || a.errMsg() != "wrong bearer token" {
			t.Errorf("%s with a wrong token: %s", path, a)
		}
		a = c.do(n, path, func(r *http.Request) { r.Header.Set("Authorization", "s3cret") })
		if a.code != http.StatusUnauthorized {
			t.Errorf("%s with the token but no Bearer: %s", path, a)
		}
	}
	for _, path := range []string{keyPath(storeCounts, key), "/v1/stores/counts/scan", "/v1/metadata", "/v1/status", "/metrics"} {
		if a := c.get(n, path); a.code != http.StatusOK {
			t.Errorf("%s with the token: %s", path, a)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if a := c.do(n, path, nil); a.code != http.StatusOK {
			t.Errorf("%s without token: %s", path, a)
		}
	}
}

func TestTheBearerSchemeIsCaseInsensitive(t *testing.T) {
	c := newCluster(t, clusterOpts{token: "s3cret"})
	n := c.nodes[0]
	for _, auth := range []string{"Bearer s3cret", "bearer s3cret", "BEARER s3cret", "bEaReR s3cret", "Bearer  s3cret"} {
		if a := c.do(n, "/v1/status", func(r *http.Request) { r.Header.Set("Authorization", auth) }); a.code != http.StatusOK {
			t.Errorf("Authorization: %s: %s", auth, a)
		}
	}
	for _, auth := range []string{"bearer S3cret", "Basic s3cret", "Bearers3cret", "Bearer", "bearer s3cret s3cret"} {
		if a := c.do(n, "/v1/status", func(r *http.Request) { r.Header.Set("Authorization", auth) }); a.code != http.StatusUnauthorized {
			t.Errorf("Authorization: %s: %s, want 401", auth, a)
		}
	}
}

func TestInstancesWithDifferentTokensSayso(t *testing.T) {
	c := newCluster(t, clusterOpts{token: "one", tweak: func(i int, o *Options) {
		if i == 1 {
			o.AuthToken = "two"
		}
	}})
	var key []byte
	for _, k := range keysPerTask(c.tasks, 1) {
		if c.owner(k) == c.nodes[1] {
			key = k
			break
		}
	}
	a := c.get(c.nodes[0], keyPath(storeCounts, key))
	if a.code != http.StatusBadGateway || !strings.Contains(a.errMsg(), "answered 401") || !strings.Contains(a.errMsg(), "http.auth.token differ") {
		t.Errorf("%s", a)
	}
}

func TestReadinessAndLiveness(t *testing.T) {
	c := newCluster(t, clusterOpts{members: 1})
	n := c.nodes[0]
	if a := c.get(n, "/healthz"); a.code != 200 || a.json["alive"] != true {
		t.Errorf("healthz: %s", a)
	}
	if a := c.get(n, "/readyz"); a.code != 200 || a.json["ready"] != true {
		t.Errorf("readyz: %s", a)
	}
	n.rt.mu.Lock()
	n.rt.err = &NotReady{Condition: "task 3 is restoring (1200 records remaining)", Cause: errTest("fetch 10.1.2.3:9092: EOF")}
	n.rt.mu.Unlock()
	if a := c.get(n, "/readyz"); a.code != 503 || a.json["ready"] != false || a.json["reason"] != "task 3 is restoring (1200 records remaining)" || a.header.Get("Retry-After") == "" {
		t.Errorf("readyz: %s", a)
	}
	if a := c.get(n, "/healthz"); a.code != 200 {
		t.Errorf("healthz while not ready: %s", a)
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }
