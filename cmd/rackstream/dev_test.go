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

func TestDevRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--instances", "-1"}, {"--partitions", "0"}, {"--standbys", "-1"}, {"--rate", "-1"},
		{"--http-port", "65535", "--instances", "2"}, {"--log-level", "loud"}, {"extra"},
	} {
		var stderr strings.Builder
		if code := runDev(t.Context(), args, nil, io.Discard, &stderr); code != 2 {
			t.Errorf("dev %v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}
