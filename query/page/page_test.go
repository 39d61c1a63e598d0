package page_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/query/page"
)

// metadataDoc is a /v1/metadata document of six instances in three zones
// and two clusters, four tasks, two standbys each; task 3's replicas are
// all in zone a, a spread the what-if's plan (Assign's, as `rackstream
// assign` computes it from the document) improves on.
const metadataDoc = `{
 "generation": 7, "self": "n1", "partitioner": "murmur2", "partitions": 4,
 "clients": [
  {"id": "n1", "endpoint": "127.0.0.1:1", "tags": {"zone": "a", "cluster": "k1"}, "capacity": 1, "active": [0], "standby": [2], "warmup": []},
  {"id": "n2", "endpoint": "127.0.0.1:2", "tags": {"zone": "b", "cluster": "k1"}, "capacity": 1, "active": [1], "standby": [0], "warmup": []},
  {"id": "n3", "endpoint": "127.0.0.1:3", "tags": {"zone": "c", "cluster": "k1"}, "capacity": 1, "active": [2], "standby": [1], "warmup": []},
  {"id": "n4", "endpoint": "127.0.0.1:4", "tags": {"zone": "a", "cluster": "k2"}, "capacity": 1, "active": [3], "standby": [0, 1], "warmup": []},
  {"id": "n5", "endpoint": "127.0.0.1:5", "tags": {"zone": "a", "cluster": "k2"}, "capacity": 1, "active": [], "standby": [3, 2], "warmup": []},
  {"id": "n6", "endpoint": "127.0.0.1:6", "tags": {"zone": "a", "cluster": "k2"}, "capacity": 1, "active": [], "standby": [3], "warmup": []}
 ],
 "tasks": [
  {"task": 0, "active": "n1", "standby": ["n2", "n4"], "warmup": []},
  {"task": 1, "active": "n2", "standby": ["n3", "n4"], "warmup": []},
  {"task": 2, "active": "n3", "standby": ["n1", "n5"], "warmup": []},
  {"task": 3, "active": "n4", "standby": ["n5", "n6"], "warmup": []}
 ],
 "probing_rebalance_needed": false,
 "quality": {"dimensions": [{"tag": "zone", "values": 3, "tasks_repeating": 2}, {"tag": "cluster", "values": 2, "tasks_repeating": 0}],
  "standby_shortfall": 0, "active_load": {"min": 0, "max": 1}, "replica_load": {"min": 1, "max": 3}, "exposure": []},
 "status": {"as_of": "2026-12-03T07:00:00Z", "clients": [], "lags": [{"task": 0, "client": "n2", "role": "standby", "lag": 3}]}
}`

// fakeQuery stands in for the query server: /v1/metadata behind a token,
// everything else answered with its path, every request recorded.
type fakeQuery struct {
	token string
	doc   string
	code  int // of /v1/metadata; 0 = 200

	mu   sync.Mutex
	reqs []*http.Request
}

func (f *fakeQuery) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	f.mu.Unlock()
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		w.Header().Set("WWW-Authenticate", `Bearer realm="rackstream"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"missing bearer token"}`)
		return
	}
	if r.URL.Path != "/v1/metadata" {
		io.WriteString(w, "query server: "+r.URL.EscapedPath())
		return
	}
	if f.code != 0 {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(f.code)
		io.WriteString(w, `{"error":"no placement yet"}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, f.doc)
}

func (f *fakeQuery) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.reqs...)
}

func serve(t *testing.T, f *fakeQuery) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(page.New(page.Options{Query: f}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestStaticFilesLoadWithoutTokenUnderCSPAndHoldNoData(t *testing.T) {
	f := &fakeQuery{token: "s3cret", doc: metadataDoc}
	srv := serve(t, f)
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/", "text/html", `<script src="/ui/app.js"`},
		{"/ui/", "text/html", `<link rel="stylesheet" href="/ui/style.css">`},
		{"/ui/app.js", "text/javascript", "textContent"},
		{"/ui/names.js", "text/javascript", "function displayNames"},
		{"/ui/loss.js", "text/javascript", "function lossFigures"},
		{"/", "text/html", `<script src="/ui/loss.js"`},
		{"/", "text/html", `<script src="/ui/names.js"`},
		{"/ui/style.css", "text/css", "--active-bg"},
		{"/ui/favicon.svg", "image/svg+xml", "<svg"},
	} {
		resp, body := get(t, srv.URL+tc.path)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", tc.path, resp.Status)
			continue
		}
		if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, tc.ctype) {
			t.Errorf("GET %s: Content-Type %q, want %s", tc.path, got, tc.ctype)
		}
		if got := resp.Header.Get("Content-Security-Policy"); got != page.ContentSecurityPolicy {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, got)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q", tc.path, got)
		}
		if !strings.Contains(body, tc.contains) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.contains)
		}
		for _, data := range []string{"n1", "127.0.0.1:1", "s3cret"} {
			if strings.Contains(body, `"`+data+`"`) {
				t.Errorf("GET %s: the static file holds %q", tc.path, data)
			}
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("the static files asked the query server %d times, want never", n)
	}
	// The policy allows nothing inline and nothing from elsewhere.
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(page.ContentSecurityPolicy, want) {
			t.Errorf("Content-Security-Policy lacks %s", want)
		}
	}
	if strings.Contains(page.ContentSecurityPolicy, "unsafe") {
		t.Errorf("Content-Security-Policy allows something unsafe: %s", page.ContentSecurityPolicy)
	}
}

// inlineHandler matches an event handler attribute (onclick=...).
var inlineHandler = regexp.MustCompile(`\son[a-z]+\s*=`)

func TestStaticFilesHaveNoInlineScriptOrMarkupSinks(t *testing.T) {
	f := &fakeQuery{doc: metadataDoc}
	srv := serve(t, f)
	_, html := get(t, srv.URL+"/")
	if strings.Contains(html, "<script>") || strings.Contains(html, " style=") || strings.Contains(html, "<style") || inlineHandler.MatchString(html) {
		t.Error("index.html has inline script, style or event handler")
	}
	_, app := get(t, srv.URL+"/ui/app.js")
	_, names := get(t, srv.URL+"/ui/names.js")
	_, loss := get(t, srv.URL+"/ui/loss.js")
	for file, js := range map[string]string{"app.js": app, "names.js": names, "loss.js": loss} {
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(js, sink) {
				t.Errorf("%s uses %s: untrusted text must go through textContent", file, sink)
			}
		}
	}
	js := app
	if strings.Contains(js, "?token") || strings.Contains(js, "&token") {
		t.Error("app.js puts the token in a URL")
	}
}

func TestOtherRequestsReachTheQueryServerAsSent(t *testing.T) {
	f := &fakeQuery{doc: metadataDoc}
	srv := serve(t, f)
	for _, path := range []string{"/v1/stores/counts/keys/a//b", "/v1/stores/counts/keys/a%2F..%2Fb", "/metrics", "/nope"} {
		resp, body := get(t, srv.URL+path)
		if resp.StatusCode != http.StatusOK || body != "query server: "+path {
			t.Errorf("GET %s: %s %q, want the query server's answer for the same path", path, resp.Status, body)
		}
	}
	if resp, _ := get(t, srv.URL+"/ui"); resp.StatusCode/100 != 3 || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %s to %q, want a redirect to /ui/", resp.Status, resp.Header.Get("Location"))
	}
	head, err := http.Head(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != http.StatusOK || head.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("HEAD /: %s, CSP %q", head.Status, head.Header.Get("Content-Security-Policy"))
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %s, want 405", resp.Status)
	}
}

// TestWhatIfIsAssignLoseOnTheSameDocument: /v1/whatif answers what
// assignor.WhatIf computes on the metadata document's own live placement,
// as `rackstream assign --lose` does (both call assignor.LossOfDocument).
func TestWhatIfIsAssignLoseOnTheSameDocument(t *testing.T) {
	f := &fakeQuery{token: "s3cret", doc: metadataDoc}
	srv := serve(t, f)
	in, plan, err := assignor.DecodeDocument([]byte(metadataDoc))
	if err != nil || plan == nil {
		t.Fatalf("the test's metadata document: plan %v, err %v", plan, err)
	}
	for _, tc := range []struct {
		query  string
		lose   []assignor.Selector
		orphan []int
	}{
		{"lose=zone=a", []assignor.Selector{{Tag: "zone", Value: "a"}}, nil},
		{"lose=zone%3Db", []assignor.Selector{{Tag: "zone", Value: "b"}}, nil},
		{"lose=n4", []assignor.Selector{{Client: "n4"}}, nil},
		{"lose=zone=b&lose=n3", []assignor.Selector{{Tag: "zone", Value: "b"}, {Client: "n3"}}, nil},
		{"lose=zone=a&lose=zone=b&lose=zone=c", []assignor.Selector{{Tag: "zone", Value: "a"}, {Tag: "zone", Value: "b"}, {Tag: "zone", Value: "c"}}, []int{0, 1, 2, 3}},
	} {
		resp, body := get(t, srv.URL+"/v1/whatif?"+tc.query, "Authorization", "Bearer s3cret", "Rackstream-Forwarded-By", "n2")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s %s", tc.query, resp.Status, body)
			continue
		}
		if g := resp.Header.Get(page.HeaderGeneration); g != "7" {
			t.Errorf("%s: generation header %q, want 7", tc.query, g)
		}
		want, err := assignor.WhatIf(in, plan, tc.lose)
		if err != nil {
			t.Fatal(err)
		}
		var got, wantJSON any
		b, _ := json.Marshal(want)
		json.Unmarshal(b, &wantJSON)
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		if !reflect.DeepEqual(got, wantJSON) {
			t.Errorf("%s:\n got %s\nwant %s", tc.query, body, b)
		}
		if tc.orphan != nil && !reflect.DeepEqual(want.TasksWithoutReplica, tc.orphan) {
			t.Errorf("%s: tasks without a replica %v, want %v", tc.query, want.TasksWithoutReplica, tc.orphan)
		}
	}
	// The metadata was asked of the query server as /v1/metadata with
	// the caller's token, no query string and no header between instances.
	for _, r := range f.requests() {
		if r.URL.Path != "/v1/metadata" || r.URL.RawQuery != "" || r.Header.Get("Authorization") != "Bearer s3cret" {
			t.Errorf("the query server was asked %s?%s with Authorization %q", r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"))
		}
		if by := r.Header.Get("Rackstream-Forwarded-By"); by != "" {
			t.Errorf("a client's peer header reached the query server: Rackstream-Forwarded-By %q", by)
		}
	}
}

func TestWhatIfRefusals(t *testing.T) {
	f := &fakeQuery{token: "s3cret", doc: metadataDoc}
	srv := serve(t, f)
	auth := []string{"Authorization", "Bearer s3cret"}

	// The query server decides the token: its 401 comes back as is.
	resp, body := get(t, srv.URL+"/v1/whatif?lose=zone=a")
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" || !strings.Contains(body, "missing bearer token") {
		t.Errorf("without a token: %s %q (WWW-Authenticate %q), want the query server's 401", resp.Status, body, resp.Header.Get("WWW-Authenticate"))
	}
	for _, tc := range []struct{ query, want string }{
		{"", "missing lose"},
		{"lose=", "empty selector"},
		{"lose==b", "non-empty KEY"},
		{"lose=zone=z", "zone=z"},
		{"lose=n9", "n9"},
		{"lose=zone=a&token=x", "unknown parameter"},
		{"lose=%zz", "query string"},
	} {
		resp, body := get(t, srv.URL+"/v1/whatif?"+tc.query, auth...)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("?%s: %s %q, want 400 naming %q", tc.query, resp.Status, body, tc.want)
		}
		var eb struct {
			Error string `json:"error"`
			Code  string `json:"code"`
		}
		if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error == "" || eb.Code != "bad_request" {
			t.Errorf("?%s: body %q is not the JSON error shape", tc.query, body)
		}
	}

	// No placement yet: the query server's 503 and Retry-After come back.
	f503 := &fakeQuery{doc: metadataDoc, code: http.StatusServiceUnavailable}
	resp, body = get(t, serve(t, f503).URL+"/v1/whatif?lose=zone=a")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, "no placement yet") {
		t.Errorf("no placement: %s %q, want the query server's 503 with Retry-After", resp.Status, body)
	}

	// A document beyond the bound is refused, not read whole.
	big := &fakeQuery{doc: metadataDoc}
	bigSrv := httptest.NewServer(page.New(page.Options{Query: big, MaxMetadataBytes: len(metadataDoc) - 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer bigSrv.Close()
	resp, body = get(t, bigSrv.URL+"/v1/whatif?lose=zone=a")
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "exceeds") {
		t.Errorf("oversized metadata: %s %q, want 500 saying it exceeds the bound", resp.Status, body)
	}
}
