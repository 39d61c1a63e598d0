package processor

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
)

// Table is a declared co-partitioned table: a compacted topic, written by
// anyone, with the inputs' partition count and partitioner, that each task
// holds its own partition of. Get reads it from a handler; InnerJoin and
// LeftJoin build the usual stream-table join handlers on it. It is Kafka
// Streams' KTable built from a topic (StreamsBuilder#table) and goka's
// Join.
//
// Task i materializes partition i of the topic in a LevelDB store named
// after the topic. The topic itself is the store's changelog, with no
// extra changelog topic (Kafka Streams' source-topic optimization). So the
// table is restored like any store before the task processes anything,
// kept warm by standbys like any store, and readable over HTTP as the
// store named after the topic. While the task runs, the group consumes the
// topic's partition i next to the inputs', and the task applies its
// records to the store. A record without a value (a tombstone) deletes its
// key. The table's offsets are committed with the inputs', and its data
// and checkpoint go in the store's LevelDB batch at each commit, like any
// store's. Handlers never write a table (it has no Put): its topic is its
// writer's.
//
// Ordering, as Kafka Streams': by record timestamp within a task. A task
// starts with the table restored to the topic's end offset as of its
// start. Before it processes an input record stamped ts, it applies the
// table records fetched and stamped at or before ts, and keeps the later
// ones for later input records. When no table record is waiting while the
// table's partition is known to hold more, the task waits for them. When
// the table is caught up, the task waits Options.MaxTaskIdle
// (max.task.idle.ms; 0: not at all) for new table records before it
// processes. A table never goes back in time. The restore is not aligned:
// the records a task processes first see every table record written before
// the task started, whatever its timestamp. MaxTaskIdle < 0 turns the
// alignment off: each input batch sees the tables as of every table record
// fetched before it (goka's rule).
//
// Input records processed again after a crash (under at-least-once) may
// see table updates newer than they saw the first time: the store keeps
// what it had applied, and the table records before its checkpoint that
// the group's committed offset fetches again are skipped.
type Table[K, V any] struct {
	topo   *Topology
	spec   *storeSpec
	key    codec.Codec[K]
	val    codec.Codec[V]
	appKey func([]byte, K) ([]byte, error)
}

// NewTable declares topic as a co-partitioned table of t, decoded with key
// and value. The topic must exist and have the inputs' partition count
// (the runtime's startup check names every topic and count otherwise),
// and its writer must partition keys as the runtime's Partitioner does.
// The table's store is named after the topic.
func NewTable[K, V any](t *Topology, topic string, key codec.Codec[K], value codec.Codec[V]) *Table[K, V] {
	spec := &storeSpec{name: topic, changelog: topic, table: true}
	if value != nil {
		spec.render = func(b []byte) (any, error) { return value.Decode(b) }
	}
	tb := &Table[K, V]{topo: t, spec: spec, key: key, val: value}
	if key != nil {
		tb.appKey = codec.AppendFunc(key)
	}
	switch {
	case checkTopicName(topic) != nil:
		t.errs = append(t.errs, fmt.Errorf("table %q: %w", topic, checkTopicName(topic)))
	case key == nil || value == nil:
		t.errs = append(t.errs, fmt.Errorf("table %q: key and value codecs are required", topic))
	case slices.ContainsFunc(t.stores, func(o *storeSpec) bool { return o.table && o.changelog == topic }):
		t.errs = append(t.errs, fmt.Errorf("table %q declared twice", topic))
	case slices.ContainsFunc(t.stores, func(o *storeSpec) bool { return o.name == topic || o.changelog == topic }):
		t.errs = append(t.errs, fmt.Errorf("table %q: a store already has that name or changelog", topic))
	default:
		spec.index = len(t.stores)
		t.stores = append(t.stores, spec)
	}
	return tb
}

// Topic returns the table's topic.
func (tb *Table[K, V]) Topic() string { return tb.spec.changelog }

// Name returns the name of the table's store (its topic): the name HTTP
// queries use.
func (tb *Table[K, V]) Name() string { return tb.spec.name }

// Get returns key's value in the running task's partition of the table;
// found is false for a key the table does not have (never written, or
// deleted by a tombstone).
func (tb *Table[K, V]) Get(ctx *Context, key K) (value V, found bool, err error) {
	mark := len(ctx.arena)
	kb, err := encode(ctx, tb.appKey, key)
	if err != nil {
		return value, false, fmt.Errorf("table %s: encode key: %w", tb.spec.name, err)
	}
	b, found, err := ctx.get(tb.topo, tb.spec, kb)
	ctx.arena = ctx.arena[:mark]
	if err != nil || !found {
		return value, false, err
	}
	if value, err = tb.val.Decode(b); err != nil {
		return value, false, fmt.Errorf("table %s: decode value of key %q: %w", tb.spec.name, kb, err)
	}
	return value, true, nil
}

// tableTopics returns the co-partitioned tables' topics in declaration
// order.
func (t *Topology) tableTopics() []string {
	var out []string
	for _, s := range t.stores {
		if s.table {
			out = append(out, s.changelog)
		}
	}
	return out
}

// tableOf returns the table whose topic is topic, nil for any other topic.
func (t *Topology) tableOf(topic string) *storeSpec {
	for _, s := range t.stores {
		if s.table && s.changelog == topic {
			return s
		}
	}
	return nil
}

// validateTables returns the table declaration errors that depend on the
// whole topology.
func (t *Topology) validateTables() []error {
	var errs []error
	for _, s := range t.stores {
		if s.table && slices.ContainsFunc(t.globals, func(g *globalSpec) bool { return g.topic == s.changelog }) {
			errs = append(errs, fmt.Errorf("table %q is also declared global: declare it once", s.changelog))
		}
	}
	return errs
}

// PipeTableRecord writes r to the co-partitioned table of r.Topic, in the
// partition of r.Partition, or the one the driver's partitioner gives r.Key
// when r.Partition is -1, as the task would apply it: r.Value is the key's
// new value, nil deletes the key. Records piped after it read it.
func (d *TestDriver) PipeTableRecord(r *kgo.Record) error {
	s := d.topo.tableOf(r.Topic)
	if s == nil {
		return fmt.Errorf("topic %q is not a table of topology %s", r.Topic, d.topo.appID)
	}
	if r.Partition < 0 {
		r.Partition = d.opts.Partitioner.Partition(r.Key, d.opts.Partitions)
	}
	if r.Partition >= d.opts.Partitions {
		return fmt.Errorf("partition %d of %s: the driver has %d partitions", r.Partition, r.Topic, d.opts.Partitions)
	}
	m := d.task(r.Partition)[s.index]
	if r.Value == nil {
		delete(m, string(r.Key))
	} else {
		m[string(r.Key)] = bytes.Clone(r.Value)
	}
	return nil
}
