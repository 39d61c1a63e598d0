package state

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/syndtr/goleveldb/leveldb/journal"
)

// integrityKeys is how many keys the damage tests write, in commits of
// integrityBatch: 30 batches, a ~230 KB journal of 7 blocks.
const (
	integrityKeys  = 3000
	integrityBatch = 100
)

func integrityKey(i int) string { return fmt.Sprintf("k%04d", i) }

// fillStore writes integrityKeys keys with 64-byte values to task 0's
// store "s" in commits of integrityBatch, and closes the Manager. It
// returns the store's path and its content.
func fillStore(t *testing.T, e *env, dir string, lo *LevelDBOptions) (path string, content map[string]string) {
	t.Helper()
	if lo != nil {
		e.stores[0].LevelDB = lo
	}
	m := e.open(dir)
	p := e.producer()
	task := e.activeTask(m, 0, p)
	s := task.Store("s")
	for i := range integrityKeys {
		must(t, s.Put([]byte(integrityKey(i)), bytes.Repeat([]byte{byte('a' + i%26)}, 64)))
		if (i+1)%integrityBatch == 0 {
			e.commit(task, p)
		}
	}
	content = viewContent(t, s.View())
	if len(content) != integrityKeys || s.Checkpoint() != integrityKeys {
		t.Fatalf("filled store: %d keys, checkpoint %d; want %d of both", len(content), s.Checkpoint(), integrityKeys)
	}
	path = s.Path()
	must(t, m.Close())
	return path, content
}

// reopen opens a Manager on dir with a fresh registry and task 0.
func reopen(t *testing.T, e *env, dir string, mods ...func(*Options)) (*Manager, *Task) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := e.open(dir, append([]func(*Options){func(o *Options) { o.Registerer = reg }}, mods...)...)
	task, err := m.OpenTask(0, e.stores)
	if err != nil {
		t.Fatalf("open task after the damage = %v, want it opened (rebuilt if damaged)", err)
	}
	return m, task
}

// assertRebuilt checks that the store was moved aside once for reason and
// that a restore brings back every key of want, from offset 0.
func assertRebuilt(t *testing.T, e *env, m *Manager, task *Task, path, reason string, want map[string]string) {
	t.Helper()
	s := task.Store("s")
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 1 {
		t.Fatalf("moved-aside copies = %v, want one", aside)
	}
	if n := rebuilds(t, m, reason); n != 1 {
		t.Fatalf("rebuilds with reason %s = %v, want 1", reason, n)
	}
	if ck := s.Checkpoint(); ck != 0 {
		t.Fatalf("checkpoint of the rebuilt store = %d, want 0 (restore from the start)", ck)
	}
	must(t, task.Restore(e.ctx()))
	got := viewContent(t, s.View())
	var missing []string
	for k := range want {
		if _, ok := got[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 || !maps.Equal(got, want) {
		t.Fatalf("after the rebuild: %d keys, %d of %d missing (e.g. %v); want every key", len(got), len(missing), len(want), missing[:min(5, len(missing))])
	}
	if _, records, _ := e.readChangelog(s.Changelog(), 0); managerSeries(t, m, "rackstream_state_restored_records_total")["0/s"] != float64(records) {
		t.Fatalf("restored records = %v, want all %d of the changelog: the rebuild starts at offset 0", managerSeries(t, m, "rackstream_state_restored_records_total")["0/s"], records)
	}
}

// fillTable fills the store as fillStore does, then opens it once more,
// which replays its journal into a table file, and damages that table's
// bytes from at (a fraction of its size) on. It returns the store's path,
// its content and the table's name.
func fillTable(t *testing.T, e *env, dir string, at float64) (path string, content map[string]string, table string) {
	t.Helper()
	path, content = fillStore(t, e, dir, nil)
	m, _ := reopen(t, e, dir)
	must(t, m.Close())
	table = onlyFile(t, path, "*.ldb")
	b, err := os.ReadFile(table)
	must(t, err)
	from := int(float64(len(b)) * at)
	for i := from; i < from+16; i++ {
		b[i] ^= 0x55
	}
	must(t, os.WriteFile(table, b, 0o644))
	return path, content, filepath.Base(table)
}

// assertLogged checks that an ERROR line about msg names the task, the
// store, the damaged file and the reason.
func assertLogged(t *testing.T, logs *kafkatest.LogBuffer, msg, file, reason string) {
	t.Helper()
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, msg) {
			for _, want := range []string{" task=0 ", " store=s ", " file=" + file + " ", " reason=" + reason + " "} {
				if !strings.Contains(line+" ", want) {
					t.Fatalf("ERROR log %q lacks %q: %s", msg, strings.TrimSpace(want), line)
				}
			}
			return
		}
	}
	t.Fatalf("no ERROR log %q in:\n%s", msg, logs.String())
}

// logTo is an Options modifier that sends the Manager's logs to b.
func logTo(b *kafkatest.LogBuffer) func(*Options) {
	return func(o *Options) { o.Logger = b.Logger() }
}

// onlyFile returns the one file of path's directory matching pattern.
func onlyFile(t *testing.T, path, pattern string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(path, pattern))
	if len(files) != 1 {
		t.Fatalf("%s files in %s: %v, want one", pattern, path, files)
	}
	return files[0]
}

// TestByteFlipMidJournalRebuildsEveryKey: 64 bytes flipped in the middle
// of a store's journal, with intact batches after them, make the store
// rebuilt, and every key is there. Without StrictJournal, goleveldb would
// drop the damaged block while the later batches' checkpoint survives:
// keys lost for good.
func TestByteFlipMidJournalRebuildsEveryKey(t *testing.T) {
	e := newEnv(t, 1, "s")
	dir := t.TempDir()
	path, want := fillStore(t, e, dir, nil)

	log := onlyFile(t, path, "*.log")
	b, err := os.ReadFile(log)
	must(t, err)
	mid := len(b) / 2
	for i := mid; i < mid+64; i++ {
		b[i] ^= 0xff
	}
	must(t, os.WriteFile(log, b, 0o644))

	logs := new(kafkatest.LogBuffer)
	m, task := reopen(t, e, dir, logTo(logs))
	if n := managerSeries(t, m, "rackstream_state_torn_journal_tails_total")["0/s"]; n != 0 {
		t.Fatalf("damage with intact batches after it was taken for a torn tail (%v)", n)
	}
	assertLogged(t, logs, "DAMAGED STORE moved aside", filepath.Base(log), reasonJournal)
	assertRebuilt(t, e, m, task, path, reasonJournal, want)
}

// TestDamagedTableFailsTheTaskAndIsRebuilt damages a data block of a
// store's table file (*.ldb). Opening does not read it; the first read
// that does fails with the corruption, naming the file: the task is
// unhealthy, the process and its other tasks are not; the next open
// rebuilds the store.
func TestDamagedTableFailsTheTaskAndIsRebuilt(t *testing.T) {
	e := newEnv(t, 2, "s")
	dir := t.TempDir()
	path, want, table := fillTable(t, e, dir, 1.0/3)

	logs := new(kafkatest.LogBuffer)
	m, task := reopen(t, e, dir, logTo(logs))
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 0 {
		t.Fatalf("moved aside at open (%v): the damaged block is not read at open", aside)
	}
	must(t, task.Restore(e.ctx()))
	other, err := m.OpenTask(1, e.stores)
	must(t, err)
	must(t, other.Restore(e.ctx()))

	var readErr error
	for i := range integrityKeys {
		if _, _, readErr = task.Store("s").View().Get([]byte(integrityKey(i))); readErr != nil {
			break
		}
	}
	if _, ok := corruptedFile(readErr); !ok || !strings.Contains(readErr.Error(), table) {
		t.Fatalf("reads of the damaged table: err = %v, want a corruption naming %s", readErr, table)
	}
	if task.Err() == nil || task.Ready() {
		t.Fatalf("after a corrupted read: task err %v, want the task failed", task.Err())
	}
	if other.Err() != nil {
		t.Fatalf("the other task failed too: %v", other.Err())
	}
	assertLogged(t, logs, "DAMAGED STORE: the task fails", table, reasonTable)
	must(t, m.Close())

	m, task = reopen(t, e, dir, logTo(logs))
	assertLogged(t, logs, "DAMAGED STORE moved aside", table, reasonTable)
	assertRebuilt(t, e, m, task, path, reasonTable, want)
}

// TestDamageFoundByCompactionFailsTheTaskAndIsRebuilt: the task keeps
// committing over the key range of a damaged table, until goleveldb's
// compaction merges that table and meets the damage. goleveldb then halts
// the database's writes with the corruption. The task's commit fails with
// it, and the next open rebuilds.
func TestDamageFoundByCompactionFailsTheTaskAndIsRebuilt(t *testing.T) {
	e := newEnv(t, 1, "s")
	dir := t.TempDir()
	path, want, table := fillTable(t, e, dir, 1.0/2)

	// A small memtable: the commits below make level-0 tables quickly,
	// and four of them start a compaction that reads the damaged one.
	e.stores[0].LevelDB = &LevelDBOptions{WriteBufferBytes: 32 << 10}
	m, task := reopen(t, e, dir)
	must(t, task.Restore(e.ctx()))
	p := e.producer()
	must(t, task.Activate(p))
	s := task.Store("s")
	var err error
	commits := 0
	for ; commits < 2000 && err == nil; commits++ {
		for i := range integrityBatch {
			k := integrityKey((commits*integrityBatch + i) % integrityKeys)
			v := fmt.Sprintf("c%d", commits)
			must(t, s.Put([]byte(k), []byte(v)))
			want[k] = v
		}
		must(t, p.Flush(e.ctx()))
		err = task.Commit()
	}
	if _, ok := corruptedFile(err); !ok || task.Err() == nil || !strings.Contains(err.Error(), table) {
		t.Fatalf("after %d commits: err %v (task err %v), want the corruption of %s from a compaction, task failed", commits, err, task.Err(), table)
	}
	t.Logf("commit %d met the compaction's corruption: %v", commits, err)
	m.Close() // returns the corruption too: goleveldb's Close reports it

	m, task = reopen(t, e, dir)
	assertRebuilt(t, e, m, task, path, reasonTable, want)
}

// TestTruncatedManifestIsRebuilt cuts the last record of a store's
// MANIFEST short: the store is rebuilt. Without StrictManifest, goleveldb
// would drop that record and open an older version of the database. It
// would delete the table the record added as unreferenced, and replay the
// journal after it with its checkpoint: keys lost for good.
func TestTruncatedManifestIsRebuilt(t *testing.T) {
	e := newEnv(t, 1, "s")
	dir := t.TempDir()
	// A small write buffer: memtables are flushed to tables while writing,
	// each flush a MANIFEST record.
	path, want := fillStore(t, e, dir, &LevelDBOptions{WriteBufferBytes: 64 << 10})
	manifest := onlyFile(t, path, "MANIFEST-*")
	fi, err := os.Stat(manifest)
	must(t, err)
	must(t, os.Truncate(manifest, fi.Size()-3))

	m, task := reopen(t, e, dir)
	assertRebuilt(t, e, m, task, path, reasonManifest, want)
}

// TestScanCheckpointsSkipsADamagedStore: a store marked damaged while open
// claims no checkpoint: it is rebuilt from 0 at its next open.
func TestScanCheckpointsSkipsADamagedStore(t *testing.T) {
	e := newEnv(t, 1, "s")
	dir := t.TempDir()
	path, _ := fillStore(t, e, dir, nil)
	if cks, _ := ScanCheckpoints(dir, e.app); cks[0]["s"] != integrityKeys {
		t.Fatalf("ScanCheckpoints of the healthy store = %v, want s at %d", cks, integrityKeys)
	}
	must(t, os.WriteFile(filepath.Join(path, damagedName), []byte(`{"reason":"table"}`), 0o644))
	if cks, _ := ScanCheckpoints(dir, e.app); len(cks[0]) != 0 {
		t.Fatalf("ScanCheckpoints of a store marked damaged = %v, want none", cks)
	}
}

// TestJournalScan checks the torn-tail decision on journals written with
// goleveldb's journal writer: damage is a torn tail only when no intact
// record follows it, in its file or a later one.
func TestJournalScan(t *testing.T) {
	// rec returns a record of n bytes; 3 KB records put ~10 in a block.
	rec := func(i, n int) []byte { return bytes.Repeat([]byte{byte(i)}, n) }
	write := func(recs ...[]byte) []byte {
		var buf bytes.Buffer
		w := journal.NewWriter(&buf)
		for _, r := range recs {
			jw, err := w.Next()
			must(t, err)
			_, err = jw.Write(r)
			must(t, err)
		}
		must(t, w.Close())
		return buf.Bytes()
	}
	var recs [][]byte
	for i := range 40 {
		recs = append(recs, rec(i, 3000))
	}
	clean := write(recs...)                       // ~120 KB: 4 blocks
	big := write(append(recs, rec(99, 80000))...) // ends with a 3-block record
	flip := func(b []byte, at, n int) []byte {
		b = bytes.Clone(b)
		for i := at; i < at+n; i++ {
			b[i] ^= 0xff
		}
		return b
	}
	zeroTail := append(bytes.Clone(clean), make([]byte, 5000)...)
	for _, tc := range []struct {
		name    string
		files   [][]byte
		damaged bool
		torn    bool
	}{
		{"clean", [][]byte{clean}, false, false},
		{"cut inside the last record", [][]byte{clean[:len(clean)-100]}, true, true},
		{"cut after the first blocks of a multi-block record", [][]byte{big[:len(big)-40000]}, true, true},
		{"zeros after the last record", [][]byte{zeroTail}, true, true},
		{"flip in the last record", [][]byte{flip(clean, len(clean)-50, 8)}, true, true},
		{"flip in the middle, records after", [][]byte{flip(clean, len(clean)/2, 64)}, true, false},
		{"flip in the first block", [][]byte{flip(clean, 100, 1)}, true, false},
		{"torn tail in an older file, a newer file after it", [][]byte{clean[:len(clean)-100], clean}, true, false},
		{"clean older file, torn newer one", [][]byte{clean, clean[:len(clean)-100]}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s journalScan
			for i, f := range tc.files {
				must(t, s.read(fmt.Sprintf("%06d.log", i+1), bytes.NewReader(f)))
			}
			if s.damaged != tc.damaged || s.tornTail() != tc.torn {
				t.Fatalf("%s: damaged=%v torn=%v, want damaged=%v torn=%v", s.String(), s.damaged, s.tornTail(), tc.damaged, tc.torn)
			}
		})
	}
}

// TestDamageErrorNamesTheFile: the error a damaged open reports names the
// reason and the file.
func TestDamageErrorNamesTheFile(t *testing.T) {
	e := newEnv(t, 1, "s")
	dir := t.TempDir()
	path, _ := fillStore(t, e, dir, nil)
	log := onlyFile(t, path, "*.log")
	b, err := os.ReadFile(log)
	must(t, err)
	b[len(b)/2] ^= 0xff
	must(t, os.WriteFile(log, b, 0o644))
	s := &DB{path: path, ldb: DefaultLevelDBOptions(), task: &Task{}}
	err = s.open(nil)
	var d *damageError
	if !errors.As(err, &d) || d.Reason != reasonJournal || d.File != filepath.Base(log) || !strings.Contains(err.Error(), filepath.Base(log)) {
		t.Fatalf("open of a journal damaged mid-file = %v, want a journal damageError naming %s", err, filepath.Base(log))
	}
}

// TestMissingCurrentIsManifestDamage: a store whose CURRENT file is gone
// (goleveldb cannot find its manifest) is rebuilt with reason manifest.
func TestMissingCurrentIsManifestDamage(t *testing.T) {
	e := newEnv(t, 1, "s")
	dir := t.TempDir()
	path, want := fillStore(t, e, dir, nil)
	must(t, os.Remove(filepath.Join(path, "CURRENT")))
	m, task := reopen(t, e, dir)
	assertRebuilt(t, e, m, task, path, reasonManifest, want)
}
