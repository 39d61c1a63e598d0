package kafkatest

import (
	"fmt"
	"os"
	"testing"
)

// EnvCI is the variable CI systems set: CI=true (GitHub Actions, GitLab,
// .ci/run), CI=1 (others). Any non-empty value means a CI run, where every
// test must run: .ci/run installs what the tests need.
const EnvCI = "CI"

// CI reports whether this is a CI run: CI is set to any non-empty value.
// It is the one test of the variable in Go; deploy/local/test.sh tests it
// the same way ([[ -n ${CI:-} ]]).
func CI() bool { return os.Getenv(EnvCI) != "" }

// SkipOrFail ends a test that cannot run here for want of something
// outside the repository (a tool, a broker's credentials): outside CI it
// skips, saying why; under CI it fails, since a skip there would hide a
// test that never ran.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("%s (%s=%q: under CI this test must run)", msg, EnvCI, os.Getenv(EnvCI))
	}
	t.Skip(msg + " (skipped outside CI; under CI this fails)")
}
