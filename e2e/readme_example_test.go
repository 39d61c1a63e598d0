package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// exampleBlock returns the shell block that follows the line
// `<!-- example: NAME -->` in the Markdown file at path.
func exampleBlock(t *testing.T, path, name string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	marker := "<!-- example: " + name + " -->"
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != marker {
			continue
		}
		if !sc.Scan() || strings.TrimSpace(sc.Text()) != "```sh" {
			t.Fatalf("%s: the line after %s is not a ```sh fence", path, marker)
		}
		var block strings.Builder
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "```" {
				return block.String()
			}
			block.WriteString(sc.Text() + "\n")
		}
		t.Fatalf("%s: the block after %s has no closing fence", path, marker)
	}
	t.Fatalf("%s has no line %s", path, marker)
	return ""
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestREADMEBuiltinRunExample runs README.md's built-in example, the
// block under `<!-- example: builtin-run -->`, as a user pastes it into a
// shell: dev's Kafka address, the HTTP port and the topic names are
// replaced by the test's (the real broker keeps what earlier runs wrote),
// `go run ./cmd/rackstream` by the binary TestMain built, and the home
// directory is a fresh one, so that state.dir's default is a non-root
// user's. The output topic must then hold every key's count.
func TestREADMEBuiltinRunExample(t *testing.T) {
	c := kafkatest.New(t)
	script := exampleBlock(t, "../README.md", "builtin-run")
	app, out := c.Name("readme-clicks"), c.Name("readme-click-counts")
	for _, r := range []struct{ old, new string }{
		{"127.0.0.1:9092", strings.Join(c.Brokers, ",")},
		{"127.0.0.1:9090", freeAddr(t)},
		{"go run ./cmd/rackstream", binary},
		{"click-counts", out}, // before "clicks", which it does not contain
		{"clicks", app},
	} {
		if !strings.Contains(script, r.old) {
			t.Fatalf("the example no longer has %q, which the test replaces:\n%s", r.old, script)
		}
		script = strings.ReplaceAll(script, r.old, r.new)
	}

	dir, home := t.TempDir(), t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RACKSTREAM_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			env = append(env, kv)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, append(env, "HOME="+home)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	// The script starts `run` in the background: the whole process group
	// goes when the script ends or times out.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 30 * time.Second
	t.Cleanup(func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	err := cmd.Run()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s", err, output.String())
	}
	t.Logf("the example's output:\n%s", output.String())

	if _, err := os.Stat(filepath.Join(home, ".cache", "rackstream")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	} else if err != nil {
		t.Errorf("no state under the user's cache directory %s: %v", filepath.Join(home, ".cache", "rackstream"), err)
	}

	// Every count the processor emitted, in order per key: the last one is
	// the key's count.
	want := map[string]string{"alice": "2", "bob": "1"}
	got := map[string]string{}
	kafkatest.Eventually(t, time.Minute, "the output topic holds every key's count", func() bool {
		for _, r := range c.ConsumeAll(out) {
			got[string(r.Key)] = string(r.Value)
		}
		return got["alice"] == want["alice"] && got["bob"] == want["bob"]
	})
	if len(got) != len(want) {
		t.Errorf("output keys %v, want %v", got, want)
	}
}
