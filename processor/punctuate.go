package processor

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Punctuator is work a task does on a schedule (Schedule), with the task's
// stores and outputs, at now: the stream time or the wall-clock time that
// made it due. Its writes and emits take effect together when it returns
// nil, as a handler's do.
type Punctuator func(ctx *Context, now time.Time) error

// punctSpec is a declared punctuator.
type punctSpec struct {
	name     string
	interval int64 // ms
	clock    Clock
	fn       Punctuator
}

// Schedule makes every task of t call fn every interval of clock, as Kafka
// Streams' punctuators do. On StreamTime, the schedule is aligned to the
// epoch: fn runs after the record that moves stream time to or past the
// next multiple of interval, once however far the record moved it. On
// WallClock, fn runs interval after the task starts on an instance and
// then on the multiples of interval from there, once for any number of
// intervals missed (a long pause), between two records. The schedules
// restart with the task on each instance; punctuators are not durable
// (a timer is: OnTimer).
//
// A punctuator that fails is retried as a handler is; past the retries,
// the error policy fail stops the task, and dlq and skip log it and go on.
func Schedule(t *Topology, name string, interval time.Duration, clock Clock, fn Punctuator) {
	switch {
	case !storeNameRE.MatchString(name):
		t.errs = append(t.errs, fmt.Errorf("punctuator %q: a name is letters, digits, '.', '_' and '-'", name))
	case interval < time.Millisecond:
		t.errs = append(t.errs, fmt.Errorf("punctuator %q: interval %v is below 1ms", name, interval))
	case clock != StreamTime && clock != WallClock:
		t.errs = append(t.errs, fmt.Errorf("punctuator %q: clock %v is neither StreamTime nor WallClock", name, clock))
	case fn == nil:
		t.errs = append(t.errs, fmt.Errorf("punctuator %q: no function", name))
	case slices.ContainsFunc(t.punctuators, func(p *punctSpec) bool { return p.name == name }):
		t.errs = append(t.errs, fmt.Errorf("punctuator %q declared twice", name))
	default:
		if clock == StreamTime {
			t.useTime()
		}
		t.punctuators = append(t.punctuators, &punctSpec{name: name, interval: interval.Milliseconds(), clock: clock, fn: fn})
	}
}

// usesWallClock reports whether t has anything due on the wall clock: a
// wall-clock punctuator, or timers (whose handlers may set wall-clock ones).
func (t *Topology) usesWallClock() bool {
	return t.timers != nil || slices.ContainsFunc(t.punctuators, func(p *punctSpec) bool { return p.clock == WallClock })
}

// nextPunctuation returns when a schedule of interval that was due at
// scheduled and ran at now is due next: the next multiple of interval
// after scheduled that is past now (Kafka Streams'
// PunctuationSchedule.next), so missed punctuations are not made up.
func nextPunctuation(scheduled, interval, now int64) int64 {
	next := scheduled + interval
	if now >= next {
		next = scheduled + ((now-scheduled)/interval+1)*interval
	}
	return next
}

// firePass runs what is due on clock at now (ms): the due timers, in due
// order then key order, then the due punctuators, in declaration order.
func (p *recordProcessor) firePass(ctx context.Context, task int32, clock Clock, now int64) error {
	tt := p.tt
	if now >= tt.timerNext[clock] {
		if err := p.fireTimers(ctx, task, clock, now); err != nil {
			return err
		}
	}
	for i, ps := range p.topo.punctuators {
		if ps.clock != clock || now < tt.punctNext[i] {
			continue
		}
		at := time.UnixMilli(now).UTC()
		fn := func(c *Context) (string, error) { return StageHandler, ps.fn(c, at) }
		if err := p.fire(ctx, task, at, "punctuator "+ps.name, unit{fn: fn}); err != nil {
			return err
		}
		tt.punctNext[i] = nextPunctuation(tt.punctNext[i], ps.interval, now)
	}
	tt.setStreamDue(p.topo)
	return nil
}

// fireStream runs what the task's stream time made due.
func (p *recordProcessor) fireStream(ctx context.Context, task int32) error {
	return p.firePass(ctx, task, StreamTime, p.tt.st.Time())
}

// fireWall runs what is due on the wall clock at now.
func (p *recordProcessor) fireWall(ctx context.Context, task int32, now time.Time) error {
	if err := p.loadTime(task); err != nil {
		return err
	}
	return p.firePass(ctx, task, WallClock, now.UnixMilli())
}

// fire runs a punctuation or a fired timer (what names it) with retries.
// Past them, the error policy fail stops the task; dlq and skip log the
// failure and apply u.pre alone, so that a failed timer is dropped.
func (p *recordProcessor) fire(ctx context.Context, task int32, at time.Time, what string, u unit) error {
	f, err := p.run(ctx, task, at, u)
	if err != nil || f.err == nil {
		return err
	}
	p.lastStage = f.stage
	if p.policy == PolicyFail {
		p.log.Error("punctuation or timer failed: stopping the task (error policy fail)", slog.String("what", what), slog.String("stage", f.stage), slog.Any("err", f.err))
		return fmt.Errorf("%s failed (%s, %d attempts; error policy fail): %w", what, f.stage, f.tries, f.err)
	}
	p.logPoison(slog.LevelWarn, "punctuation or timer failed; dropped", slog.String("what", what), slog.String("stage", f.stage),
		slog.Int("attempts", f.tries), slog.Any("err", f.err))
	if len(u.pre) == 0 {
		return nil
	}
	if err := p.apply(task, at, u.pre); err != nil {
		return fmt.Errorf("%s: drop: %w", what, err)
	}
	return nil
}
