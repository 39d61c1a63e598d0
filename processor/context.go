package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Context is what a handler sees of the record it handles and of its task.
// It is valid only during the handler call that received it.
//
// A punctuator and a timer handler have no record: their Context shows
// an empty topic, the task's partition, offset -1, no key, value or
// headers, and as its timestamp the time of the punctuation or the
// timer's due time.
type Context struct {
	ctx     context.Context
	topo    *Topology
	rec     *kgo.Record
	ts      time.Time // the record's extracted timestamp (streamtime.go)
	tt      *taskTime
	attempt int
	be      backend
	writes  []write
	// late lists the windowed aggregations this call found the record too
	// late for, in some or all of its windows (windowed_process.go): the
	// record processor counts them and, under the error policy dlq,
	// dead-letters a record one of them dropped whole.
	late []lateMark
	// emitAt, when set, stamps this call's emits instead of the record's
	// timestamp (a stream join's result, streamjoin_store.go).
	emitAt time.Time
	// arena holds the encoded keys and values of this call's writes; it is
	// reused for the next record once they are applied (the backend copies
	// what it keeps).
	arena []byte
}

// encode appends v's encoding to the arena and returns it, capacity-capped
// so that nobody's append can reach into the bytes after it.
func encode[T any](c *Context, app func([]byte, T) ([]byte, error), v T) ([]byte, error) {
	mark := len(c.arena)
	var err error
	if c.arena, err = app(c.arena, v); err != nil {
		c.arena = c.arena[:mark]
		return nil, err
	}
	return c.arena[mark:len(c.arena):len(c.arena)], nil
}

// write is one staged effect of a handler call: a store put or delete, or
// an emit to an output. Effects are applied together when the handler
// returns nil, and dropped when it fails.
type write struct {
	store   *storeSpec // a store write, or
	output  *outputSpec
	key     []byte
	value   []byte
	del     bool
	headers []kgo.RecordHeader
	// at is an emit's timestamp when it is not the record's (zero).
	at time.Time
}

// Context returns the context of the task: cancelled when the task stops
// (revoked, lost, shut down). Pass it to blocking calls a handler makes.
func (c *Context) Context() context.Context { return c.ctx }

// Topic returns the record's topic.
func (c *Context) Topic() string { return c.rec.Topic }

// Partition returns the record's partition, which is also the task's slot.
func (c *Context) Partition() int32 { return c.rec.Partition }

// Offset returns the record's offset.
func (c *Context) Offset() int64 { return c.rec.Offset }

// Timestamp returns the record's timestamp, as its input's extractor gave
// it (WithTimestamp); the records the handler writes and emits carry it.
func (c *Context) Timestamp() time.Time { return c.ts }

// Headers returns the record's headers. Do not modify them.
func (c *Context) Headers() []kgo.RecordHeader { return c.rec.Headers }

// Header returns the value of the record's last header named key.
func (c *Context) Header(key string) (value []byte, ok bool) {
	for i := len(c.rec.Headers) - 1; i >= 0; i-- {
		if c.rec.Headers[i].Key == key {
			return c.rec.Headers[i].Value, true
		}
	}
	return nil, false
}

// Key returns the record's key as it arrived (undecoded). Do not modify it.
func (c *Context) Key() []byte { return c.rec.Key }

// Value returns the record's value as it arrived (undecoded); nil for a
// tombstone. Do not modify it.
func (c *Context) Value() []byte { return c.rec.Value }

// Tombstone reports whether the record has no value (a delete).
func (c *Context) Tombstone() bool { return c.rec.Value == nil }

// Attempt returns 0 on the first call for a record and n on its n-th retry.
func (c *Context) Attempt() int { return c.attempt }

// errOutsideCall is the error of a store or output used with a Context
// that is not in a handler call: a zero Context, or one kept after its
// call returned, seen while its task is between records.
var errOutsideCall = errors.New("the Context is not in a handler call (a Context is valid only during the call that received it)")

func (c *Context) get(t *Topology, s *storeSpec, key []byte) ([]byte, bool, error) {
	if c.rec == nil {
		return nil, false, fmt.Errorf("store %s: %w", s.name, errOutsideCall)
	}
	if t != c.topo {
		return nil, false, fmt.Errorf("store %s belongs to topology %s, not to %s", s.name, t.appID, c.topo.appID)
	}
	for i := len(c.writes) - 1; i >= 0; i-- {
		w := &c.writes[i]
		if w.store == s && bytes.Equal(w.key, key) {
			if w.del {
				return nil, false, nil
			}
			// A copy: the arena is reused, and a codec may hand the bytes
			// to the handler as they are.
			return append([]byte(nil), w.value...), true, nil
		}
	}
	return c.be.get(c.rec.Partition, s, key)
}

func (c *Context) stage(t *Topology, w write) error {
	if c.rec == nil {
		return fmt.Errorf("%s: %w", w.output.topicOrStore(w.store), errOutsideCall)
	}
	if t != c.topo {
		name := w.output.topicOrStore(w.store)
		return fmt.Errorf("%s belongs to topology %s, not to %s", name, t.appID, c.topo.appID)
	}
	if w.output != nil {
		w.at = c.emitAt
	}
	c.writes = append(c.writes, w)
	return nil
}

// uncached reports whether w goes past the record cache: a write to a
// window or session store, or an emit to a stream output (doc.go, "Record
// cache and streams").
func (w *write) uncached() bool {
	if w.store != nil {
		return w.store.uncached
	}
	return w.output.stream
}

func (w *write) outputIndex() int {
	if w.output == nil {
		return 0
	}
	return w.output.index
}

func (o *outputSpec) topicOrStore(s *storeSpec) string {
	if s != nil {
		return "store " + s.name
	}
	return "output " + o.topic
}

// Permanent marks err as not worth retrying: the record goes to the error
// policy (dead letter, skip or fail) at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func isPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
