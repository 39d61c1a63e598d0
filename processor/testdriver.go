package processor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/partition"
)

// TestDriver runs a topology in memory, without Kafka or LevelDB, through
// the same decoding, handler, retry and error-policy path as the runtime:
// for unit tests of handlers, like Kafka Streams' TopologyTestDriver. Records
// are handled synchronously as they are piped in; stores are maps per task;
// emitted and dead-lettered records are collected.
type TestDriver struct {
	topo    *Topology
	opts    TestDriverOptions
	proc    *recordProcessor
	stores  map[int32][]map[string][]byte // task -> store index -> key -> value
	offsets map[string][]int64            // input topic -> next offset per partition
	out     map[string][]*kgo.Record      // output topic -> records, in emit order
	dlq     []*kgo.Record
	clock   time.Time
	globals map[string]testGlobal // global table topic -> its table (global.go)
	// wall is the driver's wall clock (AdvanceWallClockTime); times the
	// tasks' stream time and schedules.
	wall  time.Time
	times map[int32]*taskTime
	// late counts, per task and windowed aggregation's store, the windows
	// records came too late for (rackstream_window_late_records_total).
	late map[int32]map[string]int64
	// sent are the records sent through repartition topics and not yet
	// handled (repartition.go).
	sent []*kgo.Record
}

// TestDriverOptions configure a TestDriver. The zero value is usable.
type TestDriverOptions struct {
	// Partitions of every input, changelog and output [1].
	Partitions int32
	// Partitioner maps keys to partitions [murmur2].
	Partitioner partition.Partitioner
	// ErrorPolicy for poison records [dlq].
	ErrorPolicy ErrorPolicy
	// Retry of failing handlers; the driver never sleeps, whatever Backoff
	// says, so Attempts is what matters [the zero Retry is DefaultRetry()].
	Retry Retry
	// Logger for poison records [discarded].
	Logger *slog.Logger
}

// NewTestDriver validates t and returns a driver for it.
func NewTestDriver(t *Topology, opts TestDriverOptions) (*TestDriver, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if opts.Partitions <= 0 {
		opts.Partitions = 1
	}
	if opts.Partitioner == nil {
		opts.Partitioner = partition.Murmur2()
	}
	if opts.ErrorPolicy == "" {
		opts.ErrorPolicy = PolicyDeadLetter
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Retry == (Retry{}) {
		opts.Retry = DefaultRetry()
	}
	retry := opts.Retry
	retry.Backoff, retry.MaxBackoff = time.Nanosecond, time.Nanosecond
	d := &TestDriver{
		topo:    t,
		opts:    opts,
		stores:  make(map[int32][]map[string][]byte),
		offsets: make(map[string][]int64),
		out:     make(map[string][]*kgo.Record),
		clock:   time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		wall:    time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		times:   make(map[int32]*taskTime),
		late:    make(map[int32]map[string]int64),
	}
	d.proc = newRecordProcessor(t, opts.ErrorPolicy, retry, DeadLetterTopic(t.appID), opts.Logger, d, d.WallClockTime)
	for task := range opts.Partitions { // their wall-clock schedules start now
		d.proc.setTime(d.time(task))
		if err := d.proc.loadTime(task); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// PipeRecord handles r as if consumed from r.Topic, in r.Partition, or in
// the partition the driver's partitioner gives r.Key when r.Partition is
// -1. The driver sets r.Offset to the partition's next offset and, when
// r.Timestamp is zero, a timestamp advancing by a millisecond per record.
// Records its handlers send through a repartition topic are handled next,
// in the partition the partitioner gives their new key, before PipeRecord
// returns. The returned error is a PoisonError under PolicyFail.
func (d *TestDriver) PipeRecord(r *kgo.Record) error {
	if err := d.pipe(r); err != nil {
		return err
	}
	return d.pipeSent()
}

// pipe handles r (PipeRecord) without the records it sends.
func (d *TestDriver) pipe(r *kgo.Record) error {
	if d.topo.byTopic[r.Topic] == nil {
		return fmt.Errorf("topic %q is not an input of topology %s", r.Topic, d.topo.appID)
	}
	if r.Partition < 0 {
		r.Partition = d.opts.Partitioner.Partition(r.Key, d.opts.Partitions)
	}
	if r.Partition >= d.opts.Partitions {
		return fmt.Errorf("partition %d of %s: the driver has %d partitions", r.Partition, r.Topic, d.opts.Partitions)
	}
	offs := d.offsets[r.Topic]
	if offs == nil {
		offs = make([]int64, d.opts.Partitions)
		d.offsets[r.Topic] = offs
	}
	r.Offset = offs[r.Partition]
	offs[r.Partition]++
	if r.Timestamp.IsZero() {
		d.clock = d.clock.Add(time.Millisecond)
		r.Timestamp = d.clock
	}
	d.proc.setTime(d.time(r.Partition))
	if _, err := d.proc.process(context.Background(), r); err != nil {
		return err
	}
	for _, l := range d.proc.late {
		if d.late[r.Partition] == nil {
			d.late[r.Partition] = make(map[string]int64)
		}
		d.late[r.Partition][l.store.name] += int64(l.windows)
	}
	return nil
}

// time returns the time of task.
func (d *TestDriver) time(task int32) *taskTime {
	tt := d.times[task]
	if tt == nil {
		tt = newTaskTime()
		d.times[task] = tt
	}
	return tt
}

// WallClockTime returns the driver's wall clock: 2026-01-01T00:00:00Z when
// it starts, moved only by AdvanceWallClockTime.
func (d *TestDriver) WallClockTime() time.Time { return d.wall }

// AdvanceWallClockTime moves the driver's wall clock by by, and runs in
// every task what that made due on the wall clock: timers, then
// punctuators (Kafka Streams' TopologyTestDriver.advanceWallClockTime),
// and the records they sent through repartition topics.
// Tasks start their wall-clock schedules when the driver starts. The
// returned error is a task's under PolicyFail.
func (d *TestDriver) AdvanceWallClockTime(by time.Duration) error {
	d.wall = d.wall.Add(by)
	for task := range d.opts.Partitions {
		d.proc.setTime(d.time(task))
		if err := d.proc.fireWall(context.Background(), task, d.wall); err != nil {
			return fmt.Errorf("task %d: %w", task, err)
		}
	}
	return d.pipeSent()
}

// StreamTime returns the stream time of the task of partition, the zero
// Time before its first record.
func (d *TestDriver) StreamTime(partition int32) time.Time {
	st := d.time(partition).st.Time()
	if st < 0 {
		return time.Time{}
	}
	return time.UnixMilli(st).UTC()
}

// Pipe encodes key and value with in's codecs and handles them as a record
// of in's topic, in the partition the driver's partitioner gives the key.
func Pipe[K, V any](d *TestDriver, in *Input[K, V], key K, value V, headers ...kgo.RecordHeader) error {
	kb, err := in.key.Encode(key)
	if err != nil {
		return fmt.Errorf("pipe to %s: encode key: %w", in.spec.topic, err)
	}
	vb, err := in.val.Encode(value)
	if err != nil {
		return fmt.Errorf("pipe to %s: encode value: %w", in.spec.topic, err)
	}
	return d.PipeRecord(&kgo.Record{Topic: in.spec.topic, Partition: -1, Key: kb, Value: vb, Headers: headers})
}

// Emitted returns the records emitted to topic so far, in order.
func (d *TestDriver) Emitted(topic string) []*kgo.Record { return d.out[topic] }

// DeadLetters returns the dead-lettered records so far, in order.
func (d *TestDriver) DeadLetters() []*kgo.Record { return d.dlq }

// KeyValue is one decoded record of an output.
type KeyValue[K, V any] struct {
	Key       K
	Value     V
	Tombstone bool
}

// ReadOutput decodes the records emitted to out so far.
func ReadOutput[K, V any](d *TestDriver, out *Output[K, V]) ([]KeyValue[K, V], error) {
	recs := d.out[out.spec.topic]
	kvs := make([]KeyValue[K, V], 0, len(recs))
	for _, r := range recs {
		var kv KeyValue[K, V]
		var err error
		if kv.Key, err = out.key.Decode(r.Key); err != nil {
			return nil, fmt.Errorf("output %s offset %d: decode key: %w", r.Topic, r.Offset, err)
		}
		if r.Value == nil {
			kv.Tombstone = true
		} else if kv.Value, err = out.val.Decode(r.Value); err != nil {
			return nil, fmt.Errorf("output %s offset %d: decode value: %w", r.Topic, r.Offset, err)
		}
		kvs = append(kvs, kv)
	}
	return kvs, nil
}

// Lookup returns the value of key in s, read from the task that owns the
// key's partition. Keys a handler wrote into another task's store are
// found only there: see StoreValues.
func Lookup[K, V any](d *TestDriver, s *Store[K, V], key K) (value V, found bool, err error) {
	kb, err := s.key.Encode(key)
	if err != nil {
		return value, false, fmt.Errorf("store %s: encode key: %w", s.spec.name, err)
	}
	b, found, _ := d.get(d.opts.Partitioner.Partition(kb, d.opts.Partitions), s.spec, kb)
	if !found {
		return value, false, nil
	}
	value, err = s.val.Decode(b)
	return value, err == nil, err
}

// StoreValues returns every entry of s across tasks, decoded.
func StoreValues[K comparable, V any](d *TestDriver, s *Store[K, V]) (map[K]V, error) {
	out := make(map[K]V)
	for _, stores := range d.stores {
		for kb, vb := range stores[s.spec.index] {
			k, err := s.key.Decode([]byte(kb))
			if err != nil {
				return nil, fmt.Errorf("store %s: decode key %q: %w", s.spec.name, kb, err)
			}
			v, err := s.val.Decode(vb)
			if err != nil {
				return nil, fmt.Errorf("store %s: decode value of %q: %w", s.spec.name, kb, err)
			}
			out[k] = v
		}
	}
	return out, nil
}

func (d *TestDriver) task(task int32) []map[string][]byte {
	st := d.stores[task]
	if st == nil {
		st = make([]map[string][]byte, len(d.topo.stores))
		for i := range st {
			st[i] = make(map[string][]byte)
		}
		d.stores[task] = st
	}
	return st
}

func (d *TestDriver) get(task int32, s *storeSpec, key []byte) ([]byte, bool, error) {
	v, ok := d.task(task)[s.index][string(key)]
	return v, ok, nil
}

func (d *TestDriver) apply(task int32, ts time.Time, ws []write) error {
	st := d.task(task)
	for _, w := range ws {
		// Staged bytes live in a reused buffer: keep copies.
		w.key = bytes.Clone(w.key)
		w.value = bytes.Clone(w.value)
		switch {
		case w.store != nil && w.del:
			delete(st[w.store.index], string(w.key))
		case w.store != nil:
			st[w.store.index][string(w.key)] = w.value
		default:
			r := &kgo.Record{Topic: w.output.topic, Key: w.key, Value: w.value, Headers: w.headers, Timestamp: ts}
			r.Partition = d.opts.Partitioner.Partition(w.key, d.opts.Partitions)
			r.Offset = int64(len(d.out[r.Topic]))
			d.out[r.Topic] = append(d.out[r.Topic], r)
			if w.output.repartition {
				d.sent = append(d.sent, r)
			}
		}
	}
	return nil
}

// committedOffset is the next offset of topic's partition: the driver
// commits every record as it is handled.
func (d *TestDriver) committedOffset(task int32, topic string) int64 {
	if offs := d.offsets[topic]; offs != nil {
		return offs[task]
	}
	return -1
}

func (d *TestDriver) deadLetter(dl *kgo.Record) error {
	dl.Offset = int64(len(d.dlq))
	d.dlq = append(d.dlq, dl)
	return nil
}

// WindowResult is one window of a windowed aggregation's store and its
// aggregate.
type WindowResult[K, A any] struct {
	Windowed[K]
	Value A
	// Partition is the task whose store holds the window.
	Partition int32
}

// LateRecords returns what rackstream_window_late_records_total counts for
// a in the task of partition: the windows its records came too late for,
// once per window a record missed (Kafka Streams' dropped-records-total).
func LateRecords[K, V, A any](d *TestDriver, a *WindowedAggregation[K, V, A], partition int32) int64 {
	return d.late[partition][a.spec.name]
}

// ReadWindows returns the windows a's store holds across tasks, as a query
// sees them (expired ones hidden), by task, then window time, then key.
func ReadWindows[K, V, A any](d *TestDriver, a *WindowedAggregation[K, V, A]) ([]WindowResult[K, A], error) {
	var out []WindowResult[K, A]
	for task := range d.opts.Partitions {
		scan := func(start, end []byte, fn func(k, v []byte) bool) error { return d.scan(task, a.spec, start, end, fn) }
		raw, err := a.spec.window.timeRange(scan, 0, math.MaxInt64)
		if err != nil {
			return nil, err
		}
		for _, w := range raw {
			k, err := a.key.Decode(w.key)
			if err != nil {
				return nil, fmt.Errorf("store %s: decode key %q: %w", a.spec.name, w.key, err)
			}
			v, err := a.val.Decode(w.agg)
			if err != nil {
				return nil, fmt.Errorf("store %s: decode window of key %q: %w", a.spec.name, w.key, err)
			}
			out = append(out, WindowResult[K, A]{Windowed: a.windowed(k, w.win), Value: v, Partition: task})
		}
	}
	return out, nil
}
