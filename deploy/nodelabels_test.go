package deploy

import (
	"bytes"
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rackstream/rackstream/config"
)

// TestNodeLabelsScript runs the init container's script with sh and curl
// against a fake Kubernetes API server on loopback (TLS, verified with the
// CA file as in a pod) and loads the file it writes as `rackstream run` would.
func TestNodeLabelsScript(t *testing.T) {
	needTools(t, "the init container's script runs with them (its image, curlimages/curl, has them)", "sh", "curl", "sed")
	const token = "sa-token-0123456789"
	nodes := map[string]string{
		// Compact JSON as the API server sends it, with an escaped copy of
		// the label inside an annotation that must not be taken for it.
		"node-b-1": `{"kind":"Node","apiVersion":"v1","metadata":{"name":"node-b-1","labels":{"kubernetes.io/hostname":"node-b-1","topology.kubernetes.io/region":"eu-central-1","topology.kubernetes.io/zone":"eu-central-1b"},"annotations":{"example.com/last-applied":"{\"metadata\":{\"labels\":{\"topology.kubernetes.io/zone\":\"stale-zone\"}}}"}},"spec":{}}`,
		"bare":     `{"kind":"Node","apiVersion":"v1","metadata":{"name":"bare","labels":{"kubernetes.io/hostname":"bare"}}}`,
	}
	var mu sync.Mutex
	var seen []string
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"kind":"Status","code":401}`, http.StatusUnauthorized)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, "/api/v1/nodes/")
		if r.Method != http.MethodGet || !ok {
			http.Error(w, `{"kind":"Status","code":403}`, http.StatusForbidden)
			return
		}
		body, ok := nodes[name]
		if !ok {
			http.Error(w, `{"kind":"Status","code":404}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	defer api.Close()

	saDir := t.TempDir()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
	must(t, os.WriteFile(filepath.Join(saDir, "ca.crt"), caPEM, 0o600))
	must(t, os.WriteFile(filepath.Join(saDir, "token"), []byte(token), 0o600))

	shared := str(the(t, build(t, "kubernetes/init-container"), "ConfigMap", "rackstream-config").m, "data", "rackstream.properties")
	in := filepath.Join(t.TempDir(), "rackstream.properties")
	must(t, os.WriteFile(in, []byte(shared), 0o600))

	run := func(t *testing.T, node, kubeAPI string) (out string, outFile string, err error) {
		t.Helper()
		outFile = filepath.Join(t.TempDir(), "rackstream.properties")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "kubernetes/init-container/node-labels.sh")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "NODE_NAME=" + node, "KUBE_API=" + kubeAPI,
			"SA_DIR=" + saDir, "CONFIG_IN=" + in, "CONFIG_OUT=" + outFile}
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		err = cmd.Run()
		return b.String(), outFile, err
	}

	t.Run("writes the shared file with the node's zone", func(t *testing.T) {
		out, file, err := run(t, "node-b-1", api.URL)
		if err != nil {
			t.Fatalf("node-labels.sh: %v\n%s", err, out)
		}
		written, err := os.ReadFile(file)
		must(t, err)
		if !strings.HasPrefix(string(written), shared) {
			t.Errorf("the written file does not start with the shared properties:\n%s", written)
		}
		// The pod adds its cluster tag through the environment.
		cfg, err := config.Load(config.Sources{File: file, Env: []string{"RACKSTREAM_CLIENT_TAG_CLUSTER=k8s-cluster1"}})
		if err != nil {
			t.Fatalf("rackstream cannot load the written file: %v", err)
		}
		if got := cfg.ClientTags.Value("zone"); got != "eu-central-1b" {
			t.Errorf("client.tag.zone = %q, want eu-central-1b (not the annotation's stale copy)", got)
		}
		if strings.Contains(out, token) {
			t.Errorf("the script printed the token: %s", out)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 || seen[len(seen)-1] != "GET /api/v1/nodes/node-b-1" {
			t.Errorf("API requests %v, want GET /api/v1/nodes/node-b-1", seen)
		}
	})

	for _, tc := range []struct {
		name, node, api, want string
	}{
		{"fails when the node has no zone label", "bare", api.URL, "node bare has no topology.kubernetes.io/zone label"},
		{"fails when the API refuses", "missing", api.URL, "cannot read node missing"},
		{"fails when the API server's certificate is not the cluster CA's", "node-b-1", strings.Replace(api.URL, "127.0.0.1", "localhost", 1), "cannot read node node-b-1"},
		{"fails without NODE_NAME", "", api.URL, "NODE_NAME is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, file, err := run(t, tc.node, tc.api)
			if err == nil {
				t.Fatalf("node-labels.sh succeeded:\n%s", out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("output %q lacks %q", out, tc.want)
			}
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				t.Errorf("a configuration file was written despite the failure (stat: %v)", err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
