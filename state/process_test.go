package state

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The child-process tests re-run this test binary with STATE_HELPER set:
// TestHelperProcess then acts as a second Rackstream process.
const (
	envHelper  = "STATE_HELPER"
	envDir     = "STATE_HELPER_DIR"
	envApp     = "STATE_HELPER_APP"
	envBrokers = "STATE_HELPER_BROKERS"
	// envGate, in mode "batches", is the commit after which the child
	// blocks inside its next batch's journal write (0: never).
	envGate = "STATE_HELPER_GATE"
)

func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envHelper)
	if mode == "" {
		return // not a child: nothing to do
	}
	if err := helperMain(mode); err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func helperMain(mode string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gate := &journalGate{}
	o := DefaultOptions()
	o.Dir, o.ApplicationID = os.Getenv(envDir), os.Getenv(envApp)
	o.ClientOpts = []kgo.Opt{kgo.SeedBrokers(strings.Split(os.Getenv(envBrokers), ",")...)}
	o.WrapStorage = func(_ string, s storage.Storage) storage.Storage { return gatedJournal{s, gate} }
	m, err := Open(o)
	if err != nil {
		return err
	}
	switch mode {
	case "batches":
		return writeBatches(ctx, m, gate)
	case "hold":
		fmt.Println("LOCKED", os.Getpid())
	case "crash":
		task, p, err := childActiveTask(ctx, m)
		if err != nil {
			return err
		}
		s := task.Store("s")
		put := func(from, to int, val string) {
			for i := from; i < to; i++ {
				s.Put([]byte("k"+strconv.Itoa(i)), []byte(val))
			}
		}
		// Committed: in LevelDB and in the changelog.
		put(0, 500, "a")
		if err := p.Flush(ctx); err != nil {
			return err
		}
		if err := task.Commit(); err != nil {
			return err
		}
		// Acknowledged by the changelog, never committed to LevelDB.
		put(250, 700, "b")
		for i := 0; i < 100; i += 3 {
			s.Delete([]byte("k" + strconv.Itoa(i)))
		}
		if err := p.Flush(ctx); err != nil {
			return err
		}
		// Maybe produced, maybe not, when the kill comes.
		put(600, 800, "c")
		fmt.Println("READY")
	default:
		return fmt.Errorf("unknown helper mode %q", mode)
	}
	io.Copy(io.Discard, os.Stdin) // hold on until the parent closes stdin or kills us
	return m.Close()
}

// childActiveTask opens, restores and activates task 0 with store "s" in
// the child, with a producer of its own.
func childActiveTask(ctx context.Context, m *Manager) (*Task, *kgo.Client, error) {
	p, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(os.Getenv(envBrokers), ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return nil, nil, err
	}
	task, err := m.OpenTask(0, []StoreSpec{{Name: "s"}})
	if err != nil {
		return nil, nil, err
	}
	if err := task.Restore(ctx); err != nil {
		return nil, nil, err
	}
	return task, p, task.Activate(p)
}

// child starts the helper in mode and waits for its first line.
func (e *env) child(dir, mode string, env ...string) (*exec.Cmd, io.WriteCloser, string) {
	e.t.Helper()
	cmd, stdin, lines := e.startChild(dir, mode, env...)
	line, err := lines.ReadString('\n')
	if err != nil {
		e.t.Fatalf("helper %s: read first line: %v", mode, err)
	}
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "ERROR") {
		e.t.Fatalf("helper %s: %s", mode, line)
	}
	return cmd, stdin, line
}

// startChild starts the helper in mode, killed when the test ends, and
// returns its stdout.
func (e *env) startChild(dir, mode string, env ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	e.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), envHelper+"="+mode, envDir+"="+dir, envApp+"="+e.app,
		envBrokers+"="+strings.Join(e.c.Brokers, ","))
	cmd.Env = append(cmd.Env, env...)
	stdin, err := cmd.StdinPipe()
	must(e.t, err)
	stdout, err := cmd.StdoutPipe()
	must(e.t, err)
	cmd.Stderr = os.Stderr
	must(e.t, cmd.Start())
	e.t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, stdin, bufio.NewReader(stdout)
}

// TestSecondProcessIsRefused: while a child process holds the state
// directory, Open fails naming the directory and the child's pid; once the
// child exits, Open succeeds.
func TestSecondProcessIsRefused(t *testing.T) {
	e := newEnv(t, 1, "s")
	dir := t.TempDir()
	cmd, stdin, line := e.child(dir, "hold")
	if line != "LOCKED "+strconv.Itoa(cmd.Process.Pid) {
		t.Fatalf("helper said %q", line)
	}
	_, err := Open(dirOptions(dir, e.app))
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("Open while another process holds the directory = %v, want *LockedError", err)
	}
	if le.PID != cmd.Process.Pid || !strings.Contains(err.Error(), "pid "+strconv.Itoa(cmd.Process.Pid)) || !strings.Contains(err.Error(), le.Dir) || le.Dir != dir+"/"+e.app {
		t.Fatalf("error %q (pid %d, dir %s) does not name the holder pid %d and directory", err, le.PID, le.Dir, cmd.Process.Pid)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper exit: %v", err)
	}
	m, err := Open(dirOptions(dir, e.app))
	if err != nil {
		t.Fatalf("Open after the holder exited: %v", err)
	}
	m.Close()
}

// TestSecondInstanceInProcessIsRefused: two Managers of one process on one
// directory: the second fails naming this process.
func TestSecondInstanceInProcessIsRefused(t *testing.T) {
	dir := t.TempDir()
	m, err := Open(dirOptions(dir, "app"))
	must(t, err)
	_, err = Open(dirOptions(dir, "app"))
	var le *LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() || !strings.Contains(err.Error(), "this process") {
		t.Fatalf("second in-process Open = %v, want *LockedError naming this process", err)
	}
	must(t, m.Close())
	m, err = Open(dirOptions(dir, "app"))
	must(t, err)
	m.Close()
}

// TestKilledProcessRestoresExactlyTheChangelog: a child process writes,
// commits part, has more acknowledged but not committed to LevelDB, more in
// flight, and is SIGKILLed. Reopened, the store equals the changelog.
func TestKilledProcessRestoresExactlyTheChangelog(t *testing.T) {
	e := newEnv(t, 1, "s")
	dir := t.TempDir()
	e.open(dir).Close() // creates the changelog
	cmd, _, line := e.child(dir, "crash")
	if line != "READY" {
		t.Fatalf("helper said %q", line)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()

	m := e.open(dir)
	task, err := m.OpenTask(0, e.stores)
	must(t, err)
	s := task.Store("s")
	if ck := s.Checkpoint(); ck != 500 {
		t.Fatalf("checkpoint left by the killed process = %d, want 500 (its one commit)", ck)
	}
	must(t, task.Restore(e.ctx()))
	want := e.changelogContent(s.Changelog(), 0)
	got := viewContent(t, s.View())
	if !maps.Equal(got, want) {
		t.Fatalf("restored store (%d keys) differs from the changelog (%d keys)", len(got), len(want))
	}
	if _, present := want["k3"]; present || want["k1"] != "a" || want["k300"] != "b" {
		t.Fatalf("changelog content unexpected: k1=%q k3=%q k300=%q", want["k1"], want["k3"], want["k300"])
	}
	t.Logf("restored %d keys, checkpoint %d", len(got), s.Checkpoint())
}

// dirOptions are the default options for application app in dir.
func dirOptions(dir, app string) Options {
	o := DefaultOptions()
	o.Dir, o.ApplicationID = dir, app
	return o
}
