package processor

// Unmatched records a stream join emitted, kept until their output is safe.
//
// A record that closes windows emits the unmatched records waiting for it
// and deletes them from the join's store. Under at-least-once the
// changelog can hold that delete while the emitted results never reached
// the output (a crash between the two acknowledgements); the record is then
// processed again on the new owner, which would find nothing left to emit.
// So the emitted records are also kept under a mark of the input record
// that emitted them ('e' + topic + offset), as windowed aggregations keep
// their close marks. When a record at or before a mark's is processed
// again, every mark's records wait again and are emitted once more; a mark
// is dropped once its record's offset is committed, since the outputs
// before it are acknowledged by then. Under exactly-once the marks are
// dropped at the next commit and never used.

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/rackstream/rackstream/window"
)

const prefixJoinEmitted byte = 'e'

// joinMeta is what the join keeps under 'm': package window's JoinState,
// then how many marks the store holds, so that a record reads them only
// when there are some.
type joinMeta struct {
	state window.JoinState
	marks int64
}

func (m joinMeta) encode() []byte {
	return binary.BigEndian.AppendUint64(window.EncodeJoinState(m.state), uint64(m.marks))
}

func decodeJoinMeta(b []byte) (joinMeta, error) {
	if len(b) != 40 {
		return joinMeta{}, fmt.Errorf("join progress: %d bytes, want 40", len(b))
	}
	s, err := window.DecodeJoinState(b[:32])
	return joinMeta{state: s, marks: int64(binary.BigEndian.Uint64(b[32:]))}, err
}

func joinMarkKey(topic string, offset int64) []byte {
	b := binary.BigEndian.AppendUint16([]byte{prefixJoinEmitted}, uint16(len(topic)))
	return binary.BigEndian.AppendUint64(append(b, topic...), uint64(offset))
}

func parseJoinMarkKey(b []byte) (topic string, offset int64, err error) {
	if len(b) < 3 || len(b) != 3+int(binary.BigEndian.Uint16(b[1:]))+8 {
		return "", 0, fmt.Errorf("join mark key %x: malformed", b)
	}
	n := int(binary.BigEndian.Uint16(b[1:]))
	return string(b[3 : 3+n]), int64(binary.BigEndian.Uint64(b[3+n:])), nil
}

// joinMarkValue lists pending records, each its key (without prefix) and
// value, length-prefixed.
func appendJoinMarkEntry(dst, key, value []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(len(value)))
	return append(dst, value...)
}

func forJoinMarkEntries(b []byte, fn func(key, value []byte) error) error {
	for len(b) > 0 {
		var parts [2][]byte
		for i := range parts {
			n, w := binary.Uvarint(b)
			if w <= 0 || uint64(len(b)-w) < n {
				return fmt.Errorf("join mark: truncated entry")
			}
			parts[i], b = b[w:w+int(n)], b[w+int(n):]
		}
		if err := fn(parts[0], parts[1]); err != nil {
			return err
		}
	}
	return nil
}

// replayed reads the marks before a record runs the join: when the record
// was processed before, every mark's records wait again (and the hint of
// the earliest one moves back to them); otherwise the marks of committed
// records are dropped.
func (j *StreamJoin[K, L, R]) replayed(ctx *Context, meta *joinMeta) error {
	if meta.marks == 0 {
		return nil
	}
	type mark struct {
		key, value []byte
		topic      string
		offset     int64
	}
	var marks []mark
	var perr error
	err := ctx.scan(j.spec, []byte{prefixJoinEmitted}, []byte{prefixJoinEmitted + 1}, func(k, v []byte) bool {
		topic, offset, err := parseJoinMarkKey(k)
		if err != nil {
			perr = err
			return false
		}
		marks = append(marks, mark{bytes.Clone(k), bytes.Clone(v), topic, offset})
		return true
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("stream join %s: read marks: %w", j.spec.name, err)
	}
	replay := false
	for _, m := range marks {
		replay = replay || m.topic == ctx.Topic() && m.offset >= ctx.Offset()
	}
	for _, m := range marks {
		if !replay && m.offset >= ctx.be.committedOffset(ctx.Partition(), m.topic) {
			continue
		}
		if replay {
			err := forJoinMarkEntries(m.value, func(key, value []byte) error {
				ts, _, _, _, err := window.ParseJoinTimeKey(key)
				if err != nil {
					return err
				}
				meta.state.MinPending = min(meta.state.MinPending, ts)
				return j.put(ctx, prefixed(prefixJoinPending, key), value)
			})
			if err != nil {
				return fmt.Errorf("stream join %s: mark of %s@%d: %w", j.spec.name, m.topic, m.offset, err)
			}
		}
		if err := j.del(ctx, m.key); err != nil {
			return err
		}
		meta.marks--
	}
	return nil
}

// mark keeps the pending records this record's closing of windows emitted
// and deleted (lone results matched to their unpend), under the record's
// mark.
func (j *StreamJoin[K, L, R]) mark(ctx *Context, meta *joinMeta, entries []byte) error {
	if len(entries) == 0 {
		return nil
	}
	meta.marks++
	return j.put(ctx, joinMarkKey(ctx.Topic(), ctx.Offset()), entries)
}
