package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModuleRoot returns the directory of this module's go.mod (the tree the
// test runs in).
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("cluster: cannot find the module root (go env GOMOD: %q, %v)", gomod, err)
	}
	return filepath.Dir(gomod), nil
}

// Build builds the rackstream binary of this tree into dir and returns its
// path. It runs from TestMain, before any test: it takes no testing.TB.
func Build(dir string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return buildIn(root, filepath.Join(dir, "rackstream"))
}

// BuildRevision builds the rackstream binary of git revision rev of this
// tree's repository into dir, from a `git archive` of it (the work tree is
// untouched), and returns its path: an earlier release, for upgrade tests.
func BuildRevision(dir, rev string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	src := filepath.Join(dir, "src-"+rev)
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, rev, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cluster: git archive %s: %v\n%s", rev, err, out)
	}
	return buildIn(src, filepath.Join(dir, "rackstream-"+rev))
}

func buildIn(root, out string) (string, error) {
	build := exec.Command("go", "build", "-o", out, "./cmd/rackstream")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cluster: building rackstream in %s: %v\n%s", root, err, b)
	}
	return out, nil
}
