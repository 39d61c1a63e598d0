// Package jvmref builds and runs the Java programs that differential tests
// use as a reference: Kafka itself, driven from Go. A program is a Maven
// project whose directory holds a build.sh that prints the path of its
// runnable jar (deploy/local/mvnjar.sh builds it, cached by source hash).
// [Start] runs the jar with `java -jar` and [Process.Exchange] speaks to it
// one line at a time: a request line on its stdin, the answer line on its
// stdout. Its stderr is kept and added to the errors it explains.
package jvmref

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// ErrNoToolchain reports that Java or Maven is not installed, so a
// reference cannot be built. Callers outside CI may skip on it.
var ErrNoToolchain = errors.New("java or mvn not installed")

// maxStderr bounds the stderr a Process keeps: its beginning says what went
// wrong.
const maxStderr = 1 << 20

// Build runs dir's build.sh, which builds the Java program in dir (or finds
// its cached build), and returns the runnable jar's path. The error wraps
// ErrNoToolchain when java or mvn is missing (build.sh exits with status 3
// then), and otherwise carries build.sh's stderr.
func Build(ctx context.Context, dir string) (string, error) {
	script, err := filepath.Abs(filepath.Join(dir, "build.sh"))
	if err != nil {
		return "", fmt.Errorf("locate %s/build.sh: %w", dir, err)
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
		return "", fmt.Errorf("%s: %w\n%s", script, err, strings.TrimSpace(stderr.String()))
	}
	jar := strings.TrimSpace(string(out))
	if jar == "" {
		return "", fmt.Errorf("%s printed no jar path", script)
	}
	return jar, nil
}

// Process is one running JVM of a reference program. Its methods are not
// safe for concurrent use.
type Process struct {
	name   string // the jar's file name, for errors
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *limitedBuffer
}

// Start runs `java [jvmArgs] -jar jar`. Cancelling ctx kills the JVM.
func Start(ctx context.Context, jar string, jvmArgs ...string) (*Process, error) {
	name := filepath.Base(jar)
	args := append(append([]string(nil), jvmArgs...), "-jar", jar)
	cmd := exec.CommandContext(ctx, "java", args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: stdin pipe: %w", name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: stdout pipe: %w", name, err)
	}
	stderr := &limitedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start java -jar %s: %w", jar, err)
	}
	return &Process{name: name, cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 1<<20), stderr: stderr}, nil
}

// Exchange writes line and a newline to the program's stdin and returns the
// next line of its stdout, without the newline. line must not contain a
// newline. An I/O error (the JVM died, say) carries the JVM's stderr.
func (p *Process) Exchange(line []byte) ([]byte, error) {
	if bytes.ContainsAny(line, "\n\r") {
		return nil, fmt.Errorf("%s: a request must be one line", p.name)
	}
	if _, err := p.stdin.Write(append(line[:len(line):len(line)], '\n')); err != nil {
		return nil, p.failed(fmt.Errorf("%s: write request: %w", p.name, err))
	}
	reply, err := p.stdout.ReadBytes('\n')
	if err != nil {
		return nil, p.failed(fmt.Errorf("%s: read answer: %w", p.name, err))
	}
	return bytes.TrimRight(reply, "\r\n"), nil
}

// failed adds the JVM's stderr to an error: it usually says why.
func (p *Process) failed(err error) error {
	if s := strings.TrimSpace(p.stderr.String()); s != "" {
		return fmt.Errorf("%w\njava stderr:\n%s", err, s)
	}
	return err
}

// Close ends the program's input and waits for the JVM to exit. An exit
// other than a clean one is an error carrying its stderr.
func (p *Process) Close() error {
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		return p.failed(fmt.Errorf("%s: java exited: %w", p.name, err))
	}
	return nil
}

// limitedBuffer keeps the first maxStderr bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxStderr - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
