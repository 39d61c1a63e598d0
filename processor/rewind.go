package processor

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Rewinding after an aborted transaction (exactly-once, txn.go). The
// tasks of an aborted transaction processed records whose effects are
// gone: their write buffers were dropped and their records aborted. They
// stop, and their stores close; LevelDB still holds the last commit. Their
// partitions are fetched again from the last commit. The member keeps, per
// task, the offsets to rewind to (rewinding). The poll loop sets the fetch
// offsets and starts the tasks anew, and their stores restore only what
// their changelogs hold after their checkpoints. It does so between a poll
// and AllowRebalance, where no rebalance callback runs, on the goroutine
// that polls, as franz-go asks of SetOffsets. A revoke or a loss meanwhile
// takes a task out of rewinding (take).

// suspend stops and drops the tasks of an aborted transaction (or a task
// stopped by an error, restart.go) that are still active here and marks
// them for the poll loop to restart; wake wakes the poll loop.
func (m *member) suspend(tasks []*task, wake func()) {
	m.mu.Lock()
	if m.rewinding == nil {
		m.rewinding = make(map[int32]map[string]int64)
	}
	var stopping []*task
	for _, t := range tasks {
		if m.active[t.id] == t {
			delete(m.active, t.id)
			m.rewinding[t.id] = nil // stopping
			stopping = append(stopping, t)
		}
	}
	m.mu.Unlock()
	if len(stopping) == 0 {
		return
	}
	stopped := stopAll(stopping, m.env.opts.ShutdownTimeout)
	dropAll(stopped)
	m.mu.Lock()
	for _, t := range stopped {
		if _, ok := m.rewinding[t.id]; ok { // not revoked or lost meanwhile
			m.rewinding[t.id] = rewindPoint(t)
		}
	}
	m.mu.Unlock()
	wake()
}

// rewindPoint returns, per input topic, where task t (stopped) resumes:
// its last commit, or the first record it was handed when it committed
// none. A topic it was handed nothing of needs no rewind.
func rewindPoint(t *task) map[string]int64 {
	at := make(map[string]int64)
	for topic, first := range t.first {
		at[topic] = first
		if c, ok := t.committed[topic]; ok {
			at[topic] = c
		}
	}
	return at
}

// rewinds takes the tasks ready to restart and the fetch offsets to
// restart them from.
func (m *member) rewinds() ([]int32, map[string]map[int32]kgo.EpochOffset) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ready []int32
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	for _, id := range slices.Sorted(maps.Keys(m.rewinding)) {
		at := m.rewinding[id]
		if at == nil {
			continue // still stopping
		}
		delete(m.rewinding, id)
		ready = append(ready, id)
		for topic, o := range at {
			if offsets[topic] == nil {
				offsets[topic] = make(map[int32]kgo.EpochOffset)
			}
			offsets[topic][id] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
	}
	return ready, offsets
}

// rewind restarts the tasks of aborted transactions, and tasks stopped by
// an error (restart.go), from their last commit: the poll loop calls it
// after a poll, before AllowRebalance.
func (s *session) rewind() {
	ready, offsets := s.m.rewinds()
	if len(ready) == 0 {
		return
	}
	s.cl.SetOffsets(offsets)
	asg, _ := s.bal.Assignment()
	s.m.assign(ready, append(slices.Clone(asg.Standby), asg.Warmup...))
	if s.c.eos == nil {
		s.r.met.taskRestarts.Add(float64(len(ready)))
	}
	s.log.Info("tasks restarted from their last commit", "tasks", ready, "offsets", offsets)
}

// wakePoll ends the poll in progress early (or the next one at once), so
// that the poll loop rewinds without waiting for records.
func (s *session) wakePoll() {
	s.wakeWanted.Store(true)
	if cancel := s.pollCancel.Load(); cancel != nil {
		(*cancel)()
	}
}

// pollOnce polls once; wakePoll ends it early.
func (s *session) pollOnce(ctx context.Context) kgo.Fetches {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.pollCancel.Store(&cancel)
	if s.wakeWanted.Swap(false) {
		cancel()
	}
	return s.cl.PollRecords(pctx, s.r.opts.maxPollRecords)
}
