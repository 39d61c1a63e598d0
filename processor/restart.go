package processor

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Restarting a task stopped by an error, under at-least-once and
// at-most-once. A task stops at its first error that is not a record's
// fault: a changelog record the broker refused, a LevelDB write failing, a
// dead letter that could not be produced. Under exactly-once the commit's
// transaction then aborts and the task restarts from its last commit
// (rewind.go). Under the other guarantees the session restarts it the same
// way after a backoff. suspend stops it and closes its stores; LevelDB
// keeps the last commit's state and its checkpoint. The poll loop fetches
// its partitions again from its last commit and reopens its stores, which
// restore what their changelogs hold after their checkpoints. That is what
// a crash and restart of the instance would do, for that task alone, as
// Kafka Streams replaces a stream thread that died (REPLACE_THREAD). The
// guarantee holds as for a crash: at-least-once may process the records
// after the last commit again.
//
// A poison record under processing.exception.handler=fail is not
// restarted: that policy asks to stop. Consecutive failures of a task wait
// longer each time, from Options.rebuildBackoff doubling to
// maxRebuildBackoff, the client rebuilds' backoff (rebuildBackoff): a
// broker refusing a record keeps refusing it until someone changes a
// topic's configuration. A task that ran for twice the maximum since its
// last restart starts a new episode, at the first wait.

// restartable reports whether a task stopped by err restarts by itself
// under guarantee g.
func restartable(g Guarantee, err error) bool {
	var poison *PoisonError
	return g != ExactlyOnceV2 && !errors.As(err, &poison)
}

// taskRestarts remembers, per task, when it was last restarted and the wait
// its next failure gets.
type taskRestarts struct {
	mu   sync.Mutex // guards last
	last map[int32]taskRestart
}

type taskRestart struct {
	at   time.Time     // when the restart was due
	next time.Duration // the wait of the next failure, unless a new episode
}

// delay returns how long to wait before restarting task id, stopped at now,
// and remembers the restart.
func (r *taskRestarts) delay(id int32, first, most time.Duration, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, ranFor := first, 2*most+1 // a first failure: a new episode
	if last, ok := r.last[id]; ok {
		cur, ranFor = last.next, now.Sub(last.at)
	}
	wait, next := rebuildBackoff(cur, first, most, ranFor, false)
	if r.last == nil {
		r.last = make(map[int32]taskRestart)
	}
	r.last[id] = taskRestart{at: now.Add(wait), next: next}
	return wait
}

// taskFailed is called once with a task's stopping error (setErr): when
// restartable, the task is suspended after the backoff, and the poll loop
// restarts it from its last commit.
func (s *session) taskFailed(t *task, err error) {
	if !restartable(s.r.opts.Guarantee, err) || s.ctx.Err() != nil {
		return
	}
	wait := s.restarts.delay(t.id, s.r.opts.rebuildBackoff, s.r.opts.maxRebuildBackoff, time.Now())
	s.log.Warn("restarting a stopped task from its last commit", "task", t.id, "after", wait)
	timer := time.AfterFunc(wait, func() {
		if s.ctx.Err() == nil {
			s.m.suspend([]*task{t}, s.wakePoll)
		}
	})
	// The session's end closes its tasks: no restart after it.
	context.AfterFunc(s.ctx, func() { timer.Stop() })
}
