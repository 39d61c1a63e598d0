package kafkatest_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// TestCIIsAnyNonEmptyValue: CI=1 is as much a CI run as CI=true (it used
// to skip the real-broker suite quietly).
func TestCIIsAnyNonEmptyValue(t *testing.T) {
	for _, tc := range []struct {
		value string
		ci    bool
	}{{"", false}, {"true", true}, {"1", true}, {"yes", true}} {
		t.Setenv(kafkatest.EnvCI, tc.value)
		if got := kafkatest.CI(); got != tc.ci {
			t.Errorf("CI=%q: CI() = %v, want %v", tc.value, got, tc.ci)
		}
		ft := run(func(tb testing.TB) { kafkatest.SkipOrFail(tb, "kcat is %s", "missing") })
		if want := map[bool]string{false: "skip", true: "fatal"}[tc.ci]; ft.ended != want || !strings.Contains(ft.msg, "kcat is missing") {
			t.Errorf("CI=%q: SkipOrFail ended by %q (%q), want %q with the reason", tc.value, ft.ended, ft.msg, want)
		}
	}
}

// ciChecks are the ways a Go file or a shell script can test the CI
// variable by itself: a Go lookup of it anywhere but kafkatest's ci.go, or
// a shell comparison of it with a value (only -z/-n tests are right).
var ciChecks = map[string]*regexp.Regexp{
	"go": regexp.MustCompile(`(Getenv|LookupEnv)\(\s*("CI"|(kafkatest\.)?EnvCI)\s*\)`),
	"sh": regexp.MustCompile(`\$\{?CI(:-[^}]*)?\}?"?\s*(==|!=|=)\s*"?\w`),
}

// badCIChecks returns the lines of text that test CI by themselves.
func badCIChecks(kind, text string) []string {
	var bad []string
	for _, line := range strings.Split(text, "\n") {
		if ciChecks[kind].MatchString(line) {
			bad = append(bad, strings.TrimSpace(line))
		}
	}
	return bad
}

func TestBadCIChecksAreFound(t *testing.T) {
	for _, tc := range []struct{ kind, line string }{
		{"go", `if os.Getenv("CI") == "true" {`},
		{"go", `_, ok := os.LookupEnv( "CI" )`},
		{"sh", `if ((rc == 2)) && [[ ${CI:-} != true ]]; then`},
		{"sh", `[ "$CI" = 1 ] && exit 1`},
	} {
		if len(badCIChecks(tc.kind, tc.line)) != 1 {
			t.Errorf("%s line %q not flagged", tc.kind, tc.line)
		}
	}
	for _, tc := range []struct{ kind, line string }{
		{"go", `if kafkatest.CI() {`},
		{"sh", `if ((rc == 2)) && [[ -z ${CI:-} ]]; then`},
		{"sh", `export CI=${CI:-true}`},
	} {
		if bad := badCIChecks(tc.kind, tc.line); len(bad) != 0 {
			t.Errorf("%s line %q flagged", tc.kind, tc.line)
		}
	}
}

// TestEveryCICheckUsesTheHelper scans the repository: every Go test of CI
// goes through kafkatest.CI (or SkipOrFail), and every shell script tests
// it for being non-empty, so that all agree on what a CI run is.
func TestEveryCICheckUsesTheHelper(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root %s: %v", root, err)
	}
	scanned := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if n := d.Name(); path != root && (n == ".git" || n == "node_modules" || n == "vendor" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		kind := ""
		switch {
		case filepath.Dir(rel) == filepath.Join("harness", "kafkatest") && strings.HasPrefix(d.Name(), "ci"):
			return nil // the helper, and this test's own examples
		case strings.HasSuffix(path, ".go"):
			kind = "go"
		case strings.HasSuffix(path, ".sh"), d.Name() == "Makefile", rel == filepath.Join(".ci", "run"):
			kind = "sh"
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		for _, line := range badCIChecks(kind, string(b)) {
			t.Errorf("%s tests CI by itself (%q): use kafkatest.CI / kafkatest.SkipOrFail, or [[ -n ${CI:-} ]] in shell", rel, line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 50 {
		t.Fatalf("scanned %d files under %s, want the whole repository", scanned, root)
	}
}
