package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// group is a set of `rackstream run` processes of one application, each
// with a fixed HTTP port and state directory kept across its lives, as a
// pod with a persistent volume (the driver kills and restarts them).
type group struct {
	bin, dir, config string
	instances        []*member
	// args are a member's command-line arguments; nil: `rackstream run`'s.
	args func(m *member) []string
	// set are configuration keys added to `rackstream run`'s (--set) from
	// the next start on.
	set map[string]string
	// brokerProfiles is the base URL of the broker's /debug/pprof/ when
	// the driver started it (kfake, with -trace-dir); "" otherwise.
	brokerProfiles string
}

// member is one instance across its lives.
type member struct {
	name, listen, stateDir, logPath string

	mu   sync.Mutex // guards cmd, done, id and usage
	cmd  *exec.Cmd
	done chan struct{} // closed when the current life has exited
	id   string        // the process id its /v1/metadata calls self
	// usage sums the CPU of every finished life; peak is the largest peak
	// RSS of any.
	cpu  time.Duration
	peak int64
	exit []string // how each finished life ended
	// stopped: the driver signalled the current life (so its exit is
	// expected).
	stopped bool
}

// wanted reports whether m should be running: started and not stopped by
// the driver.
func (m *member) wanted() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd != nil && !m.stopped
}

// newGroup writes the base configuration and names n instances.
func newGroup(bin, dir string, base map[string]string, n int) (*group, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, k := range sortedKeys(base) {
		fmt.Fprintf(&b, "%s=%s\n", k, base[k])
	}
	g := &group{bin: bin, dir: dir, config: filepath.Join(dir, "rackstream.properties")}
	if err := os.WriteFile(g.config, []byte(b.String()), 0o600); err != nil {
		return nil, err
	}
	for i := range n {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("i%d", i)
		g.instances = append(g.instances, &member{name: name, listen: fmt.Sprintf("127.0.0.1:%d", port),
			stateDir: filepath.Join(dir, "state-"+name), logPath: filepath.Join(dir, name+".log")})
	}
	return g, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (m *member) url() string { return "http://" + m.listen }

// start starts a new life of m.
func (g *group) start(m *member) error {
	log, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	args := []string{"run", "--config", g.config, "--set", "state.dir=" + m.stateDir,
		"--set", "http.listen=" + m.listen, "--set", "application.server=" + m.listen}
	for _, k := range sortedKeys(g.set) {
		args = append(args, "--set", k+"="+g.set[k])
	}
	if g.args != nil {
		args = g.args(m)
	}
	cmd := exec.Command(g.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// The instance reads RACKSTREAM_* as configuration: give it none.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RACKSTREAM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", m.name, err)
	}
	done := make(chan struct{})
	m.mu.Lock()
	m.cmd, m.done, m.id, m.stopped = cmd, done, "", false
	m.mu.Unlock()
	go func() {
		err := cmd.Wait()
		log.Close()
		m.mu.Lock()
		if st := cmd.ProcessState; st != nil {
			m.cpu += st.UserTime() + st.SystemTime()
			if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
				m.peak = max(m.peak, ru.Maxrss*1024)
			}
		}
		how := "exit 0"
		if err != nil {
			how = err.Error()
		}
		m.exit = append(m.exit, how)
		m.mu.Unlock()
		close(done)
	}()
	return nil
}

// signal sends sig to m's current life and waits until it has exited.
func (m *member) signal(sig syscall.Signal, within time.Duration) error {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.stopped = true
	m.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("%s never started", m.name)
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s: %w", m.name, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(within):
		return fmt.Errorf("%s did not exit within %v of %v", m.name, within, sig)
	}
}

// running reports whether m's current life runs.
func (m *member) running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// stopAll stops every running instance with SIGTERM (SIGKILL if it hangs).
func (g *group) stopAll() {
	for _, m := range g.instances {
		if m.running() {
			if err := m.signal(syscall.SIGTERM, 40*time.Second); err != nil {
				_ = m.signal(syscall.SIGKILL, 10*time.Second)
			}
		}
	}
}

// logTail is the end of m's log, for an error.
func (m *member) logTail() string {
	b, _ := os.ReadFile(m.logPath)
	return lastLines(string(b), 8)
}

// metadata is the part of /v1/metadata the driver reads.
type metadata struct {
	Generation int32  `json:"generation"`
	Self       string `json:"self"`
	Clients    []struct {
		ID       string `json:"id"`
		Endpoint string `json:"endpoint"`
	} `json:"clients"`
	Tasks []struct {
		Task    int32    `json:"task"`
		Active  string   `json:"active"`
		Standby []string `json:"standby"`
		Warmup  []string `json:"warmup"`
	} `json:"tasks"`
}

var httpClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// getJSON GETs url into v (when not nil) and returns the status code.
func getJSON(ctx context.Context, url string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if v == nil || resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(v)
}

// settled waits until every running instance is ready and they agree on a
// placement where every task has an active among them and, when standbys
// are wanted, a standby too; it returns that placement.
func (g *group) settled(ctx context.Context, standbys bool, within time.Duration) (metadata, error) {
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		md, why := g.agree(ctx, standbys)
		if why == "" {
			return md, nil
		}
		last = why
		time.Sleep(100 * time.Millisecond)
	}
	return metadata{}, fmt.Errorf("the instances did not settle within %v: %s", within, last)
}

func (g *group) agree(ctx context.Context, standbys bool) (metadata, string) {
	var up []*member
	for _, m := range g.instances {
		if m.running() {
			up = append(up, m)
		} else if m.wanted() {
			return metadata{}, fmt.Sprintf("%s exited; its log ends: %s", m.name, m.logTail())
		}
	}
	if len(up) == 0 {
		return metadata{}, "no instance runs"
	}
	var first metadata
	for i, m := range up {
		if code, err := getJSON(ctx, m.url()+"/readyz", nil); err != nil || code != http.StatusOK {
			return first, fmt.Sprintf("%s: /readyz %d %v", m.name, code, err)
		}
		var md metadata
		if code, err := getJSON(ctx, m.url()+"/v1/metadata", &md); err != nil || code != http.StatusOK {
			return first, fmt.Sprintf("%s: /v1/metadata %d %v", m.name, code, err)
		}
		m.mu.Lock()
		m.id = md.Self
		m.mu.Unlock()
		if i == 0 {
			first = md
		} else if md.Generation != first.Generation {
			return first, fmt.Sprintf("generations differ: %d and %d", first.Generation, md.Generation)
		}
	}
	if len(first.Clients) != len(up) {
		return first, fmt.Sprintf("%d clients in the placement, %d instances up", len(first.Clients), len(up))
	}
	for _, t := range first.Tasks {
		if t.Active == "" {
			return first, fmt.Sprintf("task %d has no active", t.Task)
		}
		if standbys && len(up) > 1 && len(t.Standby) == 0 {
			return first, fmt.Sprintf("task %d has no standby", t.Task)
		}
	}
	return first, ""
}

// byID returns the member whose current life has process id id.
func (g *group) byID(id string) *member {
	for _, m := range g.instances {
		m.mu.Lock()
		mid := m.id
		m.mu.Unlock()
		if mid == id {
			return m
		}
	}
	return nil
}

// usage returns the CPU and peak RSS of every finished life of m.
func (m *member) usage() (time.Duration, int64, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cpu, m.peak, append([]string(nil), m.exit...)
}
