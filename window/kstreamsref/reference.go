package kstreamsref

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// ErrNoToolchain reports that Java or Maven is not installed, so the
// reference cannot be built. Callers outside CI may skip on it.
var ErrNoToolchain = errors.New("kstreamsref: java or mvn not installed")

// Build builds the Java reference program in dir (this package's directory)
// with its build.sh, which caches the build by source hash, and returns the
// runnable jar's path.
func Build(ctx context.Context, dir string) (string, error) {
	script, err := filepath.Abs(filepath.Join(dir, "build.sh"))
	if err != nil {
		return "", fmt.Errorf("kstreamsref: locate build.sh: %w", err)
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
		return "", fmt.Errorf("kstreamsref: %s: %w\n%s", script, err, stderr.String())
	}
	jar := strings.TrimSpace(string(out))
	if jar == "" {
		return "", fmt.Errorf("kstreamsref: %s printed no jar path", script)
	}
	return jar, nil
}

// Reference is one running JVM of the Java reference program: scenarios go
// in as JSON lines on its stdin, results come back one line each on its
// stdout. Its methods are not safe for concurrent use.
type Reference struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *lockedBuffer
}

// Start runs the reference jar. Cancelling ctx kills the JVM. The drivers'
// state directories go to /dev/shm where it is writable: Kafka Streams syncs its
// checkpoint files to disk, which makes a run on disk about three times
// slower.
func Start(ctx context.Context, jar string) (*Reference, error) {
	args := []string{"-XX:+UseSerialGC"}
	if probe, err := os.MkdirTemp("/dev/shm", "kstreamsref"); err == nil {
		os.Remove(probe)
		args = append(args, "-Djava.io.tmpdir=/dev/shm")
	}
	cmd := exec.CommandContext(ctx, "java", append(args, "-jar", jar)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("kstreamsref: stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("kstreamsref: stdout pipe: %w", err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("kstreamsref: start java -jar %s: %w", jar, err)
	}
	return &Reference{cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 1<<20), stderr: stderr}, nil
}

// Run sends one scenario and waits for Kafka Streams' result. A scenario
// the program rejects is an error naming it; the JVM goes on with the next.
func (r *Reference) Run(s Scenario) (*Result, error) {
	line, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("kstreamsref: encode scenario %s: %w", s.Name, err)
	}
	if _, err := r.stdin.Write(append(line, '\n')); err != nil {
		return nil, r.failed(fmt.Errorf("kstreamsref: write scenario %s: %w", s.Name, err))
	}
	reply, err := r.stdout.ReadBytes('\n')
	if err != nil {
		return nil, r.failed(fmt.Errorf("kstreamsref: read result of %s: %w", s.Name, err))
	}
	var res Result
	if err := json.Unmarshal(reply, &res); err != nil {
		return nil, fmt.Errorf("kstreamsref: decode result of %s %.200q: %w", s.Name, reply, err)
	}
	if res.Error != "" {
		return nil, fmt.Errorf("kstreamsref: scenario %s: %s", s.Name, res.Error)
	}
	if res.Name != s.Name || len(res.Partitions) != int(s.Partitions) {
		return nil, fmt.Errorf("kstreamsref: result for %q with %d partitions, want %q with %d",
			res.Name, len(res.Partitions), s.Name, s.Partitions)
	}
	return &res, nil
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
		return r.failed(fmt.Errorf("kstreamsref: java exited: %w", err))
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
