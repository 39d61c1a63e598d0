package processor

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestWhichStoppedTasksRestart: a task stopped by an error restarts by
// itself under at-least-once and at-most-once, but not when a poison
// record stopped it under the fail policy (which asks to stop), and not
// under exactly-once (its aborted transaction restarts it, rewind.go).
func TestWhichStoppedTasksRestart(t *testing.T) {
	changelog := fmt.Errorf("task 0: commit stores: %w", errors.New("MESSAGE_TOO_LARGE"))
	poison := fmt.Errorf("task 0: %w", &PoisonError{Topic: "in", Partition: 0, Offset: 7, Stage: StageHandler, Err: errors.New("bad")})
	for _, c := range []struct {
		g    Guarantee
		err  error
		want bool
	}{
		{AtLeastOnce, changelog, true},
		{AtMostOnce, changelog, true},
		{ExactlyOnceV2, changelog, false},
		{AtLeastOnce, poison, false},
		{AtMostOnce, poison, false},
	} {
		if got := restartable(c.g, c.err); got != c.want {
			t.Errorf("restartable(%s, %v) = %v, want %v", c.g, c.err, got, c.want)
		}
	}
}

// TestRestartsOfATaskBackOff: consecutive failures of a task wait twice as
// long each time up to the maximum; another task has its own episode; a
// task that ran for twice the maximum since its restart waits the first
// backoff again.
func TestRestartsOfATaskBackOff(t *testing.T) {
	const first, most = time.Second, 4 * time.Second
	var r taskRestarts
	at := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	for i, want := range []time.Duration{first, 2 * time.Second, most, most} {
		if got := r.delay(3, first, most, at); got != want {
			t.Fatalf("failure %d of task 3: wait %v, want %v", i+1, got, want)
		}
		at = at.Add(want + 100*time.Millisecond) // failed again soon after its restart
	}
	if got := r.delay(5, first, most, at); got != first {
		t.Errorf("task 5's first failure: wait %v, want %v", got, first)
	}
	if got := r.delay(3, first, most, at.Add(2*most+time.Second)); got != first {
		t.Errorf("task 3 failing again after running for over twice the maximum: wait %v, want %v", got, first)
	}
}
