package processor

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrorPolicy says what happens to a poison record: one whose key or value
// does not decode, or whose handler still fails after the retries
// (processing.exception.handler).
type ErrorPolicy string

const (
	// PolicyDeadLetter produces the record, as it arrived and with headers
	// naming its source and the error, to the dead-letter topic, and counts
	// its offset as processed. The default.
	PolicyDeadLetter ErrorPolicy = "dlq"
	// PolicySkip logs and counts the record and moves on.
	PolicySkip ErrorPolicy = "skip"
	// PolicyFail stops the task: its offset is not committed, and the
	// instance reports not ready with the error.
	PolicyFail ErrorPolicy = "fail"
)

// ParseErrorPolicy reads a policy name: dlq, skip (or continue, Kafka
// Streams' word), fail. The empty string is dlq.
func ParseErrorPolicy(s string) (ErrorPolicy, error) {
	switch s {
	case "", "dlq":
		return PolicyDeadLetter, nil
	case "skip", "continue":
		return PolicySkip, nil
	case "fail":
		return PolicyFail, nil
	}
	return "", fmt.Errorf("error policy %q: valid are dlq, skip (or continue), fail", s)
}

// Retry bounds the retries of a failing handler. Decode errors are never
// retried: the bytes will not change.
type Retry struct {
	// Attempts is the number of handler calls for one record, the first
	// included; 1 disables retries.
	Attempts int
	// Backoff is the wait before the first retry; it doubles on every
	// retry up to MaxBackoff. 0 retries at once.
	Backoff    time.Duration
	MaxBackoff time.Duration
}

func (r Retry) wait(attempt int) time.Duration {
	d := r.Backoff
	for i := 0; i < attempt && d < r.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.MaxBackoff)
}

// Headers of a dead-lettered record, added after the record's own.
const (
	HeaderDLQTopic     = "rackstream.dlq.topic"
	HeaderDLQPartition = "rackstream.dlq.partition"
	HeaderDLQOffset    = "rackstream.dlq.offset"
	HeaderDLQError     = "rackstream.dlq.error"
	HeaderDLQStage     = "rackstream.dlq.stage" // decode-key, decode-value, timestamp or handler
	HeaderDLQAttempts  = "rackstream.dlq.attempts"
	HeaderDLQAppID     = "rackstream.dlq.application.id"
)

// PoisonError is a record the error policy fail stopped a task on.
type PoisonError struct {
	Topic     string
	Partition int32
	Offset    int64
	Stage     string
	Err       error
}

func (e *PoisonError) Error() string {
	return fmt.Sprintf("poison record %s/%d@%d (%s): %v", e.Topic, e.Partition, e.Offset, e.Stage, e.Err)
}

func (e *PoisonError) Unwrap() error { return e.Err }

// backend is where a task's records take effect: the runtime's LevelDB
// stores and Kafka producer, or the TestDriver's maps.
type backend interface {
	// get reads a store of task, seeing the task's uncommitted writes.
	get(task int32, s *storeSpec, key []byte) ([]byte, bool, error)
	// apply makes the effects of one successfully handled record (or
	// punctuation, or fired timer), stamped ts.
	apply(task int32, ts time.Time, ws []write) error
	// scan calls fn for each key of a store of task in [start, end), in
	// key order, seeing the task's uncommitted writes, until fn returns
	// false.
	scan(task int32, s *storeSpec, start, end []byte, fn func(key, value []byte) bool) error
	// committedOffset returns the task's last committed offset of topic
	// (the next record a new owner reads), -1 when none is known.
	committedOffset(task int32, topic string) int64
	// deadLetter sends a poison record to the dead-letter topic.
	deadLetter(dl *kgo.Record) error
}

// outcome is what became of a record.
type outcome int

const (
	outcomeProcessed outcome = iota
	outcomeDeadLettered
	outcomeSkipped
	// outcomeLateDeadLettered: a windowed aggregation dropped the record,
	// too late for every window it falls in, and it was dead-lettered.
	outcomeLateDeadLettered
)

// recordProcessor runs records of one task through decoding, the handler,
// retries and the error policy. It is owned by the task's goroutine.
type recordProcessor struct {
	topo     *Topology
	policy   ErrorPolicy
	retry    Retry
	dlqTopic string
	log      *slog.Logger
	c        Context
	// tt is the time of the task being processed; wallNow its wall
	// clock; fireRec the record a punctuation's or timer's Context shows.
	tt      *taskTime
	wallNow func() time.Time
	fireRec kgo.Record
	// lastStage is the stage of the last poison record, for metrics.
	lastStage string
	// late is what the windowed aggregations found late in the last record
	// (Context.late), for metrics.
	late []lateMark
	// A burst of poison records (a producer writing garbage) is logged at
	// most once a second per task; the metrics count every one.
	lastLog    time.Time
	suppressed int
}

// logPoison logs a poison record unless one was logged less than a second
// ago, in which case it is counted and reported with the next line.
func (p *recordProcessor) logPoison(level slog.Level, msg string, attrs ...any) {
	now := time.Now()
	if now.Sub(p.lastLog) < time.Second {
		p.suppressed++
		return
	}
	if p.suppressed > 0 {
		attrs = append(attrs, slog.Int("suppressed_since_last_line", p.suppressed))
	}
	p.lastLog, p.suppressed = now, 0
	p.log.Log(context.Background(), level, msg, attrs...)
}

func newRecordProcessor(topo *Topology, policy ErrorPolicy, retry Retry, dlqTopic string, log *slog.Logger, be backend, wallNow func() time.Time) *recordProcessor {
	p := &recordProcessor{
		topo: topo, policy: policy, retry: retry, dlqTopic: dlqTopic, log: log,
		c: Context{topo: topo, be: be}, wallNow: wallNow,
	}
	p.setTime(newTaskTime())
	return p
}

// setTime makes tt the time of the task processed next.
func (p *recordProcessor) setTime(tt *taskTime) { p.tt, p.c.tt = tt, tt }

// process handles r, and then what r's stream time made due (timers.go,
// punctuate.go). A non-nil error stops the task: a PoisonError under
// PolicyFail, a backend (store, dead-letter) failure, or ctx's error when
// the task was stopped during a retry backoff (r was then not processed).
func (p *recordProcessor) process(ctx context.Context, r *kgo.Record) (outcome, error) {
	in := p.topo.byTopic[r.Topic]
	if in == nil {
		return 0, fmt.Errorf("record from %s/%d@%d: not an input of topology %s", r.Topic, r.Partition, r.Offset, p.topo.appID)
	}
	if !p.tt.loaded {
		if err := p.loadTime(r.Partition); err != nil {
			return 0, err
		}
	}
	p.late = p.late[:0]
	ts, err := in.timestamp(r)
	if err != nil {
		return p.poison(r, StageTimestamp, err, 1)
	}
	f, err := p.run(ctx, r.Partition, ts, unit{in: in, r: r})
	if err != nil {
		return 0, err
	}
	out := outcomeProcessed
	if f.err != nil {
		if out, err = p.poison(r, f.stage, f.err, f.tries); err != nil {
			return 0, err
		}
		// The record moved stream time before its handler failed.
		if p.keepsTime() {
			if err := p.apply(r.Partition, ts, []write{p.streamTimeWrite()}); err != nil {
				return 0, fmt.Errorf("apply %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
			}
		}
	}
	for _, l := range p.late {
		if l.dropped && f.err == nil {
			if out, err = p.lateRecord(r, l.store); err != nil {
				return 0, err
			}
			break
		}
	}
	if p.tt.st.Time() >= p.tt.streamDue {
		if err := p.fireStream(ctx, r.Partition); err != nil {
			return 0, err
		}
	}
	return out, nil
}

// unit is one piece of work the processor runs with retries: an input
// record (in, r), or a punctuation or a fired timer (fn, after the writes
// pre: a fired timer's removal).
type unit struct {
	in  *inputSpec
	r   *kgo.Record
	fn  func(*Context) (stage string, err error)
	pre []write
}

// failure is why a unit failed past its retries; err nil: it succeeded.
type failure struct {
	stage string
	err   error
	tries int
}

// run calls u, retrying as p.retry says, until it succeeds and its writes
// (with the task's stream time, when it moved) are applied, or it fails
// for good (the failure). A non-nil error stops the task: ctx's, when it
// was stopped (u was then not processed), or the backend's.
func (p *recordProcessor) run(ctx context.Context, task int32, ts time.Time, u unit) (failure, error) {
	for attempt := 0; ; attempt++ {
		stage, err := p.call(ctx, task, ts, u, attempt)
		if err == nil {
			if p.keepsTime() {
				p.c.writes = append(p.c.writes, p.streamTimeWrite())
			}
			if err := p.apply(task, ts, p.c.writes); err != nil {
				p.clear()
				return failure{}, p.applyErr(u, err)
			}
			p.late = append(p.late, p.c.late...)
			p.clear()
			return failure{}, nil
		}
		if ctx.Err() != nil {
			// The task is stopping (its stores may be closed under the
			// handler): the record was not processed, and is no poison.
			p.clear()
			return failure{}, ctx.Err()
		}
		if stage != StageHandler || isPermanent(err) || attempt+1 >= p.retry.Attempts {
			p.clear()
			return failure{stage: stage, err: err, tries: attempt + 1}, nil
		}
		t := time.NewTimer(p.retry.wait(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			p.clear()
			return failure{}, ctx.Err()
		case <-t.C:
		}
	}
}

// apply makes ws take effect, and the task's stream time with them.
func (p *recordProcessor) apply(task int32, ts time.Time, ws []write) error {
	if err := p.c.be.apply(task, ts, ws); err != nil {
		return err
	}
	p.tt.dirty = false
	return nil
}

func (p *recordProcessor) applyErr(u unit, err error) error {
	if u.r != nil {
		return fmt.Errorf("apply %s/%d@%d: %w", u.r.Topic, u.r.Partition, u.r.Offset, err)
	}
	return fmt.Errorf("apply: %w", err)
}

// call runs one attempt of u, turning a panic into a permanent error.
func (p *recordProcessor) call(ctx context.Context, task int32, ts time.Time, u unit, attempt int) (stage string, err error) {
	p.c.ctx, p.c.ts, p.c.attempt, p.c.writes, p.c.arena = ctx, ts, attempt, append(p.c.writes[:0], u.pre...), p.c.arena[:0]
	p.c.late = p.c.late[:0]
	p.c.rec = u.r
	if u.r == nil {
		p.fireRec = kgo.Record{Partition: task, Offset: -1, Timestamp: ts}
		p.c.rec = &p.fireRec
	}
	defer func() {
		if v := recover(); v != nil {
			stage = StageHandler
			err = Permanent(fmt.Errorf("handler panicked: %v\n%s", v, debug.Stack()))
		}
	}()
	if u.fn != nil {
		return u.fn(&p.c)
	}
	return u.in.process(&p.c, u.r)
}

func (p *recordProcessor) clear() {
	clear(p.c.writes) // drop references to keys and values
	p.c.writes = p.c.writes[:0]
	p.c.rec, p.c.ctx, p.c.late = nil, nil, p.c.late[:0]
	if cap(p.c.arena) > 1<<20 {
		p.c.arena = nil // one huge record should not pin its buffer
	}
}

// lateRecord dead-letters, under the error policy dlq with stage
// StageLate, a record a windowed aggregation of store s dropped whole as
// late, its effects (the aggregation's progress) applied. Kafka Streams
// only drops and counts such records.
func (p *recordProcessor) lateRecord(r *kgo.Record, s *storeSpec) (outcome, error) {
	if p.policy != PolicyDeadLetter {
		return outcomeProcessed, nil
	}
	err := fmt.Errorf("record at %d ms is too late for the windows of store %s: they closed (grace passed)", r.Timestamp.UnixMilli(), s.name)
	if err := p.c.be.deadLetter(p.deadLetterRecord(r, StageLate, err.Error(), 1)); err != nil {
		return 0, fmt.Errorf("dead-letter %s/%d@%d to %s: %w", r.Topic, r.Partition, r.Offset, p.dlqTopic, err)
	}
	return outcomeLateDeadLettered, nil
}

func (p *recordProcessor) poison(r *kgo.Record, stage string, err error, tries int) (outcome, error) {
	p.lastStage = stage
	attrs := []any{
		slog.String("topic", r.Topic), slog.Int("partition", int(r.Partition)), slog.Int64("offset", r.Offset),
		slog.String("stage", stage), slog.Int("attempts", tries), slog.Any("err", err),
	}
	switch p.policy {
	case PolicySkip:
		p.logPoison(slog.LevelWarn, "poison record skipped", attrs...)
		return outcomeSkipped, nil
	case PolicyFail:
		p.log.Error("poison record: stopping the task (error policy fail)", attrs...)
		return 0, &PoisonError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Stage: stage, Err: err}
	}
	msg := err.Error()
	if isPermanent(err) && stage == StageHandler && len(msg) > 4096 {
		msg = msg[:4096] // a panic's stack trace
	}
	if err := p.c.be.deadLetter(p.deadLetterRecord(r, stage, msg, tries)); err != nil {
		return 0, fmt.Errorf("dead-letter %s/%d@%d to %s: %w", r.Topic, r.Partition, r.Offset, p.dlqTopic, err)
	}
	p.logPoison(slog.LevelWarn, "poison record dead-lettered", append(attrs, slog.String("dlq", p.dlqTopic))...)
	return outcomeDeadLettered, nil
}

// deadLetterRecord is r as the dead-letter topic receives it: as it arrived,
// with headers naming its source, stage and error.
func (p *recordProcessor) deadLetterRecord(r *kgo.Record, stage, msg string, tries int) *kgo.Record {
	return &kgo.Record{
		Topic:     p.dlqTopic,
		Key:       r.Key,
		Value:     r.Value,
		Timestamp: r.Timestamp,
		Headers: append(append(make([]kgo.RecordHeader, 0, len(r.Headers)+7), r.Headers...),
			kgo.RecordHeader{Key: HeaderDLQTopic, Value: []byte(r.Topic)},
			kgo.RecordHeader{Key: HeaderDLQPartition, Value: strconv.AppendInt(nil, int64(r.Partition), 10)},
			kgo.RecordHeader{Key: HeaderDLQOffset, Value: strconv.AppendInt(nil, r.Offset, 10)},
			kgo.RecordHeader{Key: HeaderDLQStage, Value: []byte(stage)},
			kgo.RecordHeader{Key: HeaderDLQError, Value: []byte(msg)},
			kgo.RecordHeader{Key: HeaderDLQAttempts, Value: strconv.AppendInt(nil, int64(tries), 10)},
			kgo.RecordHeader{Key: HeaderDLQAppID, Value: []byte(p.topo.appID)},
		),
	}
}
