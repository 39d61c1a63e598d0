package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKeepLogsCopiesTheProcessesLogsNotTheStores: the instances' and the
// kfake process's logs outlive the work directory; the stores' LevelDB
// journals (also *.log) stay behind.
func TestKeepLogsCopiesTheProcessesLogsNotTheStores(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "rackstream-bench-1")
	files := map[string]string{
		"cluster-kafka/i0.log":                          "i0 on kafka",
		"cluster-kfake/i2.log":                          "i2 on kfake",
		"kfakebroker.log":                               "kfake",
		"cluster-kafka/state-i0/app/3/count/000001.log": "a LevelDB journal",
		"cluster-kafka/rackstream.properties":           "not a log",
	}
	for name, body := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	dir, err := keepLogs(work, time.Date(2026, 12, 5, 6, 44, 4, 0, time.UTC), &out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(dir), "rackstream-bench-logs-20261205-064404-") || filepath.Dir(dir) != root {
		t.Fatalf("kept in %s, want a new rackstream-bench-logs-20261205-064404-* beside the work directory", dir)
	}
	if !strings.Contains(out.String(), dir) {
		t.Fatalf("the log does not say where: %q", out.String())
	}
	var kept []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			kept = append(kept, rel)
			if body, _ := os.ReadFile(p); string(body) != files[rel] {
				t.Errorf("%s holds %q, want %q", rel, body, files[rel])
			}
		}
		return nil
	})
	slices.Sort(kept)
	want := []string{"cluster-kafka/i0.log", "cluster-kfake/i2.log", "kfakebroker.log"}
	if !slices.Equal(kept, want) {
		t.Fatalf("kept %v, want %v", kept, want)
	}

	empty := filepath.Join(root, "rackstream-bench-2")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if dir, err := keepLogs(empty, time.Now(), &out); err != nil || dir != "" {
		t.Fatalf("a run with no logs kept %q (%v), want nothing", dir, err)
	}
}
