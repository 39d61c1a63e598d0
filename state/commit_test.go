package state

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// heldProducer holds every record's acknowledgement until release, which
// acknowledges them in the order they were produced, at the next offset of
// their partition: as a broker's slow round trip does.
type heldProducer struct {
	mu       sync.Mutex
	next     map[int32]int64
	held     []*kgo.Record
	promises []func(*kgo.Record, error)
}

func (p *heldProducer) Produce(_ context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = append(p.held, r)
	p.promises = append(p.promises, promise)
}

// release acknowledges the n oldest held records.
func (p *heldProducer) release(n int) {
	p.mu.Lock()
	rs, ps := p.held[:n], p.promises[:n]
	p.held, p.promises = p.held[n:], p.promises[n:]
	if p.next == nil {
		p.next = make(map[int32]int64)
	}
	for _, r := range rs {
		r.Offset = p.next[r.Partition]
		p.next[r.Partition]++
	}
	p.mu.Unlock()
	for i, r := range rs {
		ps[i](r, nil)
	}
}

// TestAFrozenCutIsWrittenWithItsOwnCheckpoint: the writes after a cut go on
// while the cut waits for its changelog records. Its write carries the
// checkpoint after its own last record, not after the later ones. Every
// reader sees every write throughout.
func TestAFrozenCutIsWrittenWithItsOwnCheckpoint(t *testing.T) {
	p := &heldProducer{}
	task, s := offlineTaskWith(t, p)
	must(t, s.Put([]byte("a"), []byte("1")))
	must(t, s.Put([]byte("b"), []byte("1")))
	must(t, task.Freeze())
	must(t, s.Put([]byte("a"), []byte("2")))
	must(t, s.Put([]byte("c"), []byte("1")))
	must(t, s.Delete([]byte("b")))

	const all = "a=2 c=1 "
	check := func(when string, committed string) {
		t.Helper()
		if got := latestContent(t, s.Latest(), "", ""); got != all {
			t.Fatalf("%s: latest scan = %s, want %s", when, got, all)
		}
		got := ""
		must(t, s.Scan(nil, nil, func(k, v []byte) bool { got += string(k) + "=" + string(v) + " "; return true }))
		if got != all {
			t.Fatalf("%s: task scan = %s, want %s", when, got, all)
		}
		if v, ok, _ := s.Latest().Get([]byte("a")); !ok || string(v) != "2" {
			t.Fatalf("%s: latest Get(a) = %q %v, want 2", when, v, ok)
		}
		if _, ok, _ := s.Get([]byte("b")); ok {
			t.Fatalf("%s: Get(b) found a deleted key", when)
		}
		got = ""
		must(t, s.View().Scan(nil, nil, func(k, v []byte) bool { got += string(k) + "=" + string(v) + " "; return true }))
		if got != committed {
			t.Fatalf("%s: committed scan = %s, want %s", when, got, committed)
		}
	}
	check("cut, nothing acknowledged", "")

	err := task.WriteFrozen()
	if err == nil || !strings.Contains(err.Error(), "2 changelog records not yet acknowledged") {
		t.Fatalf("WriteFrozen before the acknowledgements = %v, want 2 records not yet acknowledged", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := task.WaitFrozen(ctx); err == nil {
		t.Fatal("WaitFrozen returned before the cut's records were acknowledged")
	}
	p.release(5) // the cut's two and the three after it
	must(t, task.WaitFrozen(context.Background()))
	must(t, task.WriteFrozen())
	if ck := s.Checkpoint(); ck != 2 {
		t.Fatalf("checkpoint after the cut's write = %d, want 2 (after the cut's own records)", ck)
	}
	check("cut written", "a=1 b=1 ")

	must(t, task.Commit())
	if ck := s.Checkpoint(); ck != 5 {
		t.Fatalf("checkpoint after Commit = %d, want 5", ck)
	}
	check("committed", all)
}

// TestAnUnwrittenCutIsCarriedByTheNext: a commit that cut and never wrote
// (abandoned while waiting) leaves its writes to the next cut, which
// writes both with the later checkpoint.
func TestAnUnwrittenCutIsCarriedByTheNext(t *testing.T) {
	p := &heldProducer{}
	task, s := offlineTaskWith(t, p)
	must(t, s.Put([]byte("a"), []byte("1")))
	must(t, s.Put([]byte("b"), []byte("1")))
	must(t, task.Freeze()) // never written
	must(t, s.Put([]byte("a"), []byte("3")))
	must(t, s.Delete([]byte("b")))
	must(t, s.Put([]byte("c"), []byte("1")))
	must(t, task.Freeze())
	p.release(5)
	must(t, task.WaitFrozen(context.Background()))
	must(t, task.WriteFrozen())
	if ck := s.Checkpoint(); ck != 5 {
		t.Fatalf("checkpoint = %d, want 5", ck)
	}
	if got := viewContent(t, s.View()); fmt.Sprint(got) != "map[a:3 c:1]" {
		t.Fatalf("committed = %v, want a=3 c=1", got)
	}
}

// TestAbortDropsAnUnwrittenCut: an abort goes back to what LevelDB has,
// dropping a cut not yet written as well as the write buffer.
func TestAbortDropsAnUnwrittenCut(t *testing.T) {
	task, s := offlineTask(t)
	must(t, s.Put([]byte("a"), []byte("1")))
	must(t, task.Commit())
	must(t, s.Put([]byte("a"), []byte("2")))
	must(t, task.Freeze())
	must(t, s.Put([]byte("b"), []byte("2")))
	task.Abort()
	for name, get := range map[string]func([]byte) ([]byte, bool, error){"task": s.Get, "latest": s.Latest().Get} {
		if v, ok, _ := get([]byte("a")); !ok || string(v) != "1" {
			t.Fatalf("%s Get(a) after the abort = %q %v, want 1", name, v, ok)
		}
		if _, ok, _ := get([]byte("b")); ok {
			t.Fatalf("%s Get(b) after the abort found an aborted write", name)
		}
	}
	must(t, task.WriteFrozen())
	if ck := s.Checkpoint(); ck != 1 {
		t.Fatalf("checkpoint = %d, want 1 (the aborted cut is not written)", ck)
	}
}

// TestWriteFrozenAfterCloseFails: a write that comes after the task was
// closed (a revoke, a shutdown) changes nothing and says why.
func TestWriteFrozenAfterCloseFails(t *testing.T) {
	task, s := offlineTask(t)
	must(t, s.Put([]byte("a"), []byte("1")))
	must(t, task.Freeze())
	must(t, task.Close())
	if err := task.WriteFrozen(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("WriteFrozen after Close = %v, want a closed-task error", err)
	}
}

// TestCutsAndWritesRaceTheTaskAndItsReaders is the processor's commit, under
// the race detector: a task goroutine writes, pausing only for the cut;
// the writes of each cut reach LevelDB while it goes on; latest readers
// read throughout. At the end LevelDB has the task's last values.
func TestCutsAndWritesRaceTheTaskAndItsReaders(t *testing.T) {
	task, s := offlineTask(t)
	var pause sync.Mutex // the task's lock: held per write, and by the cut
	want := make(map[string]string)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20000 {
			k, v := fmt.Sprintf("k%03d", i%500), fmt.Sprint(i)
			pause.Lock()
			if _, _, err := s.Get([]byte(k)); err != nil {
				t.Error(err)
			}
			if err := s.Put([]byte(k), []byte(v)); err != nil {
				t.Error(err)
			}
			want[k] = v
			pause.Unlock()
		}
	}()
	stopReaders := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; ; i++ {
				select {
				case <-stopReaders:
					return
				default:
				}
				if _, _, err := s.Latest().Get(fmt.Appendf(nil, "k%03d", i%500)); err != nil {
					t.Error(err)
				}
				if i%100 == 0 {
					if err := s.Latest().Scan([]byte("k1"), []byte("k2"), func(_, _ []byte) bool { return true }); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	cuts := 0
	for running := true; running; cuts++ {
		select {
		case <-done:
			running = false
		default:
		}
		pause.Lock()
		must(t, task.Freeze())
		pause.Unlock()
		must(t, task.WaitFrozen(context.Background()))
		must(t, task.WriteFrozen())
	}
	close(stopReaders)
	readers.Wait()
	got := viewContent(t, s.View())
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after %d cuts LevelDB has %d keys differing from the task's last writes", cuts, len(got))
	}
}
