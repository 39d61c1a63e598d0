package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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

// proc is a rackstream process the test started.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser // stdin
	out  *lines         // stdout
	err  *lines         // stderr
	done chan struct{}
	code int
}

// lines collects a stream's output, safe for the copier and the test.
type lines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs the binary with args, its stdin a pipe (proc.in); the process
// is killed when the test ends if it is still running.
func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, out: &lines{}, err: &lines{}, done: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.err
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		err := p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		if err != nil && p.code == 0 {
			p.code = -1
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s stdout (tail):\n%s", name, tail(p.out.String(), 40))
			t.Logf("%s stderr (tail):\n%s", name, tail(p.err.String(), 40))
		}
	})
	return p
}

func tail(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig and waits up to within for the process to exit,
// returning its exit code.
func (p *proc) signal(sig syscall.Signal, within time.Duration) int {
	p.t.Helper()
	// os.ErrProcessDone: it has exited (an earlier signal), and p.done
	// closes once Wait has seen it.
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) && !p.exited() {
		p.t.Fatalf("signal %s: %v", p.name, err)
	}
	select {
	case <-p.done:
		return p.code
	case <-time.After(within):
		p.t.Fatalf("%s did not exit within %v of %v", p.name, within, sig)
		return -1
	}
}

// jsonLogLines returns the JSON log lines in s whose msg is msg.
func jsonLogLines(s, msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// getJSON GETs url and decodes a JSON answer into v (when not nil).
func getJSON(url string, v any) (int, error) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, v); err != nil {
			return resp.StatusCode, fmt.Errorf("%s: %w (body %q)", url, err, b)
		}
	}
	return resp.StatusCode, nil
}

func post(url string) (int, string, error) {
	resp, err := httpClient.Post(url, "application/json", nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// metadata is the part of /v1/metadata the tests read.
type metadata struct {
	Generation int32  `json:"generation"`
	Self       string `json:"self"`
	Clients    []struct {
		ID       string            `json:"id"`
		Endpoint string            `json:"endpoint"`
		Tags     map[string]string `json:"tags"`
	} `json:"clients"`
	Tasks []struct {
		Task    int32    `json:"task"`
		Active  string   `json:"active"`
		Standby []string `json:"standby"`
	} `json:"tasks"`
	// ProbingRebalanceNeeded: warmups are catching up, and a rebalance
	// will move their tasks when they have; the placement is not settled.
	ProbingRebalanceNeeded bool `json:"probing_rebalance_needed"`
	Quality                struct {
		Dimensions []struct {
			Tag            string `json:"tag"`
			Values         int    `json:"values"`
			TasksRepeating int    `json:"tasks_repeating"`
		} `json:"dimensions"`
		StandbyShortfall int `json:"standby_shortfall"`
	} `json:"quality"`
}

func (m *metadata) client(id string) (endpoint string, tags map[string]string) {
	for _, c := range m.Clients {
		if c.ID == id {
			return c.Endpoint, c.Tags
		}
	}
	return "", nil
}

// spreadProblem returns why m is not a settled placement of tasks tasks on
// clients clients with one active and standbys standbys per task in
// distinct values of tag, or "" when it is.
func (m *metadata) spreadProblem(tasks, clients, standbys int, tag string) string {
	if len(m.Tasks) != tasks || len(m.Clients) != clients {
		return fmt.Sprintf("%d tasks on %d clients, want %d on %d", len(m.Tasks), len(m.Clients), tasks, clients)
	}
	for _, t := range m.Tasks {
		if t.Active == "" || len(t.Standby) != standbys {
			return fmt.Sprintf("task %d: active %q, %d standbys", t.Task, t.Active, len(t.Standby))
		}
		seen := map[string]bool{}
		for _, id := range append([]string{t.Active}, t.Standby...) {
			_, tags := m.client(id)
			seen[tags[tag]] = true
		}
		if len(seen) != 1+standbys {
			return fmt.Sprintf("task %d: replicas in %d distinct %ss, want %d", t.Task, len(seen), tag, 1+standbys)
		}
	}
	return ""
}

// keyAnswer is a /v1/stores/{store}/keys/{key} answer.
type keyAnswer struct {
	Value    json.RawMessage `json:"value"`
	Task     int32           `json:"task"`
	ServedBy string          `json:"served_by"`
	Role     string          `json:"role"`
	// Generation is the placement generation of the instance that served
	// the answer.
	Generation int32 `json:"generation"`
}

// scrape reads the /metrics page at url.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// metricValue returns the value of the gauge or counter series of family
// name whose labels include the given name=value pairs, and whether there
// is exactly one.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	var v float64
	n := 0
next:
	for _, m := range fams[name].GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
			}
			if !found {
				continue next
			}
		}
		n++
		v = m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
	}
	return v, n == 1
}
