package processor

// Re-keying through a repartition topic, as Kafka Streams' groupBy,
// selectKey and repartition: a record given a new key is produced to an
// internal topic, which lands it in the task owning the new key's slot,
// and consumed back by the same group as an input of its tasks.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
)

// Repartition is a declared repartition topic: an output that handlers
// send re-keyed records to (Send, GroupBy, SelectKey) and an input whose
// handler receives them in the task owning their new key. Its topic,
// RepartitionTopic(application id, name), belongs to the application.
// The runtime creates it with the inputs' partition count and Kafka
// Streams' settings for such topics (cleanup.policy=delete, retention.ms=-1,
// segment.bytes=52428800), checks its partition count at start-up like
// every input's, and deletes its records below the group's committed
// offset every Options.RepartitionPurgeInterval.
//
// Records sent reach the topic in send order, past the record cache, with
// the sending record's timestamp. Under exactly_once_v2 they are produced
// in the same transaction as the sending record's offsets, and read back
// read_committed: each sent record is handled once.
type Repartition[K, V any] struct {
	name string
	in   *Input[K, V]
	out  *Output[K, V]
}

// RepartitionTopic returns the repartition topic of name in the processor
// group applicationID: <applicationID>-<name>-repartition, Kafka Streams'
// name for a repartition topic named name.
func RepartitionTopic(applicationID, name string) string {
	return applicationID + "-" + name + "-repartition"
}

// NewRepartition declares the repartition topic name (letters, digits,
// '.', '_', '-'), with keys and values encoded by key and value, and the
// handler h that receives its records. opts apply to its input, as to
// NewInput's: without WithTimestamp, a record's time is the time of the
// record that sent it.
func NewRepartition[K, V any](t *Topology, name string, key codec.Codec[K], value codec.Codec[V], h Handler[K, V], opts ...InputOption) *Repartition[K, V] {
	topic := RepartitionTopic(t.appID, name)
	r := &Repartition[K, V]{name: name}
	var err error
	switch {
	case !storeNameRE.MatchString(name) || name == "." || name == "..":
		err = fmt.Errorf("repartition %q: a name is letters, digits, '.', '_' and '-'", name)
	case t.byTopic[topic] != nil || slices.ContainsFunc(t.outputs, func(o *outputSpec) bool { return o.topic == topic }):
		err = fmt.Errorf("repartition %q: its topic %s is declared already (a repartition of the same name, or an input or output)", name, topic)
	}
	if err != nil {
		t.errs = append(t.errs, err)
		// Handles that are not part of the topology, so that the
		// caller's code runs on until Validate reports the error.
		r.in = &Input[K, V]{spec: &inputSpec{topic: topic}, key: key, val: value}
		r.out = &Output[K, V]{topo: t, spec: &outputSpec{topic: topic, stream: true}, key: key, val: value}
		return r
	}
	r.out = NewOutput(t, topic, key, value, AsStream(), func(o *outputSpec) { o.repartition = true })
	r.in = NewInput(t, topic, key, value, h, append(slices.Clone(opts), func(s *inputSpec) { s.repartition = true })...)
	return r
}

// Name returns the repartition's name.
func (r *Repartition[K, V]) Name() string { return r.name }

// Topic returns the repartition topic.
func (r *Repartition[K, V]) Topic() string { return r.in.spec.topic }

// Input returns the repartition's input, to pipe records into it in a
// TestDriver as if they had been sent.
func (r *Repartition[K, V]) Input() *Input[K, V] { return r.in }

// Send sends key and value (and headers) through the repartition topic
// when the handler succeeds: the task owning key's partition slot handles
// them.
func (r *Repartition[K, V]) Send(ctx *Context, key K, value V, headers ...kgo.RecordHeader) error {
	return r.out.Emit(ctx, key, value, headers...)
}

// SendTombstone sends key without a value through the repartition topic:
// its handler sees ctx.Tombstone() true.
func (r *Repartition[K, V]) SendTombstone(ctx *Context, key K, headers ...kgo.RecordHeader) error {
	return r.out.EmitTombstone(ctx, key, headers...)
}

// GroupBy returns the handler of Kafka Streams' groupBy: it sends each
// record, its value unchanged, through r under the key keyOf gives, and
// r's handler aggregates the records of each new key (a store's count or
// sum, a WindowedAggregation's Handler). Records without a value are not
// sent: Kafka Streams' aggregations skip them.
func GroupBy[K, V, NK any](r *Repartition[NK, V], keyOf func(key K, value V) NK) Handler[K, V] {
	return func(ctx *Context, key K, value V) error {
		if ctx.Tombstone() {
			return nil
		}
		return r.Send(ctx, keyOf(key, value), value)
	}
}

// SelectKey returns the handler of Kafka Streams' selectKey followed by a
// repartition: it sends each record through r under the key keyOf gives,
// with its value and headers. A record without a value is sent as a
// tombstone of its new key.
func SelectKey[K, V, NK any](r *Repartition[NK, V], keyOf func(key K, value V) NK) Handler[K, V] {
	return func(ctx *Context, key K, value V) error {
		nk := keyOf(key, value)
		if ctx.Tombstone() {
			return r.SendTombstone(ctx, nk, ctx.Headers()...)
		}
		return r.Send(ctx, nk, value, ctx.Headers()...)
	}
}

// RepartitionTopics returns the repartition topics in declaration order.
func (t *Topology) RepartitionTopics() []string {
	var out []string
	for _, in := range t.inputs {
		if in.repartition {
			out = append(out, in.topic)
		}
	}
	return out
}

// validateRepartitions reports a topology whose every input is a
// repartition topic: nothing would ever send to them.
func (t *Topology) validateRepartitions() []error {
	if len(t.inputs) == 0 || slices.ContainsFunc(t.inputs, func(in *inputSpec) bool { return !in.repartition }) {
		return nil
	}
	return []error{fmt.Errorf("repartition topics %v are the only inputs: declare an input topic that sends to them", t.RepartitionTopics())}
}

// pipeSent handles the records sent through repartition topics, and those
// they send in turn, in send order: each in the partition the driver gave
// it as it was sent.
func (d *TestDriver) pipeSent() error {
	for len(d.sent) > 0 {
		r := d.sent[0]
		d.sent = d.sent[1:]
		in := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
		if err := d.pipe(in); err != nil {
			d.sent = nil
			return err
		}
	}
	return nil
}
