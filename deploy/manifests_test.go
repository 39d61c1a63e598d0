package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// object is one Kubernetes object read from a manifest.
type object struct {
	file string // path relative to deploy/
	m    map[string]any
}

func (o object) kind() string { return str(o.m, "kind") }
func (o object) name() string { return str(o.m, "metadata", "name") }
func (o object) String() string {
	return fmt.Sprintf("%s %s (%s)", o.kind(), o.name(), o.file)
}

// get walks v by map keys (string) and list indexes (int); nil when absent.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// str is get for a string value; "" when absent or not a string.
func str(v any, path ...any) string {
	s, _ := get(v, path...).(string)
	return s
}

func list(v any, path ...any) []any {
	l, _ := get(v, path...).([]any)
	return l
}

func mapping(v any, path ...any) map[string]any {
	m, _ := get(v, path...).(map[string]any)
	return m
}

// named returns the element of l whose "name" is name, or nil.
func named(l []any, name string) map[string]any {
	for _, e := range l {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}

// the returns the one object of kind (and name, when not ""), failing the
// test when there is not exactly one.
func the(t *testing.T, objs []object, kind, name string) object {
	t.Helper()
	var found []object
	for _, o := range objs {
		if o.kind() == kind && (name == "" || o.name() == name) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s %q, found %v", kind, name, found)
	}
	return found[0]
}

// selects reports whether a label selector's matchLabels (or a Service's
// selector map) all hold in labels.
func selects(selector, labels map[string]any) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// variants are the two ways to feed the zone into an instance.
var variants = []string{"kubernetes/downward-api", "kubernetes/init-container"}

// yamlFiles lists the .yaml and .yml files under dir, sorted.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// needTools skips the test when a tool it runs is missing, except under CI
// (CI set), where .ci/run installs every tool and a missing one fails.
func needTools(t *testing.T, why string, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			kafkatest.SkipOrFail(t, "%s is not installed (.ci/run must install it): %s", tool, why)
		}
	}
}
