package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The dev cluster itself is tested end to end, as a process, in package
// e2e (TestDevComesUpPlacesAcrossZonesRoutesQueriesAndFailsOver).

func TestDevAdminRoutesAnswerLoopbackClientsOnly(t *testing.T) {
	d := &devCluster{out: &lockedWriter{w: io.Discard}, insts: []*devInstance{{name: "i1", addr: "127.0.0.1:1"}}}
	d.insts[0].d = d
	passed := false
	h := d.admin(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { passed = true }))
	for _, tc := range []struct {
		method, path, remote string
		want                 int
	}{
		{"POST", "/v1/dev/instances/i1/kill", "10.1.2.3:4444", http.StatusForbidden},
		{"GET", "/v1/dev/instances", "[2001:db8::1]:4444", http.StatusForbidden},
		{"GET", "/v1/dev/instances", "127.0.0.1:4444", http.StatusOK},
		{"GET", "/v1/dev/instances", "[::1]:4444", http.StatusOK},
		{"POST", "/v1/dev/instances/i9/kill", "127.0.0.1:4444", http.StatusNotFound},
		{"POST", "/v1/dev/instances/i1/kill", "127.0.0.1:4444", http.StatusConflict}, // not running
		{"GET", "/v1/dev/instances/i1/kill", "127.0.0.1:4444", http.StatusMethodNotAllowed},
		{"POST", "/v1/dev/nothing", "127.0.0.1:4444", http.StatusNotFound},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		r.RemoteAddr = tc.remote
		r.Host = "127.0.0.1:1"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s %s from %s: %d %s, want %d", tc.method, tc.path, tc.remote, w.Code, w.Body, tc.want)
		}
	}
	if passed {
		t.Error("a dev route reached the query server")
	}
	r := httptest.NewRequest("GET", "/v1/metadata", nil)
	h.ServeHTTP(httptest.NewRecorder(), r)
	if !passed {
		t.Error("a query route did not reach the query server")
	}
}

// TestDevAdminRoutesRefuseOtherSitesPages: a browser page of another site
// (or a rebinding domain) cannot kill an instance through a form POST, nor
// read the instance list; curl-like clients and same-origin pages can.
func TestDevAdminRoutesRefuseOtherSitesPages(t *testing.T) {
	d := &devCluster{out: &lockedWriter{w: io.Discard}, insts: []*devInstance{{name: "i1", addr: "127.0.0.1:1"}}}
	d.insts[0].d = d
	h := d.admin(http.NotFoundHandler())
	for _, tc := range []struct {
		name    string
		method  string
		host    string
		headers map[string]string
		want    int // 409: passed the check, refused because i1 is not running
	}{
		{"a cross-site form POST", "POST", "127.0.0.1:8081", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, http.StatusForbidden},
		{"a page on another port of localhost", "POST", "127.0.0.1:8081", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:3000"}, http.StatusForbidden},
		{"an old browser's cross-origin POST", "POST", "127.0.0.1:8081", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"an opaque origin", "POST", "127.0.0.1:8081", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"a cross-site read of the list", "GET", "127.0.0.1:8081", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"a rebinding domain", "POST", "evil.example:8081", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://evil.example:8081"}, http.StatusForbidden},
		{"curl", "POST", "127.0.0.1:8081", nil, http.StatusConflict},
		{"curl by name", "POST", "localhost:8081", nil, http.StatusConflict},
		{"curl over IPv6", "POST", "[::1]:8081", nil, http.StatusConflict},
		{"a same-origin page", "POST", "127.0.0.1:8081", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8081"}, http.StatusConflict},
		{"the address bar", "GET", "localhost:8081", map[string]string{"Sec-Fetch-Site": "none"}, http.StatusOK},
	} {
		path := "/v1/dev/instances/i1/kill"
		if tc.method == "GET" {
			path = "/v1/dev/instances"
		}
		r := httptest.NewRequest(tc.method, path, nil)
		r.RemoteAddr = "127.0.0.1:5555"
		r.Host = tc.host
		for k, v := range tc.headers {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, w.Code, strings.TrimSpace(w.Body.String()), tc.want)
		}
	}
}

func TestDevRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--instances", "-1"}, {"--partitions", "0"}, {"--standbys", "-1"}, {"--rate", "-1"},
		{"--http-port", "65535", "--instances", "2"}, {"--kafka-port", "-1"}, {"--log-level", "loud"}, {"extra"},
	} {
		var stderr strings.Builder
		if code := runDev(t.Context(), args, nil, io.Discard, &stderr); code != 2 {
			t.Errorf("dev %v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}
