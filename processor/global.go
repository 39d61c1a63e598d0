package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/table"
)

// GlobalTable is a declared global table; Get reads it from a handler.
//
// A global table is a compacted topic held whole by every instance, as
// Kafka Streams' GlobalKTable and goka's Lookup. Every partition of it is
// restored into local LevelDB databases before the instance joins its
// group, then followed in the background for as long as the runtime runs.
// Any handler reads it by any key, such as one it extracts from the
// record: the stream need not be co-partitioned with the table.
//
// The materialization is package table's Reader, the same code a separate
// Go program uses to follow a topic. It keeps one database per partition
// under <state.dir>/<application.id>.global/table-<topic>, kept across
// restarts, so a restarted instance restores only what it missed. The
// directory is not a task's: global tables are not partitioned into tasks,
// and the group's assignment never moves them.
//
// Costs: each instance holds the whole table, on disk and in LevelDB's
// caches, and reads the whole topic (a restore at first start, then every
// update). Use a co-partitioned store for anything large.
//
// Ordering: none with the stream. A handler sees the table as of whatever
// the background follower has applied when it reads; an update to the
// table and a record of the stream written in that order may be processed
// in either order. Restored to the end offsets before processing starts,
// the table is at least as new as it was when the instance started.
type GlobalTable[K, V any] struct {
	spec *globalSpec
	key  codec.Codec[K]
	val  codec.Codec[V]
}

// globalSpec is a global table's declaration, what the runtime opens.
type globalSpec struct {
	topic       string
	partitioner partition.Partitioner // nil: the runtime's
	render      func([]byte) (any, error)
}

// GlobalTableOption configures a global table.
type GlobalTableOption func(*globalSpec)

// WithGlobalPartitioner sets how the table's writer mapped keys to
// partitions [the runtime's Partitioner]: Get looks in the partition it
// gives, so the wrong one finds nothing. A goka table's is partition.FNV1a.
func WithGlobalPartitioner(p partition.Partitioner) GlobalTableOption {
	return func(s *globalSpec) { s.partitioner = p }
}

// NewGlobalTable declares topic (an existing compacted topic, written by
// anyone with the codecs given) as a global table of t.
func NewGlobalTable[K, V any](t *Topology, topic string, key codec.Codec[K], value codec.Codec[V], opts ...GlobalTableOption) *GlobalTable[K, V] {
	spec := &globalSpec{topic: topic}
	for _, o := range opts {
		o(spec)
	}
	if value != nil {
		spec.render = func(b []byte) (any, error) { return value.Decode(b) }
	}
	g := &GlobalTable[K, V]{spec: spec, key: key, val: value}
	switch {
	case checkTopicName(topic) != nil:
		t.errs = append(t.errs, fmt.Errorf("global table %q: %w", topic, checkTopicName(topic)))
	case key == nil || value == nil:
		t.errs = append(t.errs, fmt.Errorf("global table %q: key and value codecs are required", topic))
	case slices.ContainsFunc(t.globals, func(o *globalSpec) bool { return o.topic == topic }):
		t.errs = append(t.errs, fmt.Errorf("global table %q declared twice", topic))
	default:
		t.globals = append(t.globals, spec)
	}
	return g
}

// Topic returns the table's topic.
func (g *GlobalTable[K, V]) Topic() string { return g.spec.topic }

// Get returns key's value in the instance's copy of the table; found is
// false for a key absent or deleted. It is safe from any handler.
func (g *GlobalTable[K, V]) Get(ctx *Context, key K) (value V, found bool, err error) {
	r := globalReaderOf(ctx, g.spec)
	if r == nil {
		return value, false, fmt.Errorf("global table %s: not materialized by this runtime", g.spec.topic)
	}
	kb, err := g.key.Encode(key)
	if err != nil {
		return value, false, fmt.Errorf("global table %s: encode key: %w", g.spec.topic, err)
	}
	b, found, err := r.Get(kb)
	if err != nil || !found {
		return value, false, err
	}
	if value, err = g.val.Decode(b); err != nil {
		return value, false, fmt.Errorf("global table %s: decode value of key %q: %w", g.spec.topic, kb, err)
	}
	return value, true, nil
}

// globalReader is a global table as a handler reads it: the runtime's
// table.Mirror, or the TestDriver's map.
type globalReader interface {
	Get(key []byte) (value []byte, found bool, err error)
}

// globalBackend is a backend that holds global tables: the runtime's
// tasks and the TestDriver.
type globalBackend interface {
	global(*globalSpec) globalReader
}

func globalReaderOf(ctx *Context, s *globalSpec) globalReader {
	if gb, ok := ctx.be.(globalBackend); ok {
		return gb.global(s)
	}
	return nil
}

func (b taskBackend) global(s *globalSpec) globalReader {
	if rd := b.t.env.globals.get(s); rd != nil {
		return rd
	}
	return nil // not a typed nil: Get reports the table missing
}

// testGlobal is a global table in a TestDriver: key -> value.
type testGlobal map[string][]byte

func (m testGlobal) Get(key []byte) ([]byte, bool, error) {
	v, ok := m[string(key)]
	return v, ok, nil
}

func (d *TestDriver) global(s *globalSpec) globalReader {
	return d.globals[s.topic] // an empty table until PipeGlobalRecord writes it
}

// PipeGlobalRecord writes r to the global table of r.Topic, as its topic's
// follower would: r.Value is the key's new value, nil deletes the key.
// Handlers piped after it read it.
func (d *TestDriver) PipeGlobalRecord(r *kgo.Record) error {
	if !slices.ContainsFunc(d.topo.globals, func(g *globalSpec) bool { return g.topic == r.Topic }) {
		return fmt.Errorf("topic %q is not a global table of topology %s", r.Topic, d.topo.appID)
	}
	if d.globals == nil {
		d.globals = make(map[string]testGlobal)
	}
	m := d.globals[r.Topic]
	if m == nil {
		m = make(testGlobal)
		d.globals[r.Topic] = m
	}
	if r.Value == nil {
		delete(m, string(r.Key))
	} else {
		m[string(r.Key)] = bytes.Clone(r.Value)
	}
	return nil
}

// validateGlobals returns the global-table declaration errors that depend
// on the whole topology: a topic that is also an input, an output or a
// changelog.
func (t *Topology) validateGlobals() []error {
	var errs []error
	for _, g := range t.globals {
		switch {
		case t.byTopic[g.topic] != nil:
			errs = append(errs, fmt.Errorf("global table %q is also an input", g.topic))
		case slices.Contains(t.OutputTopics(), g.topic):
			errs = append(errs, fmt.Errorf("global table %q is also an output: a table of one's own output is a store", g.topic))
		case slices.Contains(t.ChangelogTopics(), g.topic):
			errs = append(errs, fmt.Errorf("global table %q is a store's changelog", g.topic))
		}
	}
	return errs
}

// GlobalTableInfo describes a declared global table for the query server.
type GlobalTableInfo struct {
	Topic string
	// Render decodes a value with the table's value codec, for display.
	Render func(value []byte) (any, error)
}

// GlobalTables returns the declared global tables in declaration order.
func (t *Topology) GlobalTables() []GlobalTableInfo {
	out := make([]GlobalTableInfo, len(t.globals))
	for i, g := range t.globals {
		out[i] = GlobalTableInfo{Topic: g.topic, Render: g.render}
	}
	return out
}

// globals are a runtime's open global tables. The map is written once, by
// openGlobals before any task runs, and only read afterwards: tasks start
// after it is filled (the session starts after openGlobals returns).
type globals struct {
	readers map[*globalSpec]*table.Mirror
}

func (g *globals) get(s *globalSpec) *table.Mirror {
	if g == nil {
		return nil
	}
	return g.readers[s]
}

// GlobalDir is where a runtime keeps its global tables' databases:
// <stateDir>/<applicationID>.global (a sibling of the stores' directory,
// never a task's).
func GlobalDir(stateDir, applicationID string) string {
	return filepath.Join(stateDir, applicationID+".global")
}

// openGlobals restores every global table to its end offsets and leaves
// them following their topics. On error the ones opened are closed.
func (r *Runtime) openGlobals(ctx context.Context) (_ *globals, err error) {
	g := &globals{readers: make(map[*globalSpec]*table.Mirror, len(r.topo.globals))}
	if len(r.topo.globals) == 0 {
		return g, nil
	}
	defer func() {
		if err != nil {
			g.close(r.log)
		}
	}()
	for _, s := range r.topo.globals {
		r.setPhase("restoring global table " + s.topic)
		r.mu.Lock()
		r.notReady = "restoring global table " + s.topic
		r.mu.Unlock()
		part := s.partitioner
		if part == nil {
			part = r.opts.Partitioner
		}
		began := time.Now()
		r.gmet.restoreStarted(s.topic)
		// No Registerer: the stores' metrics (rackstream_state_*) are the
		// runtime Manager's, and a second registration would collide.
		rd, err := table.Open(ctx, s.topic, table.Options{
			KafkaOpts:   r.clientOpts(),
			StateDir:    GlobalDir(r.opts.StateDir, r.topo.appID),
			Partitioner: part,
			LevelDB:     r.opts.LevelDB.Exactly(), // resolved: 0 means 0
			Logger:      r.log,
		})
		r.gmet.restoreEnded(s.topic, time.Since(began))
		if err != nil {
			return nil, fmt.Errorf("processor %s: global table: %w", r.topo.appID, err)
		}
		g.readers[s] = rd
		r.log.Info("global table restored", "topic", s.topic, "partitions", rd.Partitions())
	}
	r.mu.Lock()
	r.globals = g
	r.notReady = "joining the group"
	r.mu.Unlock()
	return g, nil
}

// close stops following the tables and closes their databases.
func (g *globals) close(log *slog.Logger) {
	var wg sync.WaitGroup
	errs := make([]error, 0, len(g.readers))
	var mu sync.Mutex // guards errs
	for _, rd := range g.readers {
		wg.Go(func() {
			if err := rd.Close(context.Background()); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		log.Error("closing the global tables", "err", err)
	}
}

// GlobalTable returns a read-only view of this instance's copy of the
// global table of topic, nil before Run has restored it or for a topic not
// declared global.
func (r *Runtime) GlobalTable(topic string) *GlobalView {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return nil
	}
	for s, rd := range r.globals.readersMap() {
		if s.topic == topic {
			return &GlobalView{m: rd}
		}
	}
	return nil
}

func (g *globals) readersMap() map[*globalSpec]*table.Mirror {
	if g == nil {
		return nil
	}
	return g.readers
}
