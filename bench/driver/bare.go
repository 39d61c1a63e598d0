package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// The bare handler is the queries' reference: a net/http server in its
// own process that answers every GET with the bytes an instance answered
// for a key, so that a lookup's cost can be read against what net/http and
// loopback alone cost, in the same run, under the same load.
const (
	envBareAddr = "BENCH_DRIVER_BARE_ADDR"
	envBareBody = "BENCH_DRIVER_BARE_BODY"
)

// serveBareIfAsked serves the bare handler and exits when this process was
// started as one (by startBare); it returns otherwise.
func serveBareIfAsked() {
	addr := os.Getenv(envBareAddr)
	if addr == "" {
		return
	}
	body, err := os.ReadFile(os.Getenv(envBareBody))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bare handler:", err)
		os.Exit(1)
	}
	err = http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	fmt.Fprintln(os.Stderr, "bare handler:", err)
	os.Exit(1)
}

// bare is a running bare handler process.
type bare struct {
	cmd  *exec.Cmd
	addr string
}

// startBare starts this executable as a bare handler answering body.
func startBare(ctx context.Context, dir string, body []byte) (*bare, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	file := dir + "/bare-body.json"
	if err := os.WriteFile(file, body, 0o644); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envBareAddr+"="+addr, envBareBody+"="+file)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the bare handler: %w", err)
	}
	b := &bare{cmd: cmd, addr: addr}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return b, nil
		}
	}
	b.stop()
	return nil, fmt.Errorf("the bare handler did not listen on %s within 20s", addr)
}

// stop ends the bare handler and returns its CPU time and peak RSS.
func (b *bare) stop() (time.Duration, int64) {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	_ = b.cmd.Wait()
	st := b.cmd.ProcessState
	if st == nil {
		return 0, 0
	}
	var rss int64
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024
	}
	return st.UserTime() + st.SystemTime(), rss
}
