package state

import (
	"fmt"
	"maps"
	"testing"
)

func TestStoreReadsSeeWriteBufferAndViewSeesOnlyCommitted(t *testing.T) {
	e := newEnv(t, 2, "counts")
	m := e.open(t.TempDir())
	p := e.producer()
	task := e.activeTask(m, 1, p)
	s := task.Store("counts")

	must(t, s.Put([]byte("b"), []byte("2")))
	must(t, s.Put([]byte("a"), []byte("1")))
	must(t, s.Put([]byte("c"), []byte("3")))
	if v, ok, err := s.Get([]byte("a")); err != nil || !ok || string(v) != "1" {
		t.Fatalf("Get(a) before commit = %q, %v, %v; want 1 from the write buffer", v, ok, err)
	}
	if _, ok, _ := s.View().Get([]byte("a")); ok {
		t.Fatalf("View().Get(a) before commit found the uncommitted write")
	}
	e.commit(task, p)
	if got := viewContent(t, s.View()); !maps.Equal(got, map[string]string{"a": "1", "b": "2", "c": "3"}) {
		t.Fatalf("committed content = %v", got)
	}
	if ck := s.Checkpoint(); ck != 3 {
		t.Fatalf("checkpoint after 3 records = %d, want 3", ck)
	}

	// Uncommitted delete and overwrite hide and replace committed data
	// in Get and Scan, in key order.
	must(t, s.Delete([]byte("b")))
	must(t, s.Put([]byte("c"), []byte("33")))
	must(t, s.Put([]byte("ab"), []byte("x")))
	var keys []string
	must(t, s.Scan(nil, nil, func(k, v []byte) bool {
		keys = append(keys, string(k)+"="+string(v))
		return true
	}))
	if fmt.Sprint(keys) != "[a=1 ab=x c=33]" {
		t.Fatalf("Scan over buffer and LevelDB = %v", keys)
	}
	keys = nil
	must(t, s.ScanPrefix([]byte("a"), func(k, v []byte) bool {
		keys = append(keys, string(k))
		return true
	}))
	if fmt.Sprint(keys) != "[a ab]" {
		t.Fatalf("ScanPrefix(a) = %v", keys)
	}
	if _, ok, _ := s.Get([]byte("b")); ok {
		t.Fatalf("Get(b) after uncommitted delete found it")
	}
	e.commit(task, p)
	if got := viewContent(t, s.View()); !maps.Equal(got, map[string]string{"a": "1", "ab": "x", "c": "33"}) {
		t.Fatalf("committed content = %v", got)
	}
	if got := e.changelogContent(s.Changelog(), 1); !maps.Equal(got, viewContent(t, s.View())) {
		t.Fatalf("changelog content %v differs from the store's", got)
	}
	if n := s.View().ApproximateCount(); n != 3 {
		t.Fatalf("ApproximateCount = %d, want 3", n)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
