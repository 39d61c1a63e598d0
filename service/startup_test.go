package service

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/harness/kafkatest"
)

// syncBuffer is a log sink the instance's goroutines write while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the JSON log lines with the given message.
func (s *syncBuffer) lines(t *testing.T, msg string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Bytes())
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestStartupLineAndBuildInfo: the first line an instance logs names the
// build, every non-default setting (secrets masked) and its listeners;
// durations are Go duration strings in JSON logs; /metrics has
// rackstream_build_info.
func TestStartupLineAndBuildInfo(t *testing.T) {
	c := kafkatest.New(t)
	in, app := c.Name("startup-in"), c.Name("startup")
	c.CreateTopic(in, 1, nil)
	const token = "startup-line-secret-token"
	cfg := load(t, "application.id="+app, "bootstrap.servers="+strings.Join(c.Brokers, ","),
		"processor.type=count", "processor.input.topic="+in, "session.timeout.ms=6000", "replication.factor=1",
		"http.auth.token="+token)
	logs := new(syncBuffer)
	inst, err := New(Options{Config: cfg, Logger: NewLogger(logs, config.LogJSON, cfg.LogLevel), ClientOpts: c.ClientOpts()})
	if err != nil {
		t.Fatal(err)
	}
	stop := runInstance(t, inst)
	// Ready: started, joined and its tasks restored, so that stopping it is
	// a shutdown, not a start-up cut short.
	kafkatest.Eventually(t, time.Minute, "the instance is ready", func() bool { ok, _ := inst.Ready(); return ok })
	stop()

	starting := logs.lines(t, "rackstream starting")
	if len(starting) != 1 {
		t.Fatalf("%d start-up lines, want 1", len(starting))
	}
	line := starting[0]
	build, _ := line["build"].(map[string]any)
	if build["version"] == nil || build["revision"] == nil || !strings.HasPrefix(build["go"].(string), "go1.") {
		t.Errorf("build = %v, want version, revision and go", line["build"])
	}
	settings, _ := line["settings"].(map[string]any)
	if settings["processor.type"] != "count" || settings["application.id"] != app {
		t.Errorf("settings = %v, want the keys set", settings)
	}
	if settings["http.auth.token"] != "[hidden]" {
		t.Errorf("http.auth.token logged as %v, want [hidden]", settings["http.auth.token"])
	}
	if _, ok := settings["commit.interval.ms"]; ok {
		t.Errorf("a default setting is logged: %v", settings)
	}
	listeners, _ := line["listeners"].(map[string]any)
	if listeners["http"] != "http://"+inst.Addr().String() || listeners["endpoint"] != inst.Endpoint() {
		t.Errorf("listeners = %v, want http://%s", listeners, inst.Addr())
	}
	if kafka, _ := line["kafka"].(map[string]any); kafka["brokers"] == nil {
		t.Errorf("kafka = %v, want the brokers", line["kafka"])
	}
	if strings.Contains(logs.b.String(), token) {
		t.Error("the token is in the log")
	}

	down := logs.lines(t, "shutting down")
	if len(down) != 1 || down[0]["timeout"] != cfg.ShutdownTimeout.String() {
		t.Errorf("shutting down lines %v, want timeout %q (a duration string, not nanoseconds)", down, cfg.ShutdownTimeout)
	}

	fams, err := inst.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range fams {
		have[f.GetName()] = true
	}
	// The build, and the live runtime's balancer counters (hostile member
	// claims included: issue 13 items 2 and 3).
	for _, name := range []string{"rackstream_build_info", "rackstream_balancer_checkpoints_beyond_end_total", "rackstream_balancer_invalid_endpoints_total"} {
		if !have[name] {
			t.Errorf("no %s in the registry", name)
		}
	}
}
