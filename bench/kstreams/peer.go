package kstreams

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rackstream/rackstream/assignor/kafkaref"
)

// Build builds the Kafka Streams program in dir (this package's directory)
// with its build.sh, which caches the build by source hash, and returns the
// runnable jar's path. It is assignor/kafkaref's builder, which runs the
// build.sh of the directory it is given; its error wraps
// kafkaref.ErrNoToolchain when java or mvn is missing.
func Build(ctx context.Context, dir string) (string, error) {
	jar, err := kafkaref.Build(ctx, dir)
	if err != nil {
		return "", fmt.Errorf("kstreams: build the Kafka Streams program: %w", err)
	}
	return jar, nil
}

// PeerConfig says what one Kafka Streams instance runs.
type PeerConfig struct {
	Jar           string
	JavaOpts      []string // JVM options before -jar
	Bootstrap     string
	ApplicationID string
	Input, Output string
	StateDir      string
	// Props are StreamsConfig settings (num.standby.replicas,
	// commit.interval.ms, num.stream.threads, ...).
	Props map[string]string
	// Window, when above 0, makes the job a windowed count: tumbling
	// windows of Window with Grace, written to Output under Kafka
	// Streams' time windowed key (the key, then the window start).
	Window, Grace time.Duration
}

// Peer is one running Kafka Streams instance (one JVM).
type Peer struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stderr   *os.File // the JVM's stderr, removed after a clean close
	launched time.Time

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every event
	started  time.Time     // start() returned
	running  time.Time     // first transition to RUNNING
	restored Restored
	exited   bool
	waitErr  error
}

// Restored is what the program's restore listener reported before the
// first RUNNING: records restored over all store partitions, and the span
// from the first restore's start to the last one's end.
type Restored struct {
	Records int64
	Span    time.Duration
}

// StartPeer launches the JVM. Cancelling ctx kills it.
func StartPeer(ctx context.Context, c PeerConfig) (*Peer, error) {
	args := append(append([]string(nil), c.JavaOpts...), "-jar", c.Jar,
		c.Bootstrap, c.ApplicationID, c.Input, c.Output, c.StateDir)
	for k, v := range c.Props {
		args = append(args, k+"="+v)
	}
	if c.Window > 0 {
		args = append(args, "rackstream.window.size.ms="+strconv.FormatInt(c.Window.Milliseconds(), 10),
			"rackstream.window.grace.ms="+strconv.FormatInt(c.Grace.Milliseconds(), 10))
	}
	cmd := exec.CommandContext(ctx, "java", args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("kstreams: stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("kstreams: stdout pipe: %w", err)
	}
	stderr, err := os.CreateTemp("", "kstreams-stderr-*.log")
	if err != nil {
		return nil, fmt.Errorf("kstreams: stderr file: %w", err)
	}
	p := &Peer{cmd: cmd, stdin: stdin, stderr: stderr, changed: make(chan struct{})}
	cmd.Stderr = stderr
	p.launched = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("kstreams: start java %s: %w", strings.Join(args, " "), err)
	}
	go p.read(stdout)
	return p, nil
}

// read follows the program's event lines (see Main.java) until it exits.
func (p *Peer) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		p.mu.Lock()
		switch {
		case f[0] == "STARTED" && len(f) == 2:
			p.started = epochMillis(f[1])
		case f[0] == "RUNNING" && len(f) == 2 && p.running.IsZero():
			p.running = epochMillis(f[1])
		case f[0] == "RESTORED" && len(f) == 4 && p.running.IsZero():
			n, _ := strconv.ParseInt(f[1], 10, 64)
			p.restored = Restored{Records: n, Span: epochMillis(f[3]).Sub(epochMillis(f[2]))}
		}
		p.notifyLocked()
		p.mu.Unlock()
	}
	err := p.cmd.Wait()
	p.mu.Lock()
	p.exited, p.waitErr = true, err
	p.notifyLocked()
	p.mu.Unlock()
}

func (p *Peer) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func epochMillis(s string) time.Time {
	ms, _ := strconv.ParseInt(s, 10, 64)
	return time.UnixMilli(ms)
}

// Launched is when the JVM was started.
func (p *Peer) Launched() time.Time { return p.launched }

// WaitRunning waits until the instance first reaches RUNNING (assigned and
// restored) and returns when start() returned, when it was running, and
// what it restored on the way.
func (p *Peer) WaitRunning(ctx context.Context) (started, running time.Time, r Restored, err error) {
	for {
		p.mu.Lock()
		started, running, r, exited, changed := p.started, p.running, p.restored, p.exited, p.changed
		p.mu.Unlock()
		if !running.IsZero() {
			return started, running, r, nil
		}
		if exited {
			return started, running, r, p.failed(errors.New("kstreams: the JVM exited before RUNNING"))
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return started, running, r, p.failed(fmt.Errorf("kstreams: waiting for RUNNING: %w", ctx.Err()))
		}
	}
}

// Running reports whether the instance has reached RUNNING, and when.
func (p *Peer) Running() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running, !p.running.IsZero()
}

// Err returns why the JVM exited, nil while it runs.
func (p *Peer) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited {
		return nil
	}
	if p.waitErr != nil {
		return p.failed(fmt.Errorf("kstreams: the JVM exited: %w", p.waitErr))
	}
	return p.failed(errors.New("kstreams: the JVM exited"))
}

// CPU returns the CPU time (user and system) the JVM used, once it has
// exited; 0 before.
func (p *Peer) CPU() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited || p.cmd.ProcessState == nil {
		return 0
	}
	return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
}

// MaxRSS returns the JVM's peak resident set in bytes, once it has exited;
// 0 before.
func (p *Peer) MaxRSS() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited || p.cmd.ProcessState == nil {
		return 0
	}
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024 // kilobytes on Linux
	}
	return 0
}

// Close closes the program's stdin, which makes it close Kafka Streams
// cleanly (leaving the group), and waits for the JVM to exit.
func (p *Peer) Close(ctx context.Context) error {
	p.stdin.Close()
	for {
		p.mu.Lock()
		exited, err, changed := p.exited, p.waitErr, p.changed
		p.mu.Unlock()
		if exited {
			if err != nil {
				return p.failed(fmt.Errorf("kstreams: the JVM exited: %w", err))
			}
			p.stderr.Close()
			os.Remove(p.stderr.Name())
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return p.failed(fmt.Errorf("kstreams: waiting for the JVM to close: %w", ctx.Err()))
		}
	}
}

// failed adds the beginning of the JVM's stderr to an error: it usually
// says why. The whole of it stays in its file, which the error names.
func (p *Peer) failed(err error) error {
	b := make([]byte, 16<<10)
	n, _ := p.stderr.ReadAt(b, 0)
	if s := strings.TrimSpace(string(b[:n])); s != "" {
		return fmt.Errorf("%w\njava stderr (%s):\n%s", err, p.stderr.Name(), s)
	}
	return err
}
