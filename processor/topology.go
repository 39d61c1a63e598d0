package processor

import (
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
)

// Topology is one processor group: its application id, the input topics it
// consumes with their codecs and handlers, the stores its handlers read and
// write, and the topics they emit to. Declare everything before running it;
// a Topology is not safe for concurrent declaration, and is read-only (and
// safe to share) once running.
//
// Declaration mistakes (a duplicate topic, an invalid name) do not panic:
// they are collected and returned, all together, by Validate, which the
// runtime and the TestDriver call first.
type Topology struct {
	appID   string
	inputs  []*inputSpec
	byTopic map[string]*inputSpec
	stores  []*storeSpec
	outputs []*outputSpec
	globals []*globalSpec // global.go
	// timeStore holds the tasks' stream time and durable timers (nil:
	// none, streamtime.go); punctuators and timers are the scheduled
	// work (punctuate.go, timers.go).
	timeStore   *storeSpec
	punctuators []*punctSpec
	timers      map[string]*timerSpec
	errs        []error
}

// New returns an empty topology for the processor group applicationID (the
// consumer group id and the prefix of its internal topics).
func New(applicationID string) *Topology {
	t := &Topology{appID: applicationID, byTopic: make(map[string]*inputSpec)}
	if err := checkTopicName(applicationID); err != nil {
		t.errs = append(t.errs, fmt.Errorf("application id: %w", err))
	}
	return t
}

// ApplicationID returns the processor group's application id.
func (t *Topology) ApplicationID() string { return t.appID }

// Handler is called once per input record, in offset order within a
// partition, with the record's decoded key and value. For a tombstone (a
// record without a value) value is V's zero value and ctx.Tombstone()
// reports true.
//
// The handler's store writes and emits take effect together, and only if it
// returns nil: an error (or a panic) discards them and the record is retried
// with backoff, then dead-lettered (see the runtime's error policy). Return
// Permanent(err) to skip the retries. Handlers of one task never run
// concurrently; handlers of different tasks do.
type Handler[K, V any] func(ctx *Context, key K, value V) error

// Input is a declared input topic. Its handle serves tests (Pipe).
type Input[K, V any] struct {
	spec *inputSpec
	key  codec.Codec[K]
	val  codec.Codec[V]
}

// Topic returns the input's topic.
func (in *Input[K, V]) Topic() string { return in.spec.topic }

// NewInput declares that the topology consumes topic, decoding keys with key
// and values with value, and calls h for each record. Each input topic is
// declared once; all must have the same partition count (task i owns
// partition i of each).
func NewInput[K, V any](t *Topology, topic string, key codec.Codec[K], value codec.Codec[V], h Handler[K, V], opts ...InputOption) *Input[K, V] {
	in := &Input[K, V]{key: key, val: value}
	spec := &inputSpec{topic: topic}
	for _, o := range opts {
		o(spec)
	}
	spec.process = func(c *Context, r *kgo.Record) (stage string, err error) {
		k, err := in.key.Decode(r.Key)
		if err != nil {
			return StageDecodeKey, err
		}
		var v V
		if r.Value != nil {
			if v, err = in.val.Decode(r.Value); err != nil {
				return StageDecodeValue, err
			}
		}
		c.tt.observe(c.ts.UnixMilli()) // a record that decodes moves stream time
		return StageHandler, h(c, k, v)
	}
	in.spec = spec
	switch {
	case checkTopicName(topic) != nil:
		t.errs = append(t.errs, fmt.Errorf("input %q: %w", topic, checkTopicName(topic)))
	case key == nil || value == nil || h == nil:
		t.errs = append(t.errs, fmt.Errorf("input %q: key codec, value codec and handler are required", topic))
	case t.byTopic[topic] != nil:
		t.errs = append(t.errs, fmt.Errorf("input %q declared twice", topic))
	default:
		t.inputs = append(t.inputs, spec)
		t.byTopic[topic] = spec
	}
	return in
}

// Stages of a record's processing, named in dead-letter headers and metrics.
const (
	StageDecodeKey   = "decode-key"
	StageDecodeValue = "decode-value"
	StageHandler     = "handler"
	// StageLate names a record a windowed aggregation dropped as too late
	// (its windows closed), dead-lettered under the error policy dlq.
	StageLate = "late"
)

type inputSpec struct {
	topic   string
	extract TimestampExtractor // nil: the record's timestamp
	// repartition: a repartition topic's input (repartition.go), which the
	// runtime creates rather than requires.
	repartition bool
	// process decodes r and calls the handler; stage says where err arose.
	process func(c *Context, r *kgo.Record) (stage string, err error)
}

// StoreOption configures a store.
type StoreOption func(*storeSpec)

// WithChangelog makes the store use topic as its changelog instead of
// <application.id>-<store>-changelog: for example an existing compacted
// topic such as a goka group table (<group>-table), adopted with its data.
// The topic must have the inputs' partition count.
func WithChangelog(topic string) StoreOption {
	return func(s *storeSpec) { s.changelog = topic }
}

// Store is a declared key-value store. Each task has its own instance
// (partition slot i of the store's changelog); Get, Put and Delete act on
// the instance of the task whose handler is running.
type Store[K, V any] struct {
	topo   *Topology
	spec   *storeSpec
	key    codec.Codec[K]
	val    codec.Codec[V]
	appKey func([]byte, K) ([]byte, error)
	appVal func([]byte, V) ([]byte, error)
}

type storeSpec struct {
	index     int
	name      string
	changelog string
	// table: a co-partitioned table's store (table.go), read-only to
	// handlers and fed by the task from its changelog, the table's topic.
	table bool
	// uncached: the record cache never holds the store's writes, and
	// handlers read it by range (Context.scan): a window or session store
	// (windowstore.go).
	uncached bool
	// window is a window or session store's layout (windowstore.go).
	window *windowStore
	// join is a stream-stream join's store's (streamjoin_read.go).
	join *joinStore
	// changelogConfigs are topic configs the changelog is created with
	// beyond cleanup.policy=compact (a window store's retention).
	changelogConfigs map[string]string
	// render decodes a stored value for display (HTTP queries): the
	// codec's T, which encoding/json renders as the store's type.
	render func([]byte) (any, error)
}

var storeNameRE = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// NewStore declares a store named name (letters, digits, '.', '_', '-')
// with key and value codecs.
func NewStore[K, V any](t *Topology, name string, key codec.Codec[K], value codec.Codec[V], opts ...StoreOption) *Store[K, V] {
	spec := &storeSpec{name: name, changelog: t.appID + "-" + name + "-changelog"}
	for _, o := range opts {
		o(spec)
	}
	spec.render = func(b []byte) (any, error) { return value.Decode(b) }
	s := &Store[K, V]{topo: t, spec: spec, key: key, val: value}
	if key != nil && value != nil {
		s.appKey, s.appVal = codec.AppendFunc(key), codec.AppendFunc(value)
	}
	switch {
	case !storeNameRE.MatchString(name) || name == "." || name == "..":
		t.errs = append(t.errs, fmt.Errorf("store %q: a name is letters, digits, '.', '_' and '-'", name))
	case key == nil || value == nil:
		t.errs = append(t.errs, fmt.Errorf("store %q: key and value codecs are required", name))
	case checkTopicName(spec.changelog) != nil:
		t.errs = append(t.errs, fmt.Errorf("store %q: changelog: %w", name, checkTopicName(spec.changelog)))
	case slices.ContainsFunc(t.stores, func(o *storeSpec) bool { return o.name == name }):
		t.errs = append(t.errs, fmt.Errorf("store %q declared twice", name))
	case slices.ContainsFunc(t.stores, func(o *storeSpec) bool { return o.changelog == spec.changelog }):
		t.errs = append(t.errs, fmt.Errorf("store %q: changelog %q is already another store's", name, spec.changelog))
	default:
		spec.index = len(t.stores)
		t.stores = append(t.stores, spec)
	}
	return s
}

// Name returns the store's name.
func (s *Store[K, V]) Name() string { return s.spec.name }

// Changelog returns the store's changelog topic.
func (s *Store[K, V]) Changelog() string { return s.spec.changelog }

// Get returns the value of key in the running task's store, seeing the
// writes this handler call made before.
func (s *Store[K, V]) Get(ctx *Context, key K) (value V, found bool, err error) {
	mark := len(ctx.arena)
	kb, err := encode(ctx, s.appKey, key)
	if err != nil {
		return value, false, fmt.Errorf("store %s: encode key: %w", s.spec.name, err)
	}
	b, found, err := ctx.get(s.topo, s.spec, kb)
	ctx.arena = ctx.arena[:mark] // the key is not kept
	if err != nil || !found {
		return value, false, err
	}
	if value, err = s.val.Decode(b); err != nil {
		return value, false, fmt.Errorf("store %s: decode value of key %q: %w", s.spec.name, kb, err)
	}
	return value, true, nil
}

// Put sets key to value in the running task's store (and, when the handler
// succeeds, its changelog).
func (s *Store[K, V]) Put(ctx *Context, key K, value V) error {
	kb, err := encode(ctx, s.appKey, key)
	if err != nil {
		return fmt.Errorf("store %s: encode key: %w", s.spec.name, err)
	}
	vb, err := encode(ctx, s.appVal, value)
	if err != nil {
		return fmt.Errorf("store %s: encode value of key %q: %w", s.spec.name, kb, err)
	}
	if vb == nil {
		vb = []byte{} // nil is a delete
	}
	return ctx.stage(s.topo, write{store: s.spec, key: kb, value: vb})
}

// Delete removes key from the running task's store (a tombstone in its
// changelog).
func (s *Store[K, V]) Delete(ctx *Context, key K) error {
	kb, err := encode(ctx, s.appKey, key)
	if err != nil {
		return fmt.Errorf("store %s: encode key: %w", s.spec.name, err)
	}
	return ctx.stage(s.topo, write{store: s.spec, key: kb, del: true})
}

// Output is a declared output topic.
type Output[K, V any] struct {
	topo   *Topology
	spec   *outputSpec
	key    codec.Codec[K]
	val    codec.Codec[V]
	appKey func([]byte, K) ([]byte, error)
	appVal func([]byte, V) ([]byte, error)
}

type outputSpec struct {
	index int
	topic string
	// stream: every emit reaches the topic, in order, past the record
	// cache's merge per key (a windowed output).
	stream bool
	// repartition: a repartition topic's output (repartition.go).
	repartition bool
}

// NewOutput declares that handlers emit to topic, encoding with key and
// value. Records are partitioned with the runtime's partitioner, so an
// output keyed like the inputs is co-partitioned with them.
func NewOutput[K, V any](t *Topology, topic string, key codec.Codec[K], value codec.Codec[V], opts ...OutputOption) *Output[K, V] {
	spec := &outputSpec{topic: topic}
	for _, o := range opts {
		o(spec)
	}
	switch {
	case checkTopicName(topic) != nil:
		t.errs = append(t.errs, fmt.Errorf("output %q: %w", topic, checkTopicName(topic)))
	case key == nil || value == nil:
		t.errs = append(t.errs, fmt.Errorf("output %q: key and value codecs are required", topic))
	case slices.ContainsFunc(t.outputs, func(o *outputSpec) bool { return o.topic == topic }):
		t.errs = append(t.errs, fmt.Errorf("output %q declared twice", topic))
	default:
		spec.index = len(t.outputs)
		t.outputs = append(t.outputs, spec)
	}
	o := &Output[K, V]{topo: t, spec: spec, key: key, val: value}
	if key != nil && value != nil {
		o.appKey, o.appVal = codec.AppendFunc(key), codec.AppendFunc(value)
	}
	return o
}

// Topic returns the output's topic.
func (o *Output[K, V]) Topic() string { return o.spec.topic }

// Emit sends key and value (and headers) to the output when the handler
// succeeds.
func (o *Output[K, V]) Emit(ctx *Context, key K, value V, headers ...kgo.RecordHeader) error {
	kb, err := encode(ctx, o.appKey, key)
	if err != nil {
		return fmt.Errorf("output %s: encode key: %w", o.spec.topic, err)
	}
	vb, err := encode(ctx, o.appVal, value)
	if err != nil {
		return fmt.Errorf("output %s: encode value of key %q: %w", o.spec.topic, kb, err)
	}
	if vb == nil {
		vb = []byte{} // a nil value would be a tombstone
	}
	return ctx.stage(o.topo, write{output: o.spec, key: kb, value: vb, headers: headers})
}

// EmitTombstone sends key with no value (a delete, for compacted outputs).
func (o *Output[K, V]) EmitTombstone(ctx *Context, key K, headers ...kgo.RecordHeader) error {
	kb, err := encode(ctx, o.appKey, key)
	if err != nil {
		return fmt.Errorf("output %s: encode key: %w", o.spec.topic, err)
	}
	return ctx.stage(o.topo, write{output: o.spec, key: kb, headers: headers})
}

// Validate returns every declaration error, or nil: no input, invalid or
// duplicate names, an output that is also a changelog, missing codecs.
func (t *Topology) Validate() error {
	errs := slices.Clone(t.errs)
	if len(t.inputs) == 0 {
		errs = append(errs, errors.New("no input topic declared"))
	}
	for _, o := range t.outputs {
		for _, s := range t.stores {
			if o.topic == s.changelog {
				errs = append(errs, fmt.Errorf("output %q is store %q's changelog: write to the store instead", o.topic, s.name))
			}
		}
	}
	for _, in := range t.inputs {
		for _, s := range t.stores {
			if in.topic == s.changelog {
				errs = append(errs, fmt.Errorf("input %q is store %q's changelog", in.topic, s.name))
			}
		}
	}
	errs = append(errs, t.validateGlobals()...)
	errs = append(errs, t.validateTables()...)
	errs = append(errs, t.validateRepartitions()...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("topology %s: %w", t.appID, err)
	}
	return nil
}

// InputTopics returns the topics the group consumes: the input topics in
// declaration order, then the co-partitioned tables' topics,
// whose partition i is task i's too.
func (t *Topology) InputTopics() []string {
	out := make([]string, len(t.inputs))
	for i, in := range t.inputs {
		out[i] = in.topic
	}
	return append(out, t.tableTopics()...)
}

// OutputTopics returns the output topics in declaration order.
func (t *Topology) OutputTopics() []string {
	out := make([]string, len(t.outputs))
	for i, o := range t.outputs {
		out[i] = o.topic
	}
	return out
}

// StoreInfo describes a declared store for the runtime and query server.
type StoreInfo struct {
	Name      string
	Changelog string
	// Render decodes a stored value with the store's value codec, for
	// display: the result marshals with encoding/json as the store's type
	// (a string as a string, []byte as base64, a JSON[T] value as itself).
	Render func(value []byte) (any, error)
	// Windows is "time" (tumbling, hopping), "sliding" or "session" for
	// a windowed aggregation's store, read by the store views' Windows and
	// AllWindows (whose values Render decodes); "" for a
	// key-value store. It is "join" for a stream-stream join's store,
	// whose views' Windows and AllWindows return buffered records.
	Windows string
	// RenderSide decodes a join record's value ("left" or "right") with
	// that side's codec; nil for other stores.
	RenderSide func(side string, value []byte) (any, error)
}

// Stores returns the declared stores in declaration order.
func (t *Topology) Stores() []StoreInfo {
	out := make([]StoreInfo, len(t.stores))
	for i, s := range t.stores {
		out[i] = StoreInfo{Name: s.name, Changelog: s.changelog, Render: s.render}
		if s.window != nil {
			out[i].Windows = s.window.layout.kind.String()
		}
		if s.join != nil {
			out[i].Windows, out[i].RenderSide = "join", s.join.renderSide
		}
	}
	return out
}

// ChangelogTopics returns the stores' changelog topics in declaration order.
func (t *Topology) ChangelogTopics() []string {
	out := make([]string, len(t.stores))
	for i, s := range t.stores {
		out[i] = s.changelog
	}
	return out
}

var topicRE = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// checkTopicName applies Kafka's rules for topic names (Topic.validate).
func checkTopicName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case name == "." || name == "..":
		return fmt.Errorf("%q is not a valid topic name", name)
	case len(name) > 249:
		return fmt.Errorf("%q is %d characters long; Kafka allows 249", name, len(name))
	case !topicRE.MatchString(name):
		return fmt.Errorf("%q contains characters other than ASCII letters, digits, '.', '_' and '-'", name)
	}
	return nil
}
