package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rackstream/rackstream/harness/cluster"
)

// binary is the rackstream binary TestMain builds.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rackstream-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "rackstream")
	build := exec.Command("go", "build", "-o", binary, "../cmd/rackstream")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building rackstream:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// start runs the binary with args (see cluster.Start); the process is
// killed when the test ends if it is still running.
func start(t *testing.T, name string, args ...string) *cluster.Proc {
	t.Helper()
	return cluster.Start(t, name, "", nil, binary, args...)
}
