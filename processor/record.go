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
	HeaderDLQStage     = "rackstream.dlq.stage" // decode-key, decode-value or handler
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
	// scan reads the keys in [start, end) of an uncached store of task
	// (storeSpec.uncached), in key order, seeing the task's uncommitted
	// writes, until fn returns false; the slices are valid during fn.
	scan(task int32, s *storeSpec, start, end []byte, fn func(key, value []byte) bool) error
	// apply makes the effects of one successfully handled record.
	apply(task int32, src *kgo.Record, ws []write) error
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

func newRecordProcessor(topo *Topology, policy ErrorPolicy, retry Retry, dlqTopic string, log *slog.Logger, be backend) *recordProcessor {
	return &recordProcessor{
		topo: topo, policy: policy, retry: retry, dlqTopic: dlqTopic, log: log,
		c: Context{topo: topo, be: be},
	}
}

// process handles r. A non-nil error stops the task: a PoisonError under
// PolicyFail, a backend (store, dead-letter) failure, or ctx's error when
// the task was stopped during a retry backoff (r was then not processed).
func (p *recordProcessor) process(ctx context.Context, r *kgo.Record) (outcome, error) {
	in := p.topo.byTopic[r.Topic]
	if in == nil {
		return 0, fmt.Errorf("record from %s/%d@%d: not an input of topology %s", r.Topic, r.Partition, r.Offset, p.topo.appID)
	}
	var (
		stage string
		err   error
		tries int
	)
	for attempt := 0; ; attempt++ {
		tries = attempt + 1
		stage, err = p.call(ctx, in, r, attempt)
		if err == nil {
			if err := p.c.be.apply(r.Partition, r, p.c.writes); err != nil {
				return 0, fmt.Errorf("apply %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
			}
			p.late = append(p.late[:0], p.c.late...)
			p.clear()
			for _, l := range p.late {
				if l.dropped {
					return p.lateRecord(r, l.store)
				}
			}
			return outcomeProcessed, nil
		}
		if ctx.Err() != nil {
			// The task is stopping (its stores may be closed under the
			// handler): the record was not processed, and is no poison.
			p.clear()
			return 0, ctx.Err()
		}
		if stage != StageHandler || isPermanent(err) || tries >= p.retry.Attempts {
			break
		}
		t := time.NewTimer(p.retry.wait(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			p.clear()
			return 0, ctx.Err()
		case <-t.C:
		}
	}
	p.clear()
	return p.poison(r, stage, err, tries)
}

// call runs one handler attempt, turning a panic into a permanent error.
func (p *recordProcessor) call(ctx context.Context, in *inputSpec, r *kgo.Record, attempt int) (stage string, err error) {
	p.c.ctx, p.c.rec, p.c.attempt, p.c.writes, p.c.arena, p.c.late = ctx, r, attempt, p.c.writes[:0], p.c.arena[:0], p.c.late[:0]
	p.late = p.late[:0]
	defer func() {
		if v := recover(); v != nil {
			stage = StageHandler
			err = Permanent(fmt.Errorf("handler panicked: %v\n%s", v, debug.Stack()))
		}
	}()
	return in.process(&p.c, r)
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
