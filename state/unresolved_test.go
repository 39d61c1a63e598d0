package state

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestAReopenedTaskWaitsForItsClosedIncarnationsRecords: a task closed with
// changelog records in flight (a lost partition while the broker is away)
// makes WaitProduced for its id wait until they are resolved; a task closed
// with none in flight does not.
func TestAReopenedTaskWaitsForItsClosedIncarnationsRecords(t *testing.T) {
	e := newEnv(t, 2, "s")
	m := e.open(t.TempDir())
	p := &heldProducer{}
	task, err := m.OpenTask(0, e.stores)
	must(t, err)
	must(t, task.Restore(e.ctx()))
	must(t, task.Activate(p))
	for _, k := range []string{"a", "b"} {
		must(t, task.Store("s").Put([]byte(k), []byte("1")))
	}
	must(t, task.Close())
	other := e.activeTask(m, 1, e.producer())
	must(t, other.Close())

	short, cancel := context.WithTimeout(e.ctx(), 50*time.Millisecond)
	defer cancel()
	err = m.WaitProduced(short, 0)
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
