package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
// shell beside `rackstream dev`: here a dev with no instances of its own,
// only its demo topic and producer (on kfake, or --brokers on the real
// broker). dev's Kafka address, the HTTP port and the application's names
// are replaced by the test's (the real broker keeps what earlier runs
// wrote), `go run ./cmd/rackstream` by the binary TestMain built, and the
// home directory is a fresh one, so that state.dir's default is a non-root
// user's. The output topic must then receive the counts.
func TestREADMEBuiltinRunExample(t *testing.T) {
	script := exampleBlock(t, "../README.md", "builtin-run")
	app := fmt.Sprintf("e2e-readme-%d", time.Now().UnixNano())
	args := []string{"dev", "--instances", "0", "--rate", "50", "--kafka-port", "0", "--app", app}
	if brokers := os.Getenv(kafkatest.EnvBrokers); brokers != "" {
		_ = os.Getenv(kafkatest.EnvBrokerRun)
		args = append(args, "--brokers", brokers)
	}
	dev := start(t, "rackstream dev", args...)
	var brokers []string
	kafkatest.Eventually(t, time.Minute, "dev created its demo topic", func() bool {
		if dev.Exited() {
			t.Fatalf("dev exited with %d", dev.Code())
		}
		k := devKafkaRE.FindStringSubmatch(dev.Out.String())
		if k == nil || !strings.Contains(dev.Out.String(), "producing to it only") {
			return false
		}
		brokers = strings.Split(k[1], ",")
		return true
	})
	c := kafkatest.At(t, brokers...)

	counts := app + "-my-counts"
	for _, r := range []struct{ old, new string }{
		{"127.0.0.1:9092", strings.Join(brokers, ",")},
		{"127.0.0.1:9090", freeAddr(t)},
		{"go run ./cmd/rackstream", binary},
		{"rackstream-dev-events", app + "-events"},
		{"my-counts", counts},
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
	if err := cmd.Run(); err != nil {
		t.Fatalf("the example failed: %v\n%s", err, output.String())
	}
	t.Logf("the example's output:\n%s", output.String())
	if !strings.Contains(output.String(), `"key":"user-7","value":`) {
		t.Errorf("the example did not show user-7's count")
	}
	if _, err := os.Stat(filepath.Join(home, ".cache", "rackstream")); err != nil {
		t.Errorf("no state under the user's cache directory: %v", err)
	}

	// The counts the processor emitted: each key's go up, in order (one
	// partition per key); the record cache may merge updates, so a count
	// may skip values.
	var recs []*kgo.Record
	kafkatest.Eventually(t, time.Minute, "the output topic holds counts", func() bool {
		recs = c.ConsumeAll(counts)
		return len(recs) > 0
	})
	last := map[string]int{}
	for _, r := range recs {
		n, err := strconv.Atoi(string(r.Value))
		if !strings.HasPrefix(string(r.Key), "user-") || err != nil || n <= last[string(r.Key)] {
			t.Fatalf("output record %q=%q after count %d: want user-N and a larger count", r.Key, r.Value, last[string(r.Key)])
		}
		last[string(r.Key)] = n
	}
	t.Logf("%d counts of %d keys on %s", len(recs), len(last), counts)
}
