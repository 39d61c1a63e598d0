package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is one finished child process: a benchmark binary run alone, or
// anything else the driver starts and waits for.
type child struct {
	// command is the command line as a reader could run it, with the
	// environment variables that size it.
	command string
	// err is why it failed (exit status, start error), nil when it
	// exited 0.
	err error
	// skip is the benchmark's skip message, empty when it did not skip.
	skip string
	// output is its stdout and stderr together.
	output string
	// wall, cpu and maxRSS are what the kernel accounted to the process:
	// wall time, user+system CPU (its waited-for children included, a JVM
	// for example), and its peak resident set (the largest of it and its
	// waited-for children's) in bytes.
	wall   time.Duration
	cpu    time.Duration
	maxRSS int64
	// metrics are the benchmark's reported figures by unit (the last
	// Benchmark line that reported each), as `go test -bench` prints them.
	metrics map[string]float64
}

// failure is the line a results row gets when its process could not give
// figures: the command and what went wrong.
func (c child) failure() string {
	if c.skip != "" {
		return fmt.Sprintf("`%s` skipped: %s", c.command, c.skip)
	}
	if c.err == nil && len(c.metrics) == 0 {
		return fmt.Sprintf("`%s` reported no figures; its output ends: %s", c.command, lastLines(c.output, 6))
	}
	return fmt.Sprintf("`%s` failed: %v; its output ends: %s", c.command, c.err, lastLines(c.output, 6))
}

// ok reports whether the child gave figures.
func (c child) ok() bool { return c.err == nil && c.skip == "" && len(c.metrics) > 0 }

// metric returns the figure reported with unit, and whether there was one.
func (c child) metric(unit string) (float64, bool) {
	v, ok := c.metrics[unit]
	return v, ok
}

// runChild runs bin with args in dir and env (added to a copy of base), waits for
// it, and returns what it did. It never fails: a child that cannot run
// returns with err set.
func runChild(ctx context.Context, dir string, base []string, env map[string]string, timeout time.Duration, bin string, args ...string) child {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir // a test binary runs in its package's directory, as go test runs it
	cmd.Env = append([]string(nil), base...)
	var shown []string
	for _, k := range sortedKeys(env) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
		shown = append(shown, k+"="+env[k])
	}
	// Children of a killed benchmark (a JVM) die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	c := child{command: strings.TrimSpace(strings.Join(shown, " ") + " " + displayPath(bin) + " " + strings.Join(args, " "))}
	start := time.Now()
	err := cmd.Run()
	c.wall = time.Since(start)
	c.output = out.String()
	if cmd.ProcessState != nil {
		c.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			c.maxRSS = ru.Maxrss * 1024 // kilobytes on Linux
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (timeout %v)", err, timeout)
		}
		c.err = err
	}
	c.metrics, c.skip = parseBench(c.output)
	return c
}

// parseBench reads `go test -bench -v` output: the figures of every
// Benchmark result line (value unit pairs after the iteration count), and
// the message of a skip (the benchmark's log line printed before its
// --- SKIP line).
func parseBench(out string) (map[string]float64, string) {
	metrics := map[string]float64{}
	var skip, lastLog string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		t := strings.TrimSpace(line)
		if m := testLogLine.FindStringSubmatch(t); m != nil {
			lastLog = m[1]
			continue
		}
		if strings.HasPrefix(t, "--- SKIP") {
			skip = lastLog
			if skip == "" {
				skip = t
			}
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				metrics[f[i+1]] = v
			}
		}
	}
	return metrics, skip
}

// testLogLine is a t.Log line: "file_test.go:123: message".
var testLogLine = regexp.MustCompile(`^\S+_test\.go:\d+: (.*)$`)

// lastLines is the last n non-empty lines of s, joined with " / ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "`" + strings.ReplaceAll(strings.Join(lines, " / "), "`", "'") + "`"
}

// displayPath shortens a binary's path in the temporary build directory to
// its name: the results say how it was built.
func displayPath(bin string) string {
	if i := strings.LastIndex(bin, string(os.PathSeparator)); i >= 0 {
		return bin[i+1:]
	}
	return bin
}

// childEnv is this process's environment without the variables that point
// tests at a broker: a child with none runs on its own in-process kfake.
// The broker's are added back per run where wanted.
func childEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RACKSTREAM_TEST_") && !strings.HasPrefix(kv, "GOKA_BENCH_") &&
			!strings.HasPrefix(kv, "RACKSTREAM_KSTREAMS_") && !strings.HasPrefix(kv, "RACKSTREAM_BENCH_") &&
			!strings.HasPrefix(kv, "STATE_BENCH_") {
			out = append(out, kv)
		}
	}
	return out
}
