package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

// readYAMLFile parses a file of deploy/ (path relative to deploy/).
func readYAMLFile(t *testing.T, rel string) []any {
	t.Helper()
	b, err := os.ReadFile(rel)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := parseYAML(rel, string(b))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return docs
}

// build resolves a kustomization directory the way `kubectl apply -k` does
// for the features the manifests use: resources (files and directories with
// their own kustomization.yaml) and configMapGenerator from files. Generated
// ConfigMaps keep their plain name (kustomize adds a content hash and
// rewrites the references to it).
func build(t *testing.T, dir string) []object {
	t.Helper()
	docs := readYAMLFile(t, filepath.Join(dir, "kustomization.yaml"))
	if len(docs) != 1 || str(docs[0], "kind") != "Kustomization" {
		t.Fatalf("%s/kustomization.yaml: want one Kustomization document", dir)
	}
	k := docs[0]
	var out []object
	for _, r := range list(k, "resources") {
		rel := filepath.Join(dir, r.(string))
		fi, err := os.Stat(rel)
		if err != nil {
			t.Fatalf("%s/kustomization.yaml: resource %s: %v", dir, r, err)
		}
		if fi.IsDir() {
			out = append(out, build(t, rel)...)
			continue
		}
		for _, d := range readYAMLFile(t, rel) {
			m, ok := d.(map[string]any)
			if !ok {
				t.Fatalf("%s: a document that is not a mapping", rel)
			}
			out = append(out, object{file: rel, m: m})
		}
	}
	for _, g := range list(k, "configMapGenerator") {
		data := map[string]any{}
		for _, f := range list(g, "files") {
			b, err := os.ReadFile(filepath.Join(dir, f.(string)))
			if err != nil {
				t.Fatalf("%s/kustomization.yaml: configMapGenerator %s: %v", dir, str(g, "name"), err)
			}
			data[filepath.Base(f.(string))] = string(b)
		}
		out = append(out, object{file: filepath.Join(dir, "kustomization.yaml"), m: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": str(g, "name"), "namespace": str(g, "namespace")},
			"data":     data,
		}})
	}
	return out
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
