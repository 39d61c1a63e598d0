package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// kfakeBroker is the cluster section's broker on kfake: a kfakebroker
// process (bench/kfakebroker), apart from the driver as the real broker
// is, so that the driver's load producer and its collections are not the
// broker's, and the broker's in-memory log is not the driver's heap to
// mark.
type kfakeBroker struct {
	addrs []string
	// profiles is the base URL of its /debug/pprof/ ("" unless started
	// with them).
	profiles string
	cmd      *exec.Cmd
	stdin    io.WriteCloser // closed to stop it
	done     chan struct{}  // closed once it has exited
}

// startKfake starts bin (a built bench/kfakebroker) with its log at
// logPath and waits for the address it prints.
func startKfake(ctx context.Context, bin, logPath string, profiles bool) (*kfakeBroker, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, fmt.Sprintf("-pprof=%t", profiles))
	cmd.Stderr = log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	k := &kfakeBroker{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		log.Close()
		close(k.done)
	}()
	fail := func(err error) (*kfakeBroker, error) {
		k.stop()
		b, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("kfakebroker: %w; its log ends: %s", err, lastLines(string(b), 5))
	}
	select {
	case line, ok := <-lines:
		if !ok {
			return fail(errors.New("exited before it listened"))
		}
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "kfake" {
			return fail(fmt.Errorf("printed %q, not its address", line))
		}
		k.addrs = strings.Split(f[1], ",")
		if len(f) == 4 && f[2] == "pprof" {
			k.profiles = "http://" + f[3]
		}
		return k, nil
	case <-time.After(30 * time.Second):
		return fail(errors.New("no address within 30s"))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
}

// stop closes its standard input (its signal to exit) and kills it if it
// has not exited 10 s later.
func (k *kfakeBroker) stop() {
	_ = k.stdin.Close()
	select {
	case <-k.done:
	case <-time.After(10 * time.Second):
		_ = k.cmd.Process.Signal(syscall.SIGKILL)
		<-k.done
	}
}
