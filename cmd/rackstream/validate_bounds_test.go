package main

import (
	"strings"
	"testing"
)

// TestValidateRefusesWhatRunRefuses: validate applies every bound run
// applies, so a configuration it accepts does not fail when run starts.
func TestValidateRefusesWhatRunRefuses(t *testing.T) {
	base := []string{"validate", "--set", "application.id=a", "--set", "bootstrap.servers=127.0.0.1:9092", "--set", "http.listen=127.0.0.1:0",
		"--set", "processor.type=count", "--set", "processor.input.topic=in"}
	for _, tc := range []struct{ set, key string }{
		{"session.timeout.ms=1", "session.timeout.ms"},
		{"session.timeout.ms=999", "session.timeout.ms"},
		{"session.timeout.ms=2147483648", "session.timeout.ms"},
		{"num.stream.threads=65537", "num.stream.threads"},
		{"application.server=" + strings.Repeat("h", 1100) + ":80", "application.server"},
	} {
		code, _, errOut := validateDispatch(t, append(base, "--set", tc.set)...)
		if code != 2 || !strings.Contains(errOut, tc.key) {
			t.Errorf("--set %.40s: exit %d, stderr %.300q; want 2 naming %s", tc.set, code, errOut, tc.key)
		}
	}
	for _, set := range []string{"session.timeout.ms=1000", "session.timeout.ms=2147483647", "num.stream.threads=65536"} {
		if code, _, errOut := validateDispatch(t, append(base, "--set", set)...); code != 0 {
			t.Errorf("--set %s: exit %d, stderr %.300q; want 0", set, code, errOut)
		}
	}
}

// TestValidateWarnsOfWhatOnlyRunRequires: a configuration without a
// processor is valid for a program that brings its own topology, but run
// refuses it: validate says so, as it does for an exposed HTTP server.
func TestValidateWarnsOfWhatOnlyRunRequires(t *testing.T) {
	code, _, errOut := validateDispatch(t, "validate", "--set", "application.id=a", "--set", "bootstrap.servers=127.0.0.1:9092", "--set", "http.listen=127.0.0.1:0")
	if code != 0 || !strings.Contains(errOut, "'rackstream run' would refuse") || !strings.Contains(errOut, "processor.type") {
		t.Errorf("exit %d, stderr %q; want 0 and a warning that run needs processor.type", code, errOut)
	}
}
