package state

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestAReopenedTaskWaitsForItsClosedIncarnationsRecords: a task closed with
// changelog records in flight, as a partition lost while the broker is
// away is, makes WaitProduced for its id wait until they are resolved. A
// task closed with none in flight does not.
func TestAReopenedTaskWaitsForItsClosedIncarnationsRecords(t *testing.T) {
	e := newEnv(t, 2, "s")
	m := e.open(t.TempDir())
	p := closeWithRecordsInFlight(t, e, m, "a", "b")
	other := e.activeTask(m, 1, e.producer())
	must(t, other.Close())

	short, cancel := context.WithTimeout(e.ctx(), 50*time.Millisecond)
	defer cancel()
	err := m.WaitProduced(short, 0)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "2 changelog records of its closed incarnation still in flight") {
		t.Fatalf("WaitProduced(0) with 2 records in flight = %v; want it to wait, naming them", err)
	}
	if err := m.WaitProduced(short, 1); err != nil {
		t.Fatalf("WaitProduced(1), closed with nothing in flight = %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- m.WaitProduced(e.ctx(), 0) }()
	p.release(1)
	select {
	case err := <-waited:
		t.Fatalf("WaitProduced(0) returned (%v) with a record in flight", err)
	case <-time.After(50 * time.Millisecond): // a wait that must not end: no sleep to synchronise
	}
	p.release(1)
	if err := <-waited; err != nil {
		t.Fatalf("WaitProduced(0) after the records were resolved = %v", err)
	}
	if err := m.WaitProduced(short, 0); err != nil {
		t.Fatalf("WaitProduced(0) again = %v", err)
	}
}

// TestClosedStoresAreForgottenOnceResolved: the closed stores kept for
// WaitProduced are let go once their records are resolved, at the next close
// of any task, even when their own task never opens here again.
func TestClosedStoresAreForgottenOnceResolved(t *testing.T) {
	e := newEnv(t, 2, "s")
	m := e.open(t.TempDir())
	p := closeWithRecordsInFlight(t, e, m, "a")
	held := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.unresolved[0])
	}
	if n := held(); n != 1 {
		t.Fatalf("closed stores kept for task 0 with a record in flight: %d, want 1", n)
	}
	p.release(1)
	other := e.activeTask(m, 1, e.producer())
	must(t, other.Close())
	if n := held(); n != 0 {
		t.Fatalf("closed stores kept for task 0 after its record was resolved and another task closed: %d, want 0", n)
	}
}

// closeWithRecordsInFlight opens task 0 active with a producer that holds
// its records, writes keys, and closes it with their changelog records
// still in flight; release them through the producer returned.
func closeWithRecordsInFlight(t *testing.T, e *env, m *Manager, keys ...string) *heldProducer {
	t.Helper()
	p := &heldProducer{}
	task, err := m.OpenTask(0, e.stores)
	must(t, err)
	must(t, task.Restore(e.ctx()))
	must(t, task.Activate(p))
	for _, k := range keys {
		must(t, task.Store("s").Put([]byte(k), []byte("1")))
	}
	must(t, task.Close())
	return p
}
