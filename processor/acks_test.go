package processor

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestAckEpochsWaitForTheirOwnRecordsOnly: a wait covers the records
// produced before its cut, not those after it.
func TestAckEpochsWaitForTheirOwnRecordsOnly(t *testing.T) {
	var a ackEpochs
	before := []int{a.add(), a.add()}
	e := a.cut()
	after := a.add()
	if before[0] != e || before[1] != e || after == e {
		t.Fatalf("epochs: before the cut %v, cut %d, after %d", before, e, after)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	a.acked(before[0])
	if err := a.wait(cancelled, e); err == nil {
		t.Fatal("wait returned with a record of its epoch unacknowledged")
	}
	waited := make(chan error, 1)
	go func() { waited <- a.wait(context.Background(), e) }()
	a.acked(before[1])
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	// The record after the cut is still out: the next cut waits for it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := a.wait(ctx, a.cut()); err == nil {
		t.Fatal("the next cut's wait returned with its record unacknowledged")
	}
	a.acked(after)
	if err := a.wait(context.Background(), after); err != nil {
		t.Fatal(err)
	}
}

// TestAckEpochsUnderConcurrentPromises: promises on other goroutines
// racing the waits (run with -race); every wait returns once its epoch's
// records are in.
func TestAckEpochsUnderConcurrentPromises(t *testing.T) {
	var a ackEpochs
	var mu sync.Mutex // the task's lock
	for range 200 {
		var wg sync.WaitGroup
		mu.Lock()
		for range 50 {
			e := a.add()
			wg.Add(1)
			go func() { defer wg.Done(); a.acked(e) }()
		}
		e := a.cut()
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := a.wait(ctx, e); err != nil {
			t.Fatal(err)
		}
		cancel()
		if n := a.want[e].Load() - a.done[e].Load(); n > 0 {
			t.Fatalf("wait returned with %d records of its epoch out", n)
		}
		wg.Wait()
	}
}
