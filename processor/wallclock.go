package processor

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// The task's side of time (streamtime.go, punctuate.go, timers.go): its
// time loaded when it starts, and the wall-clock timer that wakes its
// goroutine for what is due on the wall clock. The per-record path pays
// nothing for it: the task checks the timer's channel once per batch, and
// waits on it beside its queue when idle.

// startClock loads the task's time once its stores are open (stream time,
// the timers' next due times, its punctuators' schedules from now) and
// arms its wall-clock timer. It reports false when the task must end.
func (t *task) startClock() bool {
	t.mu.Lock()
	err := t.proc.loadTime(t.id)
	t.mu.Unlock()
	if err != nil {
		t.setErr(fmt.Errorf("task %d: start: %w", t.id, err))
		return false
	}
	if t.env.topo.usesWallClock() {
		t.wall, t.wallAt = time.NewTimer(time.Hour), math.MaxInt64
		t.wall.Stop()
		t.armWall()
	}
	return true
}

// wallC returns the channel of the task's wall-clock timer; nil (never
// ready) when its topology has nothing on the wall clock.
func (t *task) wallC() <-chan time.Time {
	if t.wall == nil {
		return nil
	}
	return t.wall.C
}

// armWall sets the wall-clock timer to the earliest wall time anything is
// due, unless it is set to that already.
func (t *task) armWall() {
	due := t.proc.tt.wallDue(t.env.topo)
	if due == t.wallAt {
		return
	}
	t.wallAt = due
	if due == math.MaxInt64 {
		t.wall.Stop()
		return
	}
	t.wall.Reset(max(0, time.UnixMilli(due).Sub(t.env.now())))
}

// wallTick runs what is due on the wall clock if the timer fired, and
// re-arms it for what is due next (after a batch, whose handlers may have
// set wall-clock timers). It reports false when the task must end.
func (t *task) wallTick() bool {
	if t.wall == nil {
		return true
	}
	select {
	case <-t.wall.C:
		return t.fireWall()
	default:
		t.armWall()
		return true
	}
}

// fireWall runs what is due on the wall clock now, between two records as
// a record is processed (the gate, the task's lock), and re-arms the
// timer. It reports false when the task must end.
func (t *task) fireWall() bool {
	t.wallAt = math.MaxInt64 // fired
	if g := t.env.gate; g != nil {
		g.RLock()
		defer g.RUnlock()
	}
	t.mu.Lock()
	if t.ctx.Err() != nil {
		t.mu.Unlock()
		return false
	}
	err := t.proc.fireWall(t.ctx, t.id, t.env.now())
	t.mu.Unlock()
	if err != nil {
		if t.ctx.Err() != nil && errors.Is(err, t.ctx.Err()) {
			return false
		}
		t.setErr(fmt.Errorf("task %d: %w", t.id, err))
		return false
	}
	t.armWall()
	return true
}
