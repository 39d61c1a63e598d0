package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// Group is a set of `rackstream run` instances of one application, sharing
// one base configuration file. Instances are added with Add and started,
// killed, stopped, frozen and restarted one by one; each keeps its state
// directory, HTTP port and log file across its lives, as a pod with a
// persistent volume does.
type Group struct {
	// Bin is the rackstream binary instances run unless they name their own.
	Bin string
	// Dir holds the base configuration, the state directories and the logs.
	Dir string
	// Config is the path of the base properties file.
	Config string

	t         testing.TB
	mu        sync.Mutex // guards instances
	instances []*Instance
}

// NewGroup writes base (properties, one key=value per entry) to
// dir/rackstream.properties and returns an empty group running bin.
func NewGroup(t testing.TB, bin, dir string, base map[string]string) *Group {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(base))
	for k := range base {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Written by harness/cluster; each instance adds its own keys with --set.\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, base[k])
	}
	conf := filepath.Join(dir, "rackstream.properties")
	if err := os.WriteFile(conf, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Group{Bin: bin, Dir: dir, Config: conf, t: t}
}

// Instance is one member of a Group across its lives (processes).
type Instance struct {
	// Name names the instance in logs and file names.
	Name string
	// Tags are its client.tag.* values.
	Tags map[string]string
	// Set holds its own configuration keys, added with --set after the
	// base file (e.g. bootstrap.servers through its own proxy).
	Set map[string]string
	// StateDir is its state.dir, kept across lives.
	StateDir string
	// Listen is its http.listen address, kept across lives.
	Listen string
	// Endpoint is its application.server: Listen, or the address of a
	// proxy in front of it.
	Endpoint string
	// LogFile receives every life's stdout and stderr.
	LogFile string
	// Bin, when not empty, is the binary of its next life instead of the
	// group's (a rolling upgrade sets it).
	Bin string
	// Proxies are the proxies every connection of the instance passes
	// (its broker listener's, its HTTP endpoint's): Isolate cuts them all.
	Proxies []*Proxy

	g     *Group
	mu    sync.Mutex // guards proc, lives and id
	proc  *Proc      // the current (or last) life
	lives []*Proc
	id    string // process id of the current life, from its start-up line
	// isolated: Isolate cut its proxies. The test's own observers
	// (Group.Metadata) skip it; Readers, as clients, do not.
	isolated bool
}

// Add adds an instance (not started) listening for HTTP on listen
// (host:port; a fixed port, so that its endpoint survives restarts).
func (g *Group) Add(name, listen string, tags map[string]string) *Instance {
	in := &Instance{
		Name:     name,
		Tags:     tags,
		Set:      map[string]string{},
		StateDir: filepath.Join(g.Dir, "state", name),
		Listen:   listen,
		Endpoint: listen,
		LogFile:  filepath.Join(g.Dir, name+".log"),
		g:        g,
	}
	g.mu.Lock()
	g.instances = append(g.instances, in)
	g.mu.Unlock()
	return in
}

// Instances returns the group's instances in the order they were added.
func (g *Group) Instances() []*Instance {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*Instance(nil), g.instances...)
}

// Up returns the instances whose current life runs (frozen ones included).
func (g *Group) Up() []*Instance {
	var up []*Instance
	for _, in := range g.Instances() {
		if in.Running() {
			up = append(up, in)
		}
	}
	return up
}

// env is the instances' environment: this process's, without RACKSTREAM_
// variables (which would configure them behind the test's back).
func env() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RACKSTREAM_") {
			out = append(out, kv)
		}
	}
	return out
}

// Start starts a new life of the instance; it fails the test when the
// instance runs already.
func (in *Instance) Start() {
	t := in.g.t
	t.Helper()
	if in.Running() {
		t.Fatalf("cluster: %s runs already", in.Name)
	}
	args := []string{"run", "--config", in.g.Config,
		"--set", "state.dir=" + in.StateDir,
		"--set", "http.listen=" + in.Listen,
		"--set", "application.server=" + in.Endpoint,
	}
	keys := make([]string, 0, len(in.Tags))
	for k := range in.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--set", "client.tag."+k+"="+in.Tags[k])
	}
	keys = keys[:0]
	for k := range in.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--set", k+"="+in.Set[k])
	}
	bin := in.Bin
	if bin == "" {
		bin = in.g.Bin
	}
	p := Start(t, in.Name, in.LogFile, env(), bin, args...)
	in.mu.Lock()
	in.proc, in.id = p, ""
	in.lives = append(in.lives, p)
	in.mu.Unlock()
}

// Proc returns the current (or last) life, nil before the first Start.
func (in *Instance) Proc() *Proc {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.proc
}

// Running reports whether the current life runs.
func (in *Instance) Running() bool {
	p := in.Proc()
	return p != nil && !p.Exited()
}

// URL is the base URL of its HTTP API as clients and peers reach it: its
// endpoint (through its proxy, if it has one).
func (in *Instance) URL() string { return "http://" + in.Endpoint }

// Isolate cuts every proxy of the instance: a network partition of the
// instance from the broker and from everyone who calls it. (It calls peers
// only on behalf of requests it receives, which the cut stops too.)
func (in *Instance) Isolate() {
	in.mu.Lock()
	in.isolated = true
	in.mu.Unlock()
	for _, p := range in.Proxies {
		p.Cut()
	}
}

// Reconnect ends Isolate.
func (in *Instance) Reconnect() {
	for _, p := range in.Proxies {
		p.Restore()
	}
	in.mu.Lock()
	in.isolated = false
	in.mu.Unlock()
}

// Isolated reports whether Isolate cut the instance off.
func (in *Instance) Isolated() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.isolated
}

// ID returns the process id of the current life ("" until its start-up
// line was read by WaitStarted).
func (in *Instance) ID() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.id
}

// Logs returns the stderr of every life, in order.
func (in *Instance) Logs() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var b strings.Builder
	for _, p := range in.lives {
		b.WriteString(p.Err.String())
		b.WriteString(p.Out.String())
	}
	return b.String()
}

// WaitStarted waits for the current life's start-up line (log.format=json)
// and records its process id; it fails the test if the life exits first.
func (in *Instance) WaitStarted(deadline time.Duration) {
	t := in.g.t
	t.Helper()
	p := in.Proc()
	kafkatest.Poll(t, deadline, 100*time.Millisecond, in.Name+" start-up line", func() bool {
		if p.Exited() {
			t.Fatalf("cluster: %s exited with %d before its start-up line:\n%s", in.Name, p.Code(), Tail(p.Err.String(), 30))
		}
		l := JSONLogLines(p.Err.String(), "rackstream instance started")
		if len(l) == 0 {
			return false
		}
		id, _ := l[0]["instance"].(string)
		in.mu.Lock()
		in.id = id
		in.mu.Unlock()
		return true
	})
}

// Ready reports whether /readyz answers 200.
func (in *Instance) Ready() bool {
	code, _ := GetJSON(in.URL()+"/readyz", nil)
	return code == 200
}

// WaitReady waits until the current life's /readyz answers 200; it fails
// the test if the life exits first.
func (in *Instance) WaitReady(deadline time.Duration) {
	t := in.g.t
	t.Helper()
	p := in.Proc()
	kafkatest.Poll(t, deadline, 100*time.Millisecond, in.Name+" ready", func() bool {
		if p.Exited() {
			t.Fatalf("cluster: %s exited with %d before it was ready:\n%s", in.Name, p.Code(), Tail(p.Err.String(), 30))
		}
		return in.Ready()
	})
}

// StartReady starts a life and waits for its start-up line and readiness.
func (in *Instance) StartReady(deadline time.Duration) {
	in.g.t.Helper()
	in.Start()
	in.WaitStarted(deadline)
	in.WaitReady(deadline)
}

// Kill is kill -9 of the current life: a crash, no shutdown code runs.
func (in *Instance) Kill() {
	in.g.t.Helper()
	in.Proc().Kill()
}

// Stop is SIGTERM, as Kubernetes stops a pod: it waits up to within for the
// exit and returns the exit code.
func (in *Instance) Stop(within time.Duration) int {
	in.g.t.Helper()
	return in.Proc().Signal(syscall.SIGTERM, within)
}

// Freeze stops the current life with SIGSTOP; Thaw resumes it.
func (in *Instance) Freeze() { in.g.t.Helper(); in.Proc().Freeze() }

// Thaw resumes a frozen life (SIGCONT).
func (in *Instance) Thaw() { in.g.t.Helper(); in.Proc().Thaw() }

// Metadata reads /v1/metadata from the first running instance that answers.
func (g *Group) Metadata() (Metadata, *Instance, error) {
	var md Metadata
	err := fmt.Errorf("no running instance")
	for _, in := range g.Up() {
		if in.Isolated() {
			continue
		}
		md = Metadata{}
		var code int
		code, err = GetJSON(in.URL()+"/v1/metadata", &md)
		if err == nil && code == 200 {
			return md, in, nil
		}
		if err == nil {
			err = fmt.Errorf("%s/v1/metadata: status %d", in.URL(), code)
		}
	}
	return md, nil, err
}

// Panics returns, per instance name, the lines of its logs (all lives)
// that show a Go panic or fatal runtime error.
func (g *Group) Panics() map[string][]string {
	out := map[string][]string{}
	for _, in := range g.Instances() {
		for _, l := range strings.Split(in.Logs(), "\n") {
			if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") || strings.Contains(l, "[recovered]") {
				out[in.Name] = append(out[in.Name], l)
			}
		}
	}
	return out
}
