package state

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The latest view's tests need no broker: an active task's writes go to its
// write buffer and to a producer, here one that acknowledges every record
// at once (ackProducer); nothing is restored.

// ackProducer acknowledges every record as it is produced, at the next
// offset of its partition.
type ackProducer struct {
	mu   sync.Mutex
	next map[int32]int64
}

func (p *ackProducer) Produce(_ context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	p.mu.Lock()
	if p.next == nil {
		p.next = make(map[int32]int64)
	}
	r.Offset = p.next[r.Partition]
	p.next[r.Partition]++
	p.mu.Unlock()
	promise(r, nil)
}

// offlineTask opens task 0 of a state directory whose Kafka client dials
// nothing, with one store "s", and activates it with an ackProducer.
func offlineTask(t testing.TB) (*Task, *DB) {
	t.Helper()
	return offlineTaskWith(t, &ackProducer{})
}

// offlineTaskWith is offlineTask with the task's producer p.
func offlineTaskWith(t testing.TB, p Producer) (*Task, *DB) {
	t.Helper()
	o := DefaultOptions()
	o.Dir, o.ApplicationID, o.CleanupInterval = t.TempDir(), "latest-test", 0
	o.ClientOpts = []kgo.Opt{kgo.SeedBrokers("unused:1"), kgo.Dialer(func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no broker in the latest view's tests")
	})}
	o.Logger = testLogger(t)
	m, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	task, err := m.OpenTask(0, []StoreSpec{{Name: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Activate(p); err != nil {
		t.Fatal(err)
	}
	return task, task.Store("s")
}

func latestContent(t testing.TB, v *LatestView, start, end string, over ...Entry) string {
	t.Helper()
	var s, e []byte
	if start != "" {
		s = []byte(start)
	}
	if end != "" {
		e = []byte(end)
	}
	out := ""
	if err := v.ScanOver(s, e, over, func(k, val []byte) bool {
		out += string(k) + "=" + string(val) + " "
		return true
	}); err != nil {
		t.Fatalf("latest scan: %v", err)
	}
	return out
}

func TestLatestSeesAPutBeforeCommitAndCommittedDoesNot(t *testing.T) {
	task, s := offlineTask(t)
	must(t, s.Put([]byte("a"), []byte("1")))
	if v, ok, err := s.Latest().Get([]byte("a")); err != nil || !ok || string(v) != "1" {
		t.Fatalf("latest Get(a) before commit = %q, %v, %v; want 1 from the write buffer", v, ok, err)
	}
	if _, ok, err := s.View().Get([]byte("a")); err != nil || ok {
		t.Fatalf("committed Get(a) before commit: found %v, err %v; want not found", ok, err)
	}
	must(t, task.Commit())
	for name, get := range map[string]func([]byte) ([]byte, bool, error){"latest": s.Latest().Get, "committed": s.View().Get} {
		if v, ok, err := get([]byte("a")); err != nil || !ok || string(v) != "1" {
			t.Fatalf("%s Get(a) after commit = %q, %v, %v; want 1", name, v, ok, err)
		}
	}
	// An empty value is a value, not a delete.
	must(t, s.Put([]byte("e"), nil))
	if v, ok, err := s.Latest().Get([]byte("e")); err != nil || !ok || len(v) != 0 {
		t.Fatalf("latest Get(e) of an empty value = %q, %v, %v; want found and empty", v, ok, err)
	}
}

func TestLatestDeleteHidesACommittedKey(t *testing.T) {
	task, s := offlineTask(t)
	must(t, s.Put([]byte("a"), []byte("1")))
	must(t, s.Put([]byte("b"), []byte("2")))
	must(t, task.Commit())
	must(t, s.Delete([]byte("a")))
	if _, ok, err := s.Latest().Get([]byte("a")); err != nil || ok {
		t.Fatalf("latest Get(a) after an uncommitted delete: found %v, err %v", ok, err)
	}
	if got := latestContent(t, s.Latest(), "", ""); got != "b=2 " {
		t.Fatalf("latest scan after deleting a = %q, want only b", got)
	}
	if v, ok, _ := s.View().Get([]byte("a")); !ok || string(v) != "1" {
		t.Fatalf("committed Get(a) before the delete is committed = %q, %v; want 1", v, ok)
	}
	// An aborted buffer is gone for latest readers too.
	task.Abort()
	if v, ok, _ := s.Latest().Get([]byte("a")); !ok || string(v) != "1" {
		t.Fatalf("latest Get(a) after Abort = %q, %v; want the committed 1", v, ok)
	}
}

func TestLatestScanMergesLayersInKeyOrderWithinBounds(t *testing.T) {
	task, s := offlineTask(t)
	for _, k := range []string{"a", "c", "e", "g"} {
		must(t, s.Put([]byte(k), []byte("db-"+k)))
	}
	must(t, task.Commit())
	// The buffer: a new key, a delete, an overwrite.
	must(t, s.Put([]byte("b"), []byte("buf-b")))
	must(t, s.Delete([]byte("c")))
	must(t, s.Put([]byte("e"), []byte("buf-e")))
	must(t, s.Put([]byte("d"), []byte("buf-d")))
	// The layer above (a record cache): it wins over both, its delete
	// hides the buffer's d, and it brings back c.
	over := []Entry{{Key: []byte("a"), Value: []byte("over-a")}, {Key: []byte("c"), Value: []byte("over-c")}, {Key: []byte("d"), Deleted: true}, {Key: []byte("f"), Value: []byte("over-f")}}
	cases := []struct {
		start, end string
		over       []Entry
		want       string
	}{
		{"", "", nil, "a=db-a b=buf-b d=buf-d e=buf-e g=db-g "},
		{"", "", over, "a=over-a b=buf-b c=over-c e=buf-e f=over-f g=db-g "},
		{"b", "f", over[1:3], "b=buf-b c=over-c e=buf-e "},
		{"c", "", nil, "d=buf-d e=buf-e g=db-g "},
		{"", "c", nil, "a=db-a b=buf-b "},
		{"h", "", nil, ""},
	}
	for _, c := range cases {
		if got := latestContent(t, s.Latest(), c.start, c.end, c.over...); got != c.want {
			t.Errorf("latest scan [%q, %q) over %d entries = %q, want %q", c.start, c.end, len(c.over), got, c.want)
		}
	}
	// fn returning false stops the merge.
	n := 0
	must(t, s.Latest().Scan(nil, nil, func(k, v []byte) bool { n++; return n < 2 }))
	if n != 2 {
		t.Fatalf("scan stopped after %d keys, want 2", n)
	}
	// The task's own Scan merges the same way.
	var own string
	must(t, s.Scan(nil, nil, func(k, v []byte) bool { own += string(k) + "=" + string(v) + " "; return true }))
	if own != cases[0].want {
		t.Fatalf("the task's own scan = %q, want %q", own, cases[0].want)
	}
}

// TestLatestScanAtTheCutSeesTheCutBuffer: a commit's cut publishes the
// frozen buffer, marks it unwritten, and only then publishes the new write
// buffer. A scan that loads the new, empty buffer must find the cut's
// values in the frozen one, not the previous commit's in LevelDB. The hook
// scans at the moment the new buffer is published; with the mark set
// after that, this scan would read "1" from LevelDB.
func TestLatestScanAtTheCutSeesTheCutBuffer(t *testing.T) {
	task, s := offlineTask(t)
	must(t, s.Put([]byte("k"), []byte("1")))
	must(t, task.Commit()) // LevelDB holds 1
	must(t, s.Put([]byte("k"), []byte("2")))
	var seen []string
	s.afterRotate = func() {
		must(t, s.Latest().Scan(nil, nil, func(k, v []byte) bool {
			seen = append(seen, string(k)+"="+string(v))
			return true
		}))
	}
	must(t, task.Commit())
	if len(seen) != 1 || seen[0] != "k=2" {
		t.Fatalf("a scan as the cut published the new write buffer saw %q, want [k=2]", seen)
	}
}

// TestLatestReadsDuringWritesAndCommits runs readers on other goroutines
// while the task writes and commits. Under -race, it checks that no reader
// touches a buffer the writer resets. Each reader sees every key's count
// never go back nor disappear.
func TestLatestReadsDuringWritesAndCommits(t *testing.T) {
	task, s := offlineTask(t)
	const keys, rounds = 20, 300
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := make(map[string]int)
			check := func(k string, v []byte, found bool) error {
				if !found {
					if last[k] > 0 {
						return fmt.Errorf("reader %d: key %s disappeared after %d", r, k, last[k])
					}
					return nil
				}
				n, err := strconv.Atoi(string(v))
				if err != nil || n < last[k] {
					return fmt.Errorf("reader %d: key %s went from %d to %q", r, k, last[k], v)
				}
				last[k] = n
				return nil
			}
			for i := 0; !done.Load(); i++ {
				k := "k" + strconv.Itoa(i%keys)
				v, found, err := s.Latest().Get([]byte(k))
				if err == nil {
					err = check(k, v, found)
				}
				if err == nil && r%2 == 0 {
					var bad error
					err = s.Latest().Scan(nil, nil, func(k, v []byte) bool {
						bad = check(string(k), v, true)
						return bad == nil
					})
					err = errors.Join(err, bad)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 1; i <= rounds; i++ {
		for k := range keys {
			must(t, s.Put([]byte("k"+strconv.Itoa(k)), []byte(strconv.Itoa(i))))
		}
		if i%7 == 0 {
			must(t, task.Commit())
		}
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if v, ok, _ := s.Latest().Get([]byte("k0")); !ok || string(v) != strconv.Itoa(rounds) {
		t.Fatalf("latest k0 at the end = %q, %v; want %d", v, ok, rounds)
	}
}

func TestLatestReadsOfAClosedTaskFail(t *testing.T) {
	task, s := offlineTask(t)
	must(t, s.Put([]byte("a"), []byte("1")))
	must(t, task.Close())
	if _, _, err := s.Latest().Get([]byte("a")); !errors.Is(err, ErrTaskClosed) {
		t.Fatalf("latest Get on a closed task: err %v, want ErrTaskClosed", err)
	}
	if err := s.Latest().Scan(nil, nil, func(k, v []byte) bool { return true }); !errors.Is(err, ErrTaskClosed) {
		t.Fatalf("latest Scan on a closed task: err %v, want ErrTaskClosed", err)
	}
}

// TestGetThroughCommitsAndAbortsMatchesAModel drives an active store with
// random writes, deletes, commits and aborts. Get always answers what a
// model of committed and uncommitted state says. The key may be in the
// write buffer, in the last commit's buffer kept as a read cache
// (DB.committed), or only in LevelDB. The committed view always answers
// the model's committed state.
func TestGetThroughCommitsAndAbortsMatchesAModel(t *testing.T) {
	task, s := offlineTask(t)
	// Three layers, as the store has them: LevelDB (committed), a cut not
	// yet written (frozen), the write buffer (pending).
	committed, frozen, pending := map[string]string{}, map[string]*string{}, map[string]*string{}
	fold := func(dst map[string]*string, src map[string]*string) {
		maps.Copy(dst, src)
		clear(src)
	}
	writeDown := func() {
		for k, v := range frozen {
			if v == nil {
				delete(committed, k)
			} else {
				committed[k] = *v
			}
		}
		clear(frozen)
	}
	rng := uint64(1)
	next := func(n int) int { rng = rng*6364136223846793005 + 1442695040888963407; return int(rng>>33) % n }
	cachedHits, frozenHits := 0, 0
	for op := range 6000 {
		k := fmt.Sprintf("k%02d", next(40))
		switch r := next(100); {
		case r < 50:
			v := strconv.Itoa(op)
			must(t, s.Put([]byte(k), []byte(v)))
			pending[k] = &v
		case r < 60:
			must(t, s.Delete([]byte(k)))
			pending[k] = nil
		case r < 63:
			must(t, task.Commit())
			fold(frozen, pending)
			writeDown()
		case r < 67:
			must(t, task.Freeze())
			fold(frozen, pending)
		case r < 70:
			must(t, task.WaitFrozen(context.Background()))
			must(t, task.WriteFrozen())
			writeDown()
		case r < 72:
			task.Abort()
			clear(pending)
			clear(frozen)
		}
		want, wantOK := committed[k]
		for _, layer := range []map[string]*string{frozen, pending} {
			if pv, ok := layer[k]; ok {
				want, wantOK = "", pv != nil
				if pv != nil {
					want = *pv
				}
			}
		}
		if _, inBuf := s.buf.get([]byte(k)); !inBuf && s.committed != nil {
			if _, ok := s.committed.get([]byte(k)); ok {
				if s.unwritten.Load() {
					frozenHits++
				} else {
					cachedHits++
				}
			}
		}
		got, ok, err := s.Get([]byte(k))
		must(t, err)
		if ok != wantOK || string(got) != want {
			t.Fatalf("op %d: Get(%s) = %q %v, want %q %v", op, k, got, ok, want, wantOK)
		}
		lgot, lok, err := s.Latest().Get([]byte(k))
		must(t, err)
		if lok != wantOK || string(lgot) != want {
			t.Fatalf("op %d: latest Get(%s) = %q %v, want %q %v", op, k, lgot, lok, want, wantOK)
		}
		cgot, cok, err := s.View().Get([]byte(k))
		must(t, err)
		if cv, cin := committed[k]; cok != cin || string(cgot) != cv {
			t.Fatalf("op %d: committed Get(%s) = %q %v, want %q %v", op, k, cgot, cok, cv, cin)
		}
		if op%50 == 0 { // the scans, the task's and a latest reader's
			all := maps.Clone(committed)
			for _, layer := range []map[string]*string{frozen, pending} {
				for lk, lv := range layer {
					if lv == nil {
						delete(all, lk)
					} else {
						all[lk] = *lv
					}
				}
			}
			wantScan := ""
			for _, lk := range slices.Sorted(maps.Keys(all)) {
				wantScan += lk + "=" + all[lk] + " "
			}
			taskScan := ""
			must(t, s.Scan(nil, nil, func(k, v []byte) bool { taskScan += string(k) + "=" + string(v) + " "; return true }))
			if taskScan != wantScan {
				t.Fatalf("op %d: task scan = %s, want %s", op, taskScan, wantScan)
			}
			if got := latestContent(t, s.Latest(), "", ""); got != wantScan {
				t.Fatalf("op %d: latest scan = %s, want %s", op, got, wantScan)
			}
		}
	}
	if cachedHits == 0 || frozenHits == 0 {
		t.Fatalf("Gets answered by the last cut's buffer: %d written, %d unwritten; want some of each", cachedHits, frozenHits)
	}
}
