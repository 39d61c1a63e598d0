package processor

// Window and session stores over a task's ordinary changelogged stores.
//
// A windowed aggregation's store is a store like any other: one LevelDB
// database per task, with its changelog, restore, standbys and
// checkpoints. It is laid out with package window's key encodings under
// three prefixes:
//
//   - 'w' + window.WindowKey(key, start) (sessions: window.SessionKey) holds
//     a window's aggregate: the largest record timestamp in it (8 bytes,
//     big-endian) then the aggregate's encoding. One key's windows in a
//     time range are one range scan.
//   - 't' + window.WindowTimeKey(start, key) (sessions:
//     window.SessionTimeKey) indexes every window by time, then key: the
//     order final results are emitted in and expiry drops windows in.
//     Under emit-on-close its value is the window's value, so that final
//     results are one scan; under emit-on-update it is empty.
//   - 'm' holds the aggregation's progress (windowMeta): its stream time,
//     the last close time it emitted final results up to, and the store's
//     own time for retention. It is written with the windows it describes,
//     so it travels with them through the changelog (inside the
//     transaction under exactly-once) to whichever instance owns the task
//     next, standby or not.
//
// Retention follows window.Segments. A window's segment time is its start,
// or a session's end. A window whose segment time is a retention or more
// behind the store's time is no longer visible to reads. A write to a
// window whose segment has expired is skipped, as in Kafka Streams. Expiry
// deletes the windows of whole segments once the store's time leaves them
// behind. It stages one delete per window, and its index entry, with the
// record that moved the store's time. LevelDB has no cheap drop of a key
// range, and a per-segment database would split the store's one changelog
// checkpoint. The deletes are changelogged like every write, so the
// checkpoint never covers data the store does not hold.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/rackstream/rackstream/window"
)

// Key prefixes of a window or session store.
const (
	prefixWindow byte = 'w'
	prefixTime   byte = 't'
	prefixMeta   byte = 'm'
)

var metaKey = []byte{prefixMeta}

// windowKind is the shape of a windowed store.
type windowKind uint8

const (
	kindTime windowKind = iota + 1 // tumbling and hopping
	kindSliding
	kindSession
)

func (k windowKind) String() string {
	switch k {
	case kindTime:
		return "time"
	case kindSliding:
		return "sliding"
	case kindSession:
		return "session"
	}
	return ""
}

// windowMeta is a windowed aggregation's progress, kept in its store.
type windowMeta struct {
	// streamTime is the largest record timestamp the aggregation has
	// seen in this task (window.NoTimestamp: none).
	streamTime int64
	// lastClose is the close time final results were emitted up to
	// (window.NoTimestamp: none yet).
	lastClose int64
	// storeTime is the largest segment time written (window.NoTimestamp:
	// none): retention is measured against it.
	storeTime int64
	// marks are the emissions of final results whose input records may
	// not be committed yet, oldest first (see closeMark).
	marks []closeMark
}

// closeMark is an emission of final results: the input record that made
// it, and the last close before it. Under at-least-once the changelog may
// hold progress whose final results never reached the output (a crash
// between the two acknowledgements); when such a record is processed
// again, lastClose goes back to the mark's, and those results are emitted
// again rather than lost. A mark is dropped once its record's offset is
// committed: from then on the outputs before it are acknowledged.
type closeMark struct {
	topic       string
	offset      int64
	closeBefore int64
}

var emptyMeta = windowMeta{streamTime: window.NoTimestamp, lastClose: window.NoTimestamp, storeTime: window.NoTimestamp}

func (m windowMeta) encode() []byte {
	b := make([]byte, 0, 24)
	b = binary.BigEndian.AppendUint64(b, uint64(m.streamTime))
	b = binary.BigEndian.AppendUint64(b, uint64(m.lastClose))
	b = binary.BigEndian.AppendUint64(b, uint64(m.storeTime))
	for _, c := range m.marks {
		b = binary.BigEndian.AppendUint16(b, uint16(len(c.topic)))
		b = append(b, c.topic...)
		b = binary.BigEndian.AppendUint64(b, uint64(c.offset))
		b = binary.BigEndian.AppendUint64(b, uint64(c.closeBefore))
	}
	return b
}

func decodeMeta(b []byte) (windowMeta, error) {
	if len(b) < 24 {
		return windowMeta{}, fmt.Errorf("window store progress: %d bytes, want at least 24", len(b))
	}
	m := windowMeta{
		streamTime: int64(binary.BigEndian.Uint64(b)),
		lastClose:  int64(binary.BigEndian.Uint64(b[8:])),
		storeTime:  int64(binary.BigEndian.Uint64(b[16:])),
	}
	for rest := b[24:]; len(rest) > 0; {
		if len(rest) < 2 || len(rest) < 2+int(binary.BigEndian.Uint16(rest))+16 {
			return windowMeta{}, fmt.Errorf("window store progress: truncated close mark")
		}
		n := int(binary.BigEndian.Uint16(rest))
		c := closeMark{topic: string(rest[2 : 2+n])}
		rest = rest[2+n:]
		c.offset, c.closeBefore = int64(binary.BigEndian.Uint64(rest)), int64(binary.BigEndian.Uint64(rest[8:]))
		m.marks = append(m.marks, c)
		rest = rest[16:]
	}
	return m, nil
}

// replayed rewinds lastClose when a record of topic at offset was
// processed before (a mark of it or of a later record of topic is kept):
// to the oldest mark's close, every mark dropped. It then drops the marks
// whose records are committed (their offset below committed[topic]).
func (m *windowMeta) replayed(topic string, offset int64, committed func(topic string) int64) {
	for _, c := range m.marks {
		if c.topic == topic && c.offset >= offset {
			m.lastClose, m.marks = m.marks[0].closeBefore, nil
			return
		}
	}
	kept := m.marks[:0]
	for _, c := range m.marks {
		if c.offset >= committed(c.topic) {
			kept = append(kept, c)
		}
	}
	m.marks = kept
}

func (m windowMeta) equal(o windowMeta) bool {
	return m.streamTime == o.streamTime && m.lastClose == o.lastClose && m.storeTime == o.storeTime && slices.Equal(m.marks, o.marks)
}

// prefixed returns p followed by b.
func prefixed(p byte, b []byte) []byte {
	out := make([]byte, 0, 1+len(b))
	return append(append(out, p), b...)
}

// prefixedRange puts p before a range of package window's keys; a nil hi
// (no bound) becomes the end of p's keys.
func prefixedRange(p byte, lo, hi []byte) ([]byte, []byte) {
	if hi == nil {
		return prefixed(p, lo), []byte{p + 1}
	}
	return prefixed(p, lo), prefixed(p, hi)
}

// windowValue is a stored window's value: the window's largest record
// timestamp, then the aggregate's encoding.
func windowValue(ts int64, agg []byte) []byte {
	b := make([]byte, 0, 8+len(agg))
	return append(binary.BigEndian.AppendUint64(b, uint64(ts)), agg...)
}

func splitWindowValue(b []byte) (ts int64, agg []byte, err error) {
	if len(b) < 8 {
		return 0, nil, fmt.Errorf("window value of %d bytes: shorter than its timestamp", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), b[8:], nil
}

// windowLayout is what a store's layout depends on: its kind and
// retention segments.
type windowLayout struct {
	kind windowKind
	segs window.Segments
}

// segmentTime is the time retention measures w by: its start, a session's
// end.
func (l windowLayout) segmentTime(w window.Window) int64 {
	if l.kind == kindSession {
		return w.End
	}
	return w.Start
}

// dataKey and timeKey are the store keys of key's window w.
func (l windowLayout) dataKey(key []byte, w window.Window) []byte {
	if l.kind == kindSession {
		return prefixed(prefixWindow, window.SessionKey(key, w))
	}
	return prefixed(prefixWindow, window.WindowKey(key, w.Start))
}

func (l windowLayout) timeKey(key []byte, w window.Window) []byte {
	if l.kind == kindSession {
		return prefixed(prefixTime, window.SessionTimeKey(w, key))
	}
	return prefixed(prefixTime, window.WindowTimeKey(w.Start, key))
}

// parseTimeKey decodes a time index key (without its prefix) into the
// window and its key; end is the window's end for time and sliding
// windows, whose keys hold only the start.
func (l windowLayout) parseTimeKey(b []byte, size int64) (key []byte, w window.Window, err error) {
	if l.kind == kindSession {
		w, key, err = window.ParseSessionTimeKey(b)
		return key, w, err
	}
	var start int64
	start, key, err = window.ParseWindowTimeKey(b)
	return key, window.Window{Start: start, End: start + size}, err
}

// parseDataKey decodes a data key (without its prefix).
func (l windowLayout) parseDataKey(b []byte, size int64) (key []byte, w window.Window, err error) {
	if l.kind == kindSession {
		return window.ParseSessionKey(b)
	}
	var start int64
	key, start, err = window.ParseWindowKey(b)
	return key, window.Window{Start: start, End: start + size}, err
}

// scanner reads a range of one store in key order; the slices passed to
// fn are valid during the call.
type scanner func(start, end []byte, fn func(key, value []byte) bool) error

// rawWindow is one stored window, its aggregate still encoded.
type rawWindow struct {
	key []byte
	win window.Window
	ts  int64
	agg []byte
}

// keyWindows returns key's windows whose start (sessions: end) lies in
// [from, to], oldest first, hiding those retention has expired at store
// time now. The slices are copies.
func (l windowLayout) keyWindows(scan scanner, size int64, key []byte, from, to, now int64) ([]rawWindow, error) {
	if from > to {
		return nil, nil
	}
	var lo, hi []byte
	if l.kind == kindSession {
		lo, hi = window.SessionRange(key, from, to)
	} else {
		lo, hi = window.WindowRange(key, from, to)
	}
	lo, hi = prefixedRange(prefixWindow, lo, hi)
	var out []rawWindow
	var perr error
	err := scan(lo, hi, func(k, v []byte) bool {
		_, w, err := l.parseDataKey(k[1:], size)
		if err == nil && !l.segs.Live(l.segmentTime(w), now) {
			return true
		}
		var ts int64
		var agg []byte
		if err == nil {
			ts, agg, err = splitWindowValue(v)
		}
		if err != nil {
			perr = err
			return false
		}
		out = append(out, rawWindow{key: key, win: w, ts: ts, agg: bytes.Clone(agg)})
		return true
	})
	if err == nil {
		err = perr
	}
	return out, err
}

// timeWindows calls fn for every key's windows whose start (sessions: end)
// lies in [from, to], by that time then key, reading the time index: with
// values (emit-on-close stores) or keys alone. visible says which windows
// a read may see (window.Segments' Live or LiveForFinals).
func (l windowLayout) timeWindows(scan scanner, size, from, to int64, visible func(t int64) bool, fn func(rawWindow) bool) error {
	if from > to {
		return nil
	}
	lo, hi := window.WindowTimeRange(from, to)
	lo, hi = prefixedRange(prefixTime, lo, hi)
	var perr error
	err := scan(lo, hi, func(k, v []byte) bool {
		key, w, err := l.parseTimeKey(k[1:], size)
		if err != nil {
			perr = err
			return false
		}
		if !visible(l.segmentTime(w)) {
			return true
		}
		r := rawWindow{key: key, win: w}
		if len(v) > 0 {
			if r.ts, r.agg, err = splitWindowValue(v); err != nil {
				perr = err
				return false
			}
		}
		return fn(r)
	})
	if err == nil {
		err = perr
	}
	return err
}

// expiredKeys returns the data and index keys of the windows in segments
// that expire when the store's time moves from before to now: those
// whose segment time lies below the oldest live segment's start. Windows
// of segments that expired before were deleted then.
func (l windowLayout) expiredKeys(scan scanner, size, before, now int64) ([][]byte, error) {
	if now == window.NoTimestamp {
		return nil, nil
	}
	limit := l.segs.Start(l.segs.MinLive(now))
	if before != window.NoTimestamp && l.segs.Start(l.segs.MinLive(before)) >= limit {
		return nil, nil // no segment expired
	}
	if limit <= 0 {
		return nil, nil
	}
	var keys [][]byte
	err := l.timeWindows(scan, size, 0, limit-1, func(int64) bool { return true }, func(r rawWindow) bool {
		keys = append(keys, l.dataKey(r.key, r.win), l.timeKey(r.key, r.win))
		return true
	})
	return keys, err
}

// scan reads [start, end) of an uncached store s of the running task in
// key order, seeing this call's staged writes over the store's.
func (c *Context) scan(s *storeSpec, start, end []byte, fn func(key, value []byte) bool) error {
	var staged []int // indexes into c.writes: the last write of each key in range
	var seen map[string]bool
	for i := len(c.writes) - 1; i >= 0; i-- {
		w := &c.writes[i]
		if w.store != s || bytes.Compare(w.key, start) < 0 || end != nil && bytes.Compare(w.key, end) >= 0 || seen[string(w.key)] {
			continue
		}
		if seen == nil {
			seen = make(map[string]bool)
		}
		seen[string(w.key)] = true
		staged = append(staged, i)
	}
	if len(staged) == 0 {
		return c.be.scan(c.rec.Partition, s, start, end, fn)
	}
	slices.SortFunc(staged, func(a, b int) int { return bytes.Compare(c.writes[a].key, c.writes[b].key) })
	type kv struct{ k, v []byte }
	var stored []kv
	if err := c.be.scan(c.rec.Partition, s, start, end, func(k, v []byte) bool {
		stored = append(stored, kv{bytes.Clone(k), bytes.Clone(v)})
		return true
	}); err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(stored) || j < len(staged) {
		if j == len(staged) || i < len(stored) && bytes.Compare(stored[i].k, c.writes[staged[j]].key) < 0 {
			if !fn(stored[i].k, stored[i].v) {
				return nil
			}
			i++
			continue
		}
		w := &c.writes[staged[j]]
		j++
		if i < len(stored) && bytes.Equal(stored[i].k, w.key) {
			i++ // the staged write wins
		}
		if !w.del && !fn(w.key, w.value) {
			return nil
		}
	}
	return nil
}
