package deploy

// The manifests are read with the tools Kubernetes itself uses, not with a
// parser of our own: documents are split with apimachinery's YAML reader,
// every Kubernetes object is decoded strictly (unknown or duplicate fields
// are errors) into its type from k8s.io/api, and the variants are rendered
// with kustomize's Go API (sigs.k8s.io/kustomize/api/krusty), which is what
// `kubectl apply -k` runs. The tests then look at the objects as plain maps
// (object.m): numbers are int64 (or float64 when not whole), booleans,
// strings and nil as in YAML.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	kustomize "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kubeTypes maps apiVersion and kind to the Go type a manifest of that
// kind is decoded into. A kind not listed is an error: add its type when a
// manifest needs a new kind.
var kubeTypes = map[string]func() any{
	"v1/Namespace":                  func() any { return new(corev1.Namespace) },
	"v1/ServiceAccount":             func() any { return new(corev1.ServiceAccount) },
	"v1/ConfigMap":                  func() any { return new(corev1.ConfigMap) },
	"v1/Secret":                     func() any { return new(corev1.Secret) },
	"v1/Service":                    func() any { return new(corev1.Service) },
	"apps/v1/StatefulSet":           func() any { return new(appsv1.StatefulSet) },
	"policy/v1/PodDisruptionBudget": func() any { return new(policyv1.PodDisruptionBudget) },
	"rbac.authorization.k8s.io/v1/ClusterRole":        func() any { return new(rbacv1.ClusterRole) },
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding": func() any { return new(rbacv1.ClusterRoleBinding) },
	"rbac.authorization.k8s.io/v1/Role":               func() any { return new(rbacv1.Role) },
	"rbac.authorization.k8s.io/v1/RoleBinding":        func() any { return new(rbacv1.RoleBinding) },
	"kustomize.config.k8s.io/v1beta1/Kustomization":   func() any { return new(kustomize.Kustomization) },
}

// decodeKube decodes one Kubernetes document strictly into its API type,
// and returns it as a plain map.
func decodeKube(doc []byte) (map[string]any, error) {
	m, err := plainYAML(doc)
	if err != nil {
		return nil, err
	}
	api, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	newObj, ok := kubeTypes[api+"/"+kind]
	if !ok {
		return nil, fmt.Errorf("apiVersion %q kind %q: not a type the tests know (add it to kubeTypes)", api, kind)
	}
	if err := yaml.UnmarshalStrict(doc, newObj()); err != nil {
		return nil, fmt.Errorf("%s %v: %w", kind, m["metadata"], err)
	}
	return m, nil
}

// plainYAML decodes one YAML document into maps, lists and scalars,
// rejecting duplicate keys.
func plainYAML(doc []byte) (map[string]any, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	m, ok := numbers(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a document that is not a mapping: %.40q", doc)
	}
	return m, nil
}

// numbers turns json.Numbers into int64, or float64 when not whole.
func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// yamlDocs splits a YAML file into its documents, skipping empty ones.
func yamlDocs(t *testing.T, rel string) [][]byte {
	t.Helper()
	f, err := os.Open(rel)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if len(bytes.TrimSpace(stripYAMLComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

// stripYAMLComments drops whole-line comments, to tell a document of
// comments only (nothing to decode) from a real one.
func stripYAMLComments(doc []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			out = append(out, l...)
			out = append(out, '\n')
		}
	}
	return out
}

// readYAMLFile reads a YAML file of deploy/ (path relative to deploy/) as
// plain maps; Kubernetes manifests under kubernetes/ are also decoded
// strictly into their API types.
func readYAMLFile(t *testing.T, rel string) []any {
	t.Helper()
	var out []any
	for i, doc := range yamlDocs(t, rel) {
		var m map[string]any
		var err error
		if isKubeFile(rel) {
			m, err = decodeKube(doc)
		} else {
			m, err = plainYAML(doc)
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", rel, i+1, err)
		}
		out = append(out, m)
	}
	return out
}

func isKubeFile(rel string) bool { return strings.HasPrefix(rel, "kubernetes/") }

// build renders a kustomization directory with kustomize, as
// `kubectl apply -k` does, and decodes every object strictly. Generated
// ConfigMaps carry kustomize's content hash in their name, and references
// to them follow it.
func build(t *testing.T, dir string) []object {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []object
	for _, r := range rm.Resources() {
		doc, err := r.AsYAML()
		if err != nil {
			t.Fatalf("kustomize build %s: %s: %v", dir, r.CurId(), err)
		}
		m, err := decodeKube(doc)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		out = append(out, object{file: dir, m: m})
	}
	return out
}

// The decoding the manifest tests rely on refuses what Kubernetes would
// refuse or silently drop: a misspelt field, a duplicate key, a kind the
// tests do not know.
func TestManifestDecodingIsStrict(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"misspelt field", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: x\nspec:\n  replica: 3\n", `unknown field "replica"`},
		{"duplicate key", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  name: y\n", "already set"},
		{"wrong type", "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  ports: 8080\n", "cannot unmarshal"},
		{"unknown kind", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n", "not a type the tests know"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeKube([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("decodeKube = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if m, err := decodeKube([]byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  ports:\n    - port: 8080\n")); err != nil || get(m, "spec", "ports", 0, "port") != int64(8080) {
		t.Errorf("a valid Service: %v, %v", m, err)
	}
}
