package deploy

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestYAMLSubsetParser(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []any
	}{
		{"nested mappings, comments and scalar types", `
# leading comment
a: 1   # trailing comment
b:
  c: true
  d: "quoted # not a comment"
  e: 'it''s'
  f: ~
  g: metadata.labels['topology.kubernetes.io/zone']
  h: $(POD_NAME).svc:8080
`, []any{map[string]any{"a": int64(1), "b": map[string]any{
			"c": true, "d": "quoted # not a comment", "e": "it's", "f": nil,
			"g": "metadata.labels['topology.kubernetes.io/zone']", "h": "$(POD_NAME).svc:8080"}}}},
		{"sequences indented and at the key's indentation", `
x:
  - 1
  - two
y:
- a: 1
  b: 2
- c: 3
`, []any{map[string]any{"x": []any{int64(1), "two"}, "y": []any{
			map[string]any{"a": int64(1), "b": int64(2)}, map[string]any{"c": int64(3)}}}}},
		{"sequence items holding mappings with nested blocks", `
containers:
  - name: app
    env:
      - name: A
        valueFrom:
          fieldRef:
            fieldPath: metadata.name
    ports: []
`, []any{map[string]any{"containers": []any{map[string]any{
			"name":  "app",
			"env":   []any{map[string]any{"name": "A", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}}},
			"ports": []any{},
		}}}}},
		{"literal and folded block scalars", `
lit: |
  line one
    indented # kept

  after blank
strip: |-
  no newline
fold: >-
  joined
  words
next: 1
`, []any{map[string]any{"lit": "line one\n  indented # kept\n\nafter blank\n", "strip": "no newline", "fold": "joined words", "next": int64(1)}}},
		{"flow collections and documents", `
a: [x, "y, z", 3]
b: {k: v, n: 2}
c: {}
---
d: 1
`, []any{map[string]any{"a": []any{"x", "y, z", int64(3)}, "b": map[string]any{"k": "v", "n": int64(2)}, "c": map[string]any{}}, map[string]any{"d": int64(1)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseYAML("test.yaml", tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestYAMLSubsetParserRejectsWhatItDoesNotRead(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"a tab in indentation", "a:\n\tb: 1\n", "test.yaml:2: tab in indentation"},
		{"a repeated key", "a: 1\nb: 2\na: 3\n", "test.yaml:3: key \"a\" repeated"},
		{"an anchor", "a: &x 1\n", "anchors"},
		{"an alias", "a: *x\n", "anchors"},
		{"a multi-line plain scalar", "a:\n  one\n  two\n", "test.yaml:2"},
		{"a nested flow collection", "a: [[1]]\n", "nested"},
		{"a flow collection over lines", "a: [1,\n  2]\n", "must close on its line"},
		{"bad indentation", "a:\n    b: 1\n  c: 2\n", "test.yaml:3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseYAML("test.yaml", tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestKustomizeAgrees renders each variant with kubectl's built-in kustomize,
// where kubectl is installed, and compares the objects with what the tests
// read: it checks the subset parser and the tests' kustomization resolution
// against the real tools. (Without kubectl the other tests still run; this
// one has nothing to compare with.)
func TestKustomizeAgrees(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed: nothing to compare the parser with")
	}
	for _, dir := range variants {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var stderr bytes.Buffer
			cmd := exec.Command(kubectl, "kustomize", dir)
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
			}
			rendered, err := parseYAML("kubectl kustomize "+dir, string(out))
			if err != nil {
				t.Fatalf("the subset parser cannot read kustomize's output: %v", err)
			}
			ours := build(t, dir)
			if len(rendered) != len(ours) {
				t.Fatalf("kustomize renders %d objects, the tests read %d", len(rendered), len(ours))
			}
			// Generated ConfigMaps get a content hash in kustomize's output,
			// and references to them follow.
			renamed := map[string]string{}
			for _, r := range rendered {
				for _, o := range ours {
					if n := str(r, "metadata", "name"); str(r, "kind") == "ConfigMap" && o.kind() == "ConfigMap" && n != o.name() && strings.HasPrefix(n, o.name()+"-") {
						renamed[n] = o.name()
					}
				}
			}
			for _, r := range rendered {
				r := unhash(r, renamed)
				var match *object
				for i := range ours {
					if ours[i].kind() == str(r, "kind") && ours[i].name() == str(r, "metadata", "name") {
						match = &ours[i]
					}
				}
				if match == nil {
					t.Errorf("kustomize renders %s %s, which the tests do not see", str(r, "kind"), str(r, "metadata", "name"))
					continue
				}
				if !reflect.DeepEqual(r, any(match.m)) {
					t.Errorf("%s differs from kustomize's rendering:\nkustomize %#v\ntests     %#v", match, r, match.m)
				}
			}
		})
	}
}

// unhash replaces hashed ConfigMap names with the plain ones, anywhere.
func unhash(v any, renamed map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = unhash(e, renamed)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = unhash(e, renamed)
		}
		return out
	case string:
		if n, ok := renamed[x]; ok {
			return n
		}
	}
	return v
}
