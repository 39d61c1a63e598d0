package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is one child process a test started: its output captured in memory
// (and, when LogFile is set, appended to a file), its exit observed. A Proc
// still running when the test ends is killed.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	// In is the process's stdin.
	In io.WriteCloser
	// Out and Err collect stdout and stderr.
	Out, Err *Lines

	t    testing.TB
	done chan struct{}
	code int // exit code, valid once done is closed
}

// Lines collects a stream's output, safe for the copier and the test.
type Lines struct {
	mu   sync.Mutex // guards b and file
	b    bytes.Buffer
	file *os.File // a copy of everything, when not nil
}

func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		l.file.Write(p) // a copy for people; the buffer is what tests read
	}
	return l.b.Write(p)
}

// closeFile closes the file copy (both streams may share one file).
func (l *Lines) closeFile() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
}

// String returns everything written so far.
func (l *Lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Start runs bin with args (and env, when not nil, as its whole
// environment), its stdin a pipe. logFile, when not empty, receives a copy
// of stdout and stderr (appended, so that the lives of a restarted instance
// follow each other).
func Start(t testing.TB, name, logFile string, env []string, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Name: name, t: t, Out: &Lines{}, Err: &Lines{}, done: make(chan struct{})}
	if logFile != "" {
		f, err := os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		fmt.Fprintf(f, "==== %s started %s: %s %s\n", name, time.Now().Format(time.RFC3339Nano), bin, strings.Join(args, " "))
		p.Out.file, p.Err.file = f, f
	}
	p.Cmd = exec.Command(bin, args...)
	p.Cmd.Env = env
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Err
	var err error
	if p.In, err = p.Cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		err := p.Cmd.Wait() // returns once the output is copied
		p.code = p.Cmd.ProcessState.ExitCode()
		if err != nil && p.code == 0 {
			p.code = -1
		}
		p.Out.closeFile()
		p.Err.closeFile()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.Exited() {
			p.Cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s stdout (tail):\n%s", name, Tail(p.Out.String(), 40))
			t.Logf("%s stderr (tail):\n%s", name, Tail(p.Err.String(), 40))
		}
	})
	return p
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Code is the exit code: -1 for a death by signal, valid once Done is
// closed.
func (p *Proc) Code() int {
	<-p.done
	return p.code
}

// Signal sends sig and waits up to within for the process to exit,
// returning its exit code. It fails the test if the process does not exit
// in time.
func (p *Proc) Signal(sig syscall.Signal, within time.Duration) int {
	p.t.Helper()
	p.send(sig)
	select {
	case <-p.done:
		return p.code
	case <-time.After(within):
		p.t.Fatalf("%s did not exit within %v of %v", p.Name, within, sig)
		return -1
	}
}

// send delivers sig unless the process has exited.
func (p *Proc) send(sig syscall.Signal) {
	p.t.Helper()
	// os.ErrProcessDone: it has exited (an earlier signal), and p.done
	// closes once Wait has seen it.
	if err := p.Cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) && !p.Exited() {
		p.t.Fatalf("signal %s: %v", p.Name, err)
	}
}

// Kill sends SIGKILL (a crash: no shutdown code runs) and waits for the
// exit.
func (p *Proc) Kill() {
	p.t.Helper()
	p.Signal(syscall.SIGKILL, time.Minute)
}

// Freeze stops the process (SIGSTOP): it keeps its sockets and memory but
// runs no code, as a long GC pause or a VM migration does.
func (p *Proc) Freeze() {
	p.t.Helper()
	p.send(syscall.SIGSTOP)
}

// Thaw resumes a frozen process (SIGCONT).
func (p *Proc) Thaw() {
	p.t.Helper()
	p.send(syscall.SIGCONT)
}
