package kafkaref

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// ErrNoToolchain reports that Java or Maven is not installed, so the
// reference cannot be built. Callers outside CI may skip on it.
var ErrNoToolchain = errors.New("kafkaref: java or mvn not installed")

// Build builds the Java reference program in dir (this package's directory)
// with its build.sh, which caches the build by source hash, and returns the
// runnable jar's path.
func Build(ctx context.Context, dir string) (string, error) {
	script, err := filepath.Abs(filepath.Join(dir, "build.sh"))
	if err != nil {
		return "", fmt.Errorf("kafkaref: locate build.sh: %w", err)
	}
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%w: %s not found on PATH", ErrNoToolchain, tool)
		}
	}
	shell := "/bin/bash"
	if p, err := exec.LookPath("bash"); err == nil {
		shell = p
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, shell, script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			return "", fmt.Errorf("%w: %s", ErrNoToolchain, strings.TrimSpace(stderr.String()))
		}
		return "", fmt.Errorf("kafkaref: %s: %w\n%s", script, err, stderr.String())
	}
	jar := strings.TrimSpace(string(out))
	if jar == "" {
		return "", fmt.Errorf("kafkaref: %s printed no jar path", script)
	}
	return jar, nil
}

// Reference is one running JVM of the Java reference program: scenarios go
// in as JSON lines on its stdin, plans come back one line each on its stdout.
// Its methods are not safe for concurrent use.
type Reference struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *lockedBuffer
}

// Start runs the reference jar. Cancelling ctx kills the JVM.
func Start(ctx context.Context, jar string) (*Reference, error) {
	cmd := exec.CommandContext(ctx, "java", "-XX:+UseSerialGC", "-jar", jar)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("kafkaref: stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("kafkaref: stdout pipe: %w", err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("kafkaref: start java -jar %s: %w", jar, err)
	}
	return &Reference{cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 1<<20), stderr: stderr}, nil
}

// Plan is the reference's answer to one scenario: the plan in the assignor's
// output shape (without quality), or Error.
type Plan struct {
	Name  string `json:"name"`
	Error string `json:"error"`
	Tasks []struct {
		Task    int      `json:"task"`
		Active  string   `json:"active"`
		Standby []string `json:"standby"`
	} `json:"tasks"`
	// ElapsedNanos is the JVM's time for building Kafka's view of the
	// scenario and assigning standbys, without JSON.
	ElapsedNanos int64 `json:"elapsed_ns"`
	// CPUNanos is the CPU time of the same, on the JVM's one working thread:
	// on a shared machine it is the steadier figure.
	CPUNanos int64 `json:"cpu_ns"`
	// ProcessCPUNanos is the CPU time of the whole JVM meanwhile, GC and
	// JIT compiler threads included.
	ProcessCPUNanos int64 `json:"process_cpu_ns"`
	// Raw is the whole line, for decoding into the assignor's own plan type.
	Raw json.RawMessage `json:"-"`
}

// Run sends one scenario (a single JSON line) and waits for its plan.
func (r *Reference) Run(scenario []byte) (*Plan, error) {
	if bytes.ContainsAny(scenario, "\n\r") {
		return nil, errors.New("kafkaref: scenario must be one line of JSON")
	}
	if _, err := r.stdin.Write(append(scenario[:len(scenario):len(scenario)], '\n')); err != nil {
		return nil, r.failed(fmt.Errorf("kafkaref: write scenario: %w", err))
	}
	line, err := r.stdout.ReadBytes('\n')
	if err != nil {
		return nil, r.failed(fmt.Errorf("kafkaref: read plan: %w", err))
	}
	var p Plan
	if err := json.Unmarshal(line, &p); err != nil {
		return nil, fmt.Errorf("kafkaref: decode plan %.200q: %w", line, err)
	}
	if p.Error != "" {
		return nil, fmt.Errorf("kafkaref: scenario %s: %s", p.Name, p.Error)
	}
	p.Raw = line
	return &p, nil
}

// failed adds the JVM's stderr to an I/O error: it usually says why.
func (r *Reference) failed(err error) error {
	if s := strings.TrimSpace(r.stderr.String()); s != "" {
		return fmt.Errorf("%w\njava stderr:\n%s", err, s)
	}
	return err
}

// Close ends the JVM's input and waits for it to exit.
func (r *Reference) Close() error {
	r.stdin.Close()
	if err := r.cmd.Wait(); err != nil {
		return r.failed(fmt.Errorf("kafkaref: java exited: %w", err))
	}
	return nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil // keep the beginning; it says what went wrong
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
