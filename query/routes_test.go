package query

import (
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestKeysRouteWhateverTheirSlashesAndDots: a key is everything after
// /keys/, raw or escaped, even where ServeMux would clean the path (a//b,
// a/./b, ../x, a trailing slash): no redirect, the key as written.
func TestKeysRouteWhateverTheirSlashesAndDots(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	for i, key := range []string{"a//b", "a/./b", "../x", "a/", ".", "..", "a%b", "/lead", "a/../../v1/metadata"} {
		c.put(storeCounts, []byte(key), []byte{byte('1' + i)})
		for _, path := range []string{
			"/v1/stores/counts/keys/" + strings.ReplaceAll(key, "%", "%25"), // '/' and '.' as they are
			keyPath(storeCounts, []byte(key)),                               // '/' escaped
		} {
			for _, n := range c.nodes {
				a := c.get(n, path)
				if a.code != http.StatusOK || a.json["key"] != key || a.json["value"] != float64(1+i) {
					t.Errorf("GET %s via %s: %s; want key %q", path, n.id, a, key)
				}
			}
		}
	}
}

// TestEveryRouteAnswersInTheOneErrorShape: the mux's own 404, 405 and
// clean-path redirect never reach a client.
func TestEveryRouteAnswersInTheOneErrorShape(t *testing.T) {
	c := newCluster(t, clusterOpts{members: 1, token: "tok"})
	n := c.nodes[0]
	for _, tc := range []struct {
		method, path string
		code         int
		errCode      string
	}{
		{"GET", "/v1/./metadata", 404, codeNoRoute},
		{"GET", "/v1//metadata", 404, codeNoRoute},
		{"GET", "/v1/metadata/", 404, codeNoRoute},
		{"GET", "/v1/stores/counts", 404, codeNoRoute},
		{"GET", "/v1/stores/counts/scan/x", 404, codeNoRoute},
		{"GET", "/v1/stores/../keys/x", 404, codeUnknownStore}, // not cleaned into /v1/keys/x
		{"POST", "/v1/metadata", 405, "method_not_allowed"},
		{"DELETE", "/v1/stores/counts/keys/a/b", 405, "method_not_allowed"},
		{"PUT", "/nowhere", 405, "method_not_allowed"},
		{"POST", "/healthz", 405, "method_not_allowed"},
	} {
		a := c.do(n, tc.path, func(r *http.Request) {
			r.Method = tc.method
			r.Header.Set("Authorization", "Bearer tok")
		})
		if a.code != tc.code || a.json["code"] != tc.errCode || a.errMsg() == "" {
			t.Errorf("%s %s: %s; want %d %s in the error shape", tc.method, tc.path, a, tc.code, tc.errCode)
		}
		if tc.code == 405 && a.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", tc.method, tc.path, a.header.Get("Allow"))
		}
	}
	// 405 comes before authentication, 404 after it.
	if a := c.do(n, "/v1/metadata", func(r *http.Request) { r.Method = "POST" }); a.code != 405 {
		t.Errorf("POST without a token: %s", a)
	}
	if a := c.do(n, "/nowhere", nil); a.code != 401 {
		t.Errorf("unknown route without a token: %s", a)
	}
	req, _ := http.NewRequest(http.MethodHead, n.url+"/v1/metadata", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("HEAD /v1/metadata: %d", resp.StatusCode)
	}
}

// TestIsolationDefaultsByGuarantee: reads default to latest under
// at-least-once, to committed under exactly-once, which refuses latest;
// forwarded lookups and scans read at the isolation the client gave, or at
// the group's default (the peer's, the same), the parameter left out so
// that an older peer still answers.
func TestIsolationDefaultsByGuarantee(t *testing.T) {
	for _, eos := range []bool{false, true} {
		c := newCluster(t, clusterOpts{tweak: func(_ int, o *Options) { o.ExactlyOnce = eos }})
		key := []byte("iso")
		c.put(storeCounts, key, []byte("1"))
		owner, other := c.owner(key), c.other(key)
		rep := owner.rt.replica(storeCounts, c.task(key))
		def := IsolationLatest
		if eos {
			def = IsolationCommitted
		}
		want := []Isolation{def, IsolationCommitted, def, IsolationCommitted}
		for _, q := range []string{"", "?isolation=committed"} {
			if a := c.get(owner, keyPath(storeCounts, key)+q); a.code != 200 {
				t.Fatalf("eos=%v GET%s: %s", eos, q, a)
			}
		}
		for _, q := range []string{"", "?isolation=committed"} { // forwarded to the owner
			if a := c.get(other, keyPath(storeCounts, key)+q); a.code != 200 {
				t.Fatalf("eos=%v forwarded%s: %s", eos, q, a)
			}
		}
		if got := rep.isolations(); !slices.Equal(got, want) {
			t.Errorf("eos=%v: the replica read at %v, want %v", eos, got, want)
		}
		a := c.get(other, "/v1/stores/counts/scan")
		if a.code != 200 {
			t.Fatalf("eos=%v scan: %s", eos, a)
		}
		if got := rep.isolations(); got[len(got)-1] != def {
			t.Errorf("eos=%v: a forwarded scan read at %v, want %v", eos, got[len(got)-1], def)
		}
		a = c.get(owner, keyPath(storeCounts, key)+"?isolation=latest")
		if eos && (a.code != 400 || !strings.Contains(a.errMsg(), "isolation=latest is not available under processing.guarantee=exactly_once_v2")) {
			t.Errorf("latest under exactly-once: %s; want 400 naming the guarantee", a)
		}
		if !eos && a.code != 200 {
			t.Errorf("latest under at-least-once: %s", a)
		}
		if a := c.get(owner, "/v1/stores/counts/scan?isolation=latest"); eos != (a.code == 400) {
			t.Errorf("eos=%v scan at latest: %s", eos, a)
		}
		if a := c.get(owner, keyPath(storeCounts, key)+"?isolation=dirty"); a.code != 400 || !strings.Contains(a.errMsg(), `isolation "dirty": want latest or committed`) {
			t.Errorf("unknown isolation: %s", a)
		}
	}
}

// TestGlobalStoresAreReadLocally: a global store's lookups and scans are
// answered by whichever instance is asked, from its own copy, never
// forwarded, and with no task.
func TestGlobalStoresAreReadLocally(t *testing.T) {
	const global = "countries"
	c := newCluster(t, clusterOpts{tweak: func(_ int, o *Options) {
		o.Stores = append(o.Stores, ServedStore{Name: global, Global: true})
	}})
	for i, n := range c.nodes[:2] {
		r := &fakeReplica{status: ReplicaStatus{Store: global, Task: GlobalTask, Role: RoleActive}, data: map[string][]byte{}}
		r.put("fr", []byte("France"))
		r.put("de", []byte("Germany"))
		if i == 1 {
			r.set(func(s *ReplicaStatus) { s.Role, s.Reason = RoleRestoring, "restoring" })
		}
		n.rt.globals = map[string]*fakeReplica{global: r}
	}
	a := c.get(c.nodes[0], "/v1/stores/"+global+"/keys/fr")
	if a.code != 200 || a.json["served_by"] != "n1" || a.json["task"] != float64(GlobalTask) || a.json["value"] != "RnJhbmNl" {
		t.Errorf("global lookup: %s", a)
	}
	a = c.get(c.nodes[0], "/v1/stores/"+global+"/scan")
	if a.code != 200 || len(a.json["items"].([]any)) != 2 {
		t.Errorf("global scan: %s", a)
	}
	if a := c.get(c.nodes[0], "/v1/stores/"+global+"/scan?tasks=1"); a.code != 400 || !strings.Contains(a.errMsg(), "is global") {
		t.Errorf("global scan of a task: %s", a)
	}
	// A copy still restoring, or none at all: 503 from that instance, not
	// a forward to one that has it.
	if a := c.get(c.nodes[1], "/v1/stores/"+global+"/keys/fr"); a.code != 503 || !strings.Contains(a.errMsg(), "restoring") {
		t.Errorf("restoring global copy: %s", a)
	}
	if a := c.get(c.nodes[2], "/v1/stores/"+global+"/keys/fr"); a.code != 503 || !strings.Contains(a.errMsg(), "no copy of global store countries") {
		t.Errorf("no global copy: %s", a)
	}
}

// TestQueryImportsNeitherStateNorTheRuntime: the server reads through its
// own Reader interface only (issue 20 step 3).
func TestQueryImportsNeitherStateNorTheRuntime(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Split(strings.TrimSpace(string(out)), "\n")
	if !slices.Contains(deps, "github.com/rackstream/rackstream/query") {
		t.Fatalf("go list -deps printed no query package: %q", out)
	}
	for _, bad := range []string{"github.com/rackstream/rackstream/state", "github.com/rackstream/rackstream/processor"} {
		if slices.Contains(deps, bad) {
			t.Errorf("query depends on %s", bad)
		}
	}
}

// TestProfilesAreServedOnlyWhenAskedAndBehindTheToken: http.pprof=true
// serves the runtime's profiles under /debug/pprof/, authenticated like the
// API; the command line, which may hold a secret, never; off (the default),
// no profile route exists.
func TestProfilesAreServedOnlyWhenAskedAndBehindTheToken(t *testing.T) {
	on := newCluster(t, clusterOpts{members: 1, token: "tok", tweak: func(_ int, o *Options) { o.Profiling = true }})
	off := newCluster(t, clusterOpts{members: 1, token: "tok"})
	auth := func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok") }
	for _, tc := range []struct {
		c        *cluster
		path     string
		prep     func(*http.Request)
		code     int
		contains string
	}{
		{on, "/debug/pprof/", auth, 200, "goroutine"},
		{on, "/debug/pprof/goroutine?debug=1", auth, 200, "profileRoutes"}, // this very handler's goroutine
		{on, "/debug/pprof/heap", auth, 200, ""},
		{on, "/debug/pprof/trace?seconds=0.05", auth, 200, "go 1."},
		{on, "/debug/pprof/profile?seconds=1", auth, 200, ""},
		{on, "/debug/pprof/nosuch", auth, 404, "Unknown profile"},
		{on, "/debug/pprof/cmdline", auth, 404, "may hold a secret"},
		{on, "/debug/pprof/", nil, 401, ""},
		{on, "/debug/pprof/heap", nil, 401, ""},
		{on, "/debug/pprof/profile?seconds=1", func(r *http.Request) { r.Header.Set("Authorization", "Bearer wrong") }, 401, ""},
		{on, "/debug/pprof/heap", func(r *http.Request) { auth(r); r.Method = "POST" }, 405, ""},
		{off, "/debug/pprof/", auth, 404, codeNoRoute},
		{off, "/debug/pprof/heap", auth, 404, codeNoRoute},
	} {
		a := tc.c.do(tc.c.nodes[0], tc.path, tc.prep)
		if a.code != tc.code || !strings.Contains(string(a.body), tc.contains) {
			t.Errorf("GET %s (profiling %v): %d %.200q; want %d containing %q", tc.path, tc.c == on, a.code, a.body, tc.code, tc.contains)
		}
	}
}
