package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
)

func TestRunRejectsABadConfigurationWithExit2LikeValidate(t *testing.T) {
	file := writeValidateConfig(t,
		"application.id=app",
		"bootstrap.servers=127.0.0.1:1",
		"num.standby.replicas=-1",
		"processor.type=count",
	)
	var stderr bytes.Buffer
	code := runRun(t.Context(), []string{"--config", file}, nil, &stderr)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{"rackstream run: 2 configuration errors:", "num.standby.replicas", "processor.input.topic", file + ":"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestRunWithoutProcessorExits2(t *testing.T) {
	file := writeValidateConfig(t, "application.id=app", "bootstrap.servers=127.0.0.1:1")
	var stderr bytes.Buffer
	if code := runRun(t.Context(), []string{"--config", file}, nil, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "processor.type") {
		t.Errorf("stderr does not name processor.type:\n%s", stderr.String())
	}
}

// TestRunCountsServesQueriesAndShutsDownOnCancel runs one instance of the
// count processor as `rackstream run` does (flags, file, environment),
// queries it over HTTP, and cancels it as SIGTERM does.
func TestRunCountsServesQueriesAndShutsDownOnCancel(t *testing.T) {
	c := kafkatest.New(t)
	app := c.Name("run-count")
	topic := c.Name("run-events")
	c.CreateTopic(topic, 3, nil)
	for i := range 30 {
		c.Produce(&kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i%3)), Value: []byte("x")})
	}
	file := writeValidateConfig(t,
		"application.id="+app,
		"bootstrap.servers="+strings.Join(c.Brokers, ","),
		"processor.type=count",
		"processor.input.topic="+topic,
		"http.listen=127.0.0.1:0",
		"state.dir="+filepath.Join(t.TempDir(), "state"),
		"commit.interval.ms=200",
		"session.timeout.ms=3000",
		"shutdown.timeout.ms=10000",
		"log.format=json",
		"rack.aware.assignment.tags=zone",
	)
	env := []string{"RACKSTREAM_CLIENT_TAG_ZONE=zone-a"}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr cluster.Lines
	done := make(chan int, 1)
	go func() {
		done <- runRun(ctx, []string{"--config", file, "--set", "client.tag.cluster=c1"}, env, &stderr)
	}()

	var start map[string]any
	kafkatest.Eventually(t, time.Minute, "start-up line", func() bool {
		select {
		case code := <-done:
			t.Fatalf("run exited %d early:\n%s", code, stderr.String())
		default:
		}
		if l := cluster.JSONLogLines(stderr.String(), "rackstream instance started"); len(l) > 0 {
			start = l[0]
			return true
		}
		return false
	})
	for _, k := range []string{"instance", "endpoint", "group", "tags"} {
		if s, _ := start[k].(string); s == "" {
			t.Errorf("start-up line lacks %s: %v", k, start)
		}
	}
	if start["group"] != app || !strings.Contains(start["tags"].(string), "zone=zone-a") || !strings.Contains(start["tags"].(string), "cluster=c1") {
		t.Errorf("start-up line: %v", start)
	}
	base := "http://" + start["http"].(string)
	kafkatest.Eventually(t, 90*time.Second, "/readyz 200", func() bool {
		code, _ := cluster.GetJSON(base+"/readyz", nil)
		return code == http.StatusOK
	})
	var gen int32
	kafkatest.Eventually(t, time.Minute, "count of k1 is 10", func() bool {
		var body struct {
			Value      json.RawMessage `json:"value"`
			Role       string          `json:"role"`
			Generation int32           `json:"generation"`
		}
		code, err := cluster.GetJSON(base+"/v1/stores/count/keys/k1", &body)
		gen = body.Generation
		return err == nil && code == 200 && string(body.Value) == "10" && body.Role == "active"
	})
	// The placement line is written by a poller that may trail the
	// placement the query was answered in: wait for the line of the
	// answer's generation.
	var line map[string]any
	kafkatest.Eventually(t, 10*time.Second, fmt.Sprintf("placement line of generation %d", gen), func() bool {
		for _, l := range cluster.JSONLogLines(stderr.String(), "placement") {
			if g, _ := l["generation"].(float64); int32(g) == gen {
				line = l
				return true
			}
		}
		return false
	})
	q, _ := line["quality"].([]any)
	if len(q) != 1 || q[0].(map[string]any)["tag"] != "zone" || !strings.Contains(fmt.Sprint(line["replicas"]), start["instance"].(string)+"[cluster=c1,zone=zone-a]=3/0/0") {
		t.Errorf("placement line %v: want the zone's quality and this instance with 3 active tasks", line)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d after cancel:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not stop within 30s of cancel:\n%s", stderr.String())
	}
	if len(cluster.JSONLogLines(stderr.String(), "stopped")) != 1 {
		t.Errorf("no clean stop line:\n%s", stderr.String())
	}
}

func TestRunIsACommand(t *testing.T) {
	var out bytes.Buffer
	usage(&out)
	if !strings.Contains(out.String(), "run ") {
		t.Errorf("usage lacks run:\n%s", out.String())
	}
	var stderr bytes.Buffer
	if code := dispatch(t.Context(), []string{"run", "--help"}, nil, io.Discard, &stderr); code != 0 || !strings.Contains(stderr.String(), "--config") {
		t.Errorf("run --help: exit %d, %s", code, stderr.String())
	}
}

// TestRunAuthenticatesEveryKafkaClientWithSASL runs the count processor on a
// cluster that requires SCRAM (kfake with SASL, or the real broker's
// SASL_PLAINTEXT listener): with the right password every client the
// instance makes (group member, restore consumer, placement and admin
// clients) logs in and the counts arrive; with a wrong one run exits 1 at
// start-up naming the mechanism and the broker. The password, given through
// the environment, appears in no log line.
func TestRunAuthenticatesEveryKafkaClientWithSASL(t *testing.T) {
	sc := kafkatest.SASL(t)
	app := sc.Name("run-sasl")
	topic := sc.Name("run-sasl-events")
	sc.CreateTopic(topic, 2, nil)
	for i := range 8 {
		sc.Produce(&kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i%2)), Value: []byte("x")})
	}
	file := writeValidateConfig(t,
		"application.id="+app,
		"bootstrap.servers="+strings.Join(sc.Brokers, ","),
		"security.protocol=SASL_PLAINTEXT",
		"sasl.mechanism="+sc.Mechanism,
		"sasl.username="+sc.User,
		"processor.type=count",
		"processor.input.topic="+topic,
		"http.listen=127.0.0.1:0",
		"state.dir="+filepath.Join(t.TempDir(), "state"),
		"commit.interval.ms=200",
		"session.timeout.ms=3000",
		"log.format=json",
		"log.level=debug",
	)

	var bad cluster.Lines
	wrong := "not-" + sc.Password
	code := runRun(t.Context(), []string{"--config", file}, []string{"RACKSTREAM_SASL_PASSWORD=" + wrong}, &bad)
	if code != 1 || !strings.Contains(bad.String(), sc.Mechanism) || !strings.Contains(bad.String(), sc.Brokers[0]) {
		t.Errorf("wrong password: exit %d, want 1 with a message naming %s and %s:\n%s", code, sc.Mechanism, sc.Brokers[0], tailLines(bad.String(), 5))
	}
	if strings.Contains(bad.String(), wrong) {
		t.Error("the wrong password appears in the log")
	}

	stderr := runUntilCount(t.Context(), t, file, []string{"RACKSTREAM_SASL_PASSWORD=" + sc.Password}, "k1", "4")
	if strings.Contains(stderr, sc.Password) {
		t.Error("the password appears in the log")
	}
}

func tailLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(ls[max(0, len(ls)-n):], "\n")
}

// TestRunRefusesAnOpenListenerWithoutAToken: beyond loopback and without
// http.auth.token, run exits 2 before it connects to anything, naming the
// keys and the opt-out.
func TestRunRefusesAnOpenListenerWithoutAToken(t *testing.T) {
	for _, listen := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		file := writeValidateConfig(t, "application.id=app", "bootstrap.servers=127.0.0.1:1",
			"processor.type=count", "processor.input.topic=in", "http.listen="+listen)
		var stderr bytes.Buffer
		code := runRun(t.Context(), []string{"--config", file}, nil, &stderr)
		if code != 2 {
			t.Errorf("http.listen=%s: exit %d, want 2; stderr:\n%s", listen, code, stderr.String())
		}
		for _, want := range []string{"rackstream run: http.listen=" + listen, "http.auth.token is not set", "http.auth=none"} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("http.listen=%s: stderr lacks %q:\n%s", listen, want, stderr.String())
			}
		}
	}
	// validate says so too, as a warning.
	file := writeValidateConfig(t, "application.id=app", "bootstrap.servers=127.0.0.1:1")
	code, _, errOut := validateDispatch(t, "validate", "--config", file)
	if code != 0 || !strings.Contains(errOut, "warning: 'rackstream run' would refuse this configuration: http.listen=:8080") {
		t.Errorf("validate: exit %d, stderr:\n%s", code, errOut)
	}
}

// TestRunWithHTTPAuthNoneWarnsOnce: the explicit opt-out starts (here up to
// the point where the cancelled context stops it) with one warning.
func TestRunWithHTTPAuthNoneWarnsOnce(t *testing.T) {
	for _, tc := range []struct {
		sets  []string
		warns int
	}{
		{[]string{"http.auth=none"}, 1},
		{[]string{"http.auth.token=tok"}, 0},
	} {
		file := writeValidateConfig(t, append([]string{"application.id=app", "bootstrap.servers=127.0.0.1:1",
			"processor.type=count", "processor.input.topic=in", "http.listen=0.0.0.0:0", "log.format=json",
			"state.dir=" + filepath.Join(t.TempDir(), "state")}, tc.sets...)...)
		// Stop at the first log line: the warning comes before anything
		// else is started, so the rest of start-up only has to end.
		ctx, cancel := context.WithCancel(t.Context())
		stderr := &cancelOnWrite{cancel: cancel}
		code := runRun(ctx, []string{"--config", file}, nil, stderr)
		cancel()
		if code == 2 {
			t.Errorf("%v: refused (exit 2):\n%s", tc.sets, stderr.String())
		}
		msg := "the HTTP server answers every client that can reach it, without authentication (http.auth=none)"
		if n := len(cluster.JSONLogLines(stderr.String(), msg)); n != tc.warns {
			t.Errorf("%v: %d warnings, want %d:\n%s", tc.sets, n, tc.warns, stderr.String())
		}
	}
}

// cancelOnWrite is a log destination that cancels a context at its first
// write.
type cancelOnWrite struct {
	cluster.Lines
	cancel context.CancelFunc
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	defer c.cancel()
	return c.Lines.Write(p)
}
