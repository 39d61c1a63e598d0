package config

import (
	"slices"
	"strings"
	"testing"
)

func TestLoopbackOnly(t *testing.T) {
	for listen, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.1.2.3:0": true, "[::1]:8080": true, "localhost:8080": true, "LocalHost:1": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:8080": false, "10.0.0.7:8080": false, "example.com:8080": false,
		"[fe80::1%eth0]:8080": false, "[::1%lo]:8080": true, "nonsense": false,
	} {
		if got := (HTTP{Listen: listen}).LoopbackOnly(); got != want {
			t.Errorf("LoopbackOnly(%q) = %v, want %v", listen, got, want)
		}
	}
}

// TestAnOpenListenerNeedsATokenOrAnExplicitNone is the rule `rackstream
// run` applies: beyond loopback, a token or http.auth=none.
func TestAnOpenListenerNeedsATokenOrAnExplicitNone(t *testing.T) {
	load := func(sets ...string) HTTP {
		t.Helper()
		return mustLoad(t, Sources{Set: append(slices.Clone(required), sets...)}).HTTP
	}
	h := load() // the default http.listen, :8080, with no token
	err := h.CheckExposure()
	if err == nil {
		t.Fatal("the default listener without a token passes")
	}
	for _, want := range []string{"http.listen=:8080", "http.auth.token", "http.auth=none"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if h.Open() {
		t.Error("an unauthenticated listener that run refuses counts as open on purpose")
	}
	for _, sets := range [][]string{
		{"http.auth.token=t"},
		{"http.listen=127.0.0.1:8080"},
		{"http.listen=[::1]:0"},
		{"http.auth=none"},
		{"http.tls.cert=/c.pem", "http.tls.key=/k.pem", "http.tls.client.auth=require", "http.tls.client.ca=/ca.pem"},
	} {
		if err := load(sets...).CheckExposure(); err != nil {
			t.Errorf("%v: %v", sets, err)
		}
	}
	if load("http.tls.cert=/c.pem", "http.tls.key=/k.pem", "http.tls.client.auth=request", "http.tls.client.ca=/ca.pem").CheckExposure() == nil {
		t.Error("http.tls.client.auth=request (a certificate is optional) passes as authentication")
	}
	if !load("http.auth=none").Open() || load("http.auth=none", "http.listen=127.0.0.1:0").Open() || load("http.auth.token=t").Open() {
		t.Error("Open is true exactly for http.auth=none beyond loopback")
	}
	errs := loadErrors(t, Sources{Set: append(slices.Clone(required), "http.auth=none", "http.auth.token=tok-123")})
	if len(errs) != 1 || !strings.Contains(errs[0], "http.auth=none but http.auth.token is set") || strings.Contains(errs[0], "tok-123") {
		t.Errorf("none with a token: %q", errs)
	}
}
