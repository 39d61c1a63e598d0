package page_test

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// runNode runs script under Node with file as process.argv[1] and stdin
// as its standard input, and returns what it wrote. Without node on PATH
// the test is skipped (failed in CI): the browser test (e2e) covers the
// same script in Chromium.
func runNode(t *testing.T, script, file string, stdin []byte) []byte {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		kafkatest.SkipOrFail(t, "no node on PATH: the placement page's browser test (e2e) checks %s in Chromium", file)
	}
	cmd := exec.Command(node, "-e", script, file)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	return out
}
