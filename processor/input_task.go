package processor

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// alignsInputs reports whether the task takes its inputs' records in
// timestamp order (input_align.go): several inputs, no co-partitioned
// table (whose alignment orders the records then), MaxTaskIdle >= 0.
func (t *task) alignsInputs() bool {
	return len(t.env.topo.inputs) > 1 && t.env.opts.MaxTaskIdle >= 0 && !t.env.topo.hasTables()
}

// takeInputs takes an input batch into the records waiting in the task and
// processes them in timestamp order across the inputs, waiting for a quiet
// input up to its idle deadline, until none waits. It reports false when
// the task must end.
func (t *task) takeInputs(p kgo.FetchTopicPartition) bool {
	a := t.inputAlign()
	if !t.queueInput(a, p) {
		return false
	}
	for {
		for _, b := range t.q.takeIf(func(string) bool { return true }) {
			if !t.queueInput(a, b) {
				return false
			}
		}
		var now time.Time
		if a.idle > 0 {
			now = t.env.now()
		}
		switch step, i := a.decide(now, t.q.isPaused()); {
		case step == stepApply:
			return true // nothing waits
		case step == stepWait:
			if !t.waitIdle(a.until) {
				return false
			}
		default:
			if !t.work(a.pop(i)) {
				return false
			}
		}
	}
}

// queueInput adds an input batch to the records waiting in the task.
func (t *task) queueInput(a *inputAlign, p kgo.FetchTopicPartition) bool {
	t.env.taken(len(p.Records))
	if t.env.ahead != nil && !t.env.ahead(t, p.Records) {
		return false
	}
	a.add(p)
	return true
}

// inputAlign returns the task's input alignment state, made at its first
// batch.
func (t *task) inputAlign() *inputAlign {
	if t.inputs == nil {
		t.inputs = &inputAlign{idle: t.env.opts.MaxTaskIdle, limit: t.env.opts.taskQueue}
		for _, in := range t.env.topo.inputs {
			t.inputs.inputs = append(t.inputs.inputs, &inputQueue{topic: in.topic})
		}
	}
	return t.inputs
}

// waitIdle waits until a batch reaches the task's queue, until passes or
// the task ends; false when it ended.
func (t *task) waitIdle(until time.Time) bool {
	if t.ctx.Err() != nil {
		return false
	}
	// The batches taken from the queue may have brought it below the
	// mark where its partitions resume.
	t.q.resume(t.env.opts.taskQueue, func() { t.env.fetch.ResumeFetchPartitions(t.env.partitions(t.id)) })
	timer := time.NewTimer(until.Sub(t.env.now()))
	defer timer.Stop()
	select {
	case <-t.ctx.Done():
		return false
	case <-t.q.ready:
	case <-timer.C:
	}
	return true
}
