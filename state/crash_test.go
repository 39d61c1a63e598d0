package state

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/syndtr/goleveldb/leveldb/storage"
)

// crashBatch records of crashValue bytes make one commit of the "batches"
// child: ~66 KB, a LevelDB batch that spans three 32 KiB journal blocks, so
// that a kill can land between its journal writes.
const (
	crashBatch = 300
	crashValue = 200
)

// writeBatches is the "batches" child: it commits batches of crashBatch
// records to task 0's store "s", printing "COMMITTED <checkpoint>" after
// each, until it is killed. With STATE_HELPER_GATE=n it arms the journal
// gate before its commit n+1, whose batch then stops between two journal
// writes (after printing "MIDBATCH") and waits for the kill.
func writeBatches(ctx context.Context, m *Manager, gate *journalGate) error {
	after, _ := strconv.Atoi(os.Getenv(envGate))
	task, p, err := childActiveTask(ctx, m)
	if err != nil {
		return err
	}
	s := task.Store("s")
	val := bytes.Repeat([]byte("v"), crashValue)
	for n := 1; ; n++ {
		for i := range crashBatch {
			// Keys repeat across batches: restore overwrites, too.
			if err := s.Put([]byte(fmt.Sprintf("k%05d", (n*crashBatch+i)%5000)), val); err != nil {
				return err
			}
		}
		if err := p.Flush(ctx); err != nil {
			return err
		}
		if after > 0 && n == after+1 {
			gate.armed.Store(true)
		}
		if err := task.Commit(); err != nil {
			return err
		}
		fmt.Println("COMMITTED", s.Checkpoint())
	}
}

// journalGate stops a process inside a journal write. Once armed, the
// second write to a journal file prints "MIDBATCH" and blocks forever. The
// first part of the batch is then in the file, and the rest never will be.
type journalGate struct {
	armed  atomic.Bool
	writes atomic.Int64
	once   sync.Once
}

type gatedJournal struct {
	storage.Storage
	g *journalGate
}

func (s gatedJournal) Create(fd storage.FileDesc) (storage.Writer, error) {
	w, err := s.Storage.Create(fd)
	if err != nil || fd.Type != storage.TypeJournal {
		return w, err
	}
	return gatedJournalWriter{w, s.g}, nil
}

type gatedJournalWriter struct {
	storage.Writer
	g *journalGate
}

func (w gatedJournalWriter) Write(p []byte) (int, error) {
	if w.g.armed.Load() && w.g.writes.Add(1) == 2 {
		w.g.once.Do(func() { fmt.Println("MIDBATCH") })
		select {} // until SIGKILL
	}
	return w.Writer.Write(p)
}

// TestKilledMidBatchIsNotRebuilt: a child process commits batches in a
// loop and is SIGKILLed in the middle of one batch's journal write. The
// journal's tail is torn, nothing intact after it: the reopened store is
// not rebuilt, keeps the checkpoint of its last complete batch, and the
// restore applies only the changelog records after that checkpoint.
// (StrictJournal alone would take the torn tail for damage and rebuild
// the store after every crash.)
func TestKilledMidBatchIsNotRebuilt(t *testing.T) {
	e := newEnv(t, 1, "s")
	dir := t.TempDir()
	e.open(dir).Close() // creates the changelog
	cmd, _, out := e.startChild(dir, "batches", envGate+"=5")
	var last int64
	for {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("child: %v (last line %q)", err, line)
		}
		line = strings.TrimSpace(line)
		if c, ok := strings.CutPrefix(line, "COMMITTED "); ok {
			last, err = strconv.ParseInt(c, 10, 64)
			must(t, err)
			continue
		}
		if line == "MIDBATCH" {
			break
		}
		t.Fatalf("child said %q", line)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	if last != 5*crashBatch {
		t.Fatalf("child's last committed checkpoint = %d, want %d", last, 5*crashBatch)
	}
	ck, torn := reopenAfterKill(t, e, dir)
	if ck != last || torn != 1 {
		t.Fatalf("after the kill mid-batch: checkpoint %d, torn tails %v; want %d (the last complete batch) and 1", ck, torn, last)
	}
}

// TestKilledAnywhereIsNotRebuilt kills the batch-writing child at whatever
// point it has reached, a few times over on one state directory. No kill
// causes a rebuild. Each restore applies exactly the records after the
// checkpoint the store kept.
func TestKilledAnywhereIsNotRebuilt(t *testing.T) {
	e := newEnv(t, 1, "s")
	dir := t.TempDir()
	e.open(dir).Close()
	for round := range 3 {
		cmd, _, out := e.startChild(dir, "batches")
		var last int64
		for n := 0; n < 3+round; {
			line, err := out.ReadString('\n')
			if err != nil {
				t.Fatalf("round %d: child: %v (last line %q)", round, err, line)
			}
			c, ok := strings.CutPrefix(strings.TrimSpace(line), "COMMITTED ")
			if !ok {
				t.Fatalf("round %d: child said %q", round, line)
			}
			last, err = strconv.ParseInt(c, 10, 64)
			must(t, err)
			n++
		}
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()
		ck, torn := reopenAfterKill(t, e, dir)
		if ck < last {
			t.Fatalf("round %d: checkpoint after the kill %d, before the child's last reported commit %d", round, ck, last)
		}
		t.Logf("round %d: killed after checkpoint %d; reopened at %d, torn tails %v", round, last, ck, torn)
	}
}

// reopenAfterKill opens the killed child's store in this process and
// checks that it was not rebuilt and that a restore applies exactly the
// changelog records after its checkpoint and yields the changelog's
// content. It returns the checkpoint found at open and the torn tails
// counted.
func reopenAfterKill(t *testing.T, e *env, dir string) (ck int64, torn float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := e.open(dir, func(o *Options) { o.Registerer = reg })
	defer m.Close()
	task, err := m.OpenTask(0, e.stores)
	must(t, err)
	s := task.Store("s")
	ck = s.Checkpoint()
	if n := len(managerSeries(t, m, "rackstream_state_corrupted_stores_total")); n != 0 {
		t.Fatalf("the killed store was rebuilt (%d rebuild series)", n)
	}
	if aside, _ := filepath.Glob(s.Path() + ".corrupt-*"); len(aside) != 0 {
		t.Fatalf("the killed store was moved aside: %v", aside)
	}
	want, _, end := e.readChangelog(s.Changelog(), 0)
	if ck <= 0 || ck > end {
		t.Fatalf("checkpoint after the kill = %d, want in (0, %d]", ck, end)
	}
	must(t, task.Restore(e.ctx()))
	if n := managerSeries(t, m, "rackstream_state_restored_records_total")["0/s"]; n != float64(end-ck) {
		t.Fatalf("restore applied %v records, want the %d after checkpoint %d (end %d)", n, end-ck, ck, end)
	}
	if got := viewContent(t, s.View()); !maps.Equal(got, want) {
		t.Fatalf("restored store (%d keys) differs from the changelog (%d keys)", len(got), len(want))
	}
	return ck, managerSeries(t, m, "rackstream_state_torn_journal_tails_total")["0/s"]
}
