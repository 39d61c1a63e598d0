package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

// The handler without Kafka, through the TestDriver.
func TestTopology(t *testing.T) {
	topo, pages := Topology("pages", "views")
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"ann", "/home"}, {"ann", "/cart"}, {"ann", "/home"}, {"bob", "/x"}} {
		if err := d.PipeRecord(&kgo.Record{Topic: "views", Partition: -1, Key: []byte(kv[0]), Value: []byte(kv[1])}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.PipeRecord(&kgo.Record{Topic: "views", Partition: -1, Key: []byte("bob")}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := processor.Lookup(d, pages, "ann"); err != nil || got["/home"] != 2 || got["/cart"] != 1 || len(got) != 2 {
		t.Errorf("ann: %v, %v; want /home 2, /cart 1", got, err)
	}
	if _, found, _ := processor.Lookup(d, pages, "bob"); found {
		t.Error("bob is still in the store after a tombstone")
	}
}

// TestExampleRunsAsTheService builds the example, runs it against the test
// cluster (kfake, or the real broker under RACKSTREAM_TEST_BROKERS) and uses
// what the service gives it: an HTTP key query, /readyz, /metrics, and a
// clean exit on SIGTERM.
func TestExampleRunsAsTheService(t *testing.T) {
	c := kafkatest.New(t)
	input, app := c.Name("page-views"), c.Name("page-stats")
	c.CreateTopic(input, 2, nil)

	bin := filepath.Join(t.TempDir(), "service")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--input", input,
		"--set", "application.id="+app, "--set", "bootstrap.servers="+strings.Join(c.Brokers, ","),
		"--set", "http.listen=127.0.0.1:0", "--set", "state.dir="+t.TempDir(), "--set", "log.format=json",
		"--set", "session.timeout.ms=6000", "--set", "replication.factor=1", "--set", "commit.interval.ms=100")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan map[string]any, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				select {
				case lines <- m:
				default: // the test reads only the first lines it needs
				}
			} else {
				t.Logf("stderr: %s", sc.Text())
			}
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// The start-up line names the HTTP listener.
	var base string
	for base == "" {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatalf("the example exited before starting: %v", <-exited)
			}
			if m["msg"] == "rackstream starting" {
				l, _ := m["listeners"].(map[string]any)
				base, _ = l["http"].(string)
			}
		case <-ctx.Done():
			t.Fatal("no start-up line")
		}
	}
	t.Logf("the example serves %s", base)

	var recs []*kgo.Record
	for _, kv := range [][2]string{{"ann", "/home"}, {"ann", "/cart"}, {"ann", "/home"}, {"bob", "/x"}} {
		recs = append(recs, &kgo.Record{Topic: input, Key: []byte(kv[0]), Value: []byte(kv[1])})
	}
	c.Produce(recs...)

	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(b)
	}
	kafkatest.Eventually(t, 2*time.Minute, "/readyz answers 200", func() bool {
		code, _ := get("/readyz")
		return code == http.StatusOK
	})
	var answer struct {
		Value map[string]int64 `json:"value"`
	}
	kafkatest.Eventually(t, 2*time.Minute, "ann's page views are queryable", func() bool {
		code, body := get("/v1/stores/pages/keys/ann")
		answer.Value = nil
		return code == http.StatusOK && json.Unmarshal([]byte(body), &answer) == nil &&
			answer.Value["/home"] == 2 && answer.Value["/cart"] == 1
	})
	code, metrics := get("/metrics")
	for _, want := range []string{"rackstream_build_info{", "rackstream_process_records_total", "go_goroutines"} {
		if code != http.StatusOK || !strings.Contains(metrics, want) {
			t.Errorf("/metrics (HTTP %d) lacks %s", code, want)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the example exited with %v after SIGTERM, want 0", err)
		}
	case <-ctx.Done():
		t.Fatal("the example did not exit after SIGTERM")
	}
}
