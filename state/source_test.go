package state

import "testing"

// TestApplySourceBuffersCommitsAndSkipsWhatWasApplied: a source record goes
// to the write buffer, which Get sees and the committed view does not.
// Nothing is produced. Commit writes it with checkpoint offset+1. A
// tombstone deletes. A record at or below the last applied offset is
// skipped.
func TestApplySourceBuffersCommitsAndSkipsWhatWasApplied(t *testing.T) {
	e := newEnv(t, 1, "prices")
	m := e.open(t.TempDir())
	p := e.producer()
	task := e.activeTask(m, 0, p)
	db := task.Store("prices")
	apply := func(offset int64, key string, value []byte, wantApplied bool) {
		t.Helper()
		applied, err := db.ApplySource(offset, []byte(key), value)
		if err != nil || applied != wantApplied {
			t.Fatalf("ApplySource(%d, %s) = %v, %v; want %v", offset, key, applied, err, wantApplied)
		}
	}
	apply(0, "apple", []byte("1"), true)
	apply(1, "pear", []byte("2"), true)
	if v, found, _ := db.Get([]byte("apple")); !found || string(v) != "1" {
		t.Errorf("Get(apple) before commit = %q, %v; want the buffered 1", v, found)
	}
	if got := viewContent(t, db.View()); len(got) != 0 {
		t.Errorf("committed view before commit: %v, want empty", got)
	}
	e.commit(task, p)
	if ck := db.Checkpoint(); ck != 2 {
		t.Errorf("checkpoint after commit %d, want 2", ck)
	}
	apply(1, "pear", []byte("old"), false) // fetched again: already applied
	apply(2, "apple", nil, true)           // a tombstone
	e.commit(task, p)
	if got := viewContent(t, db.View()); len(got) != 1 || got["pear"] != "2" {
		t.Errorf("committed view %v, want only pear=2", got)
	}
	if ck := db.Checkpoint(); ck != 3 {
		t.Errorf("checkpoint %d, want 3", ck)
	}
	if content, records, _ := e.readChangelog(db.Changelog(), 0); records != 0 || len(content) != 0 {
		t.Errorf("changelog has %d records (%v): ApplySource must produce nothing", records, content)
	}
}
