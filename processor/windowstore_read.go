package processor

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/rackstream/rackstream/window"
)

// StoredWindow is one window of a window or session store as a query reads
// it, or one buffered record of a stream-stream join's store.
type StoredWindow struct {
	// Key is the window's key as the aggregation's key codec encodes it.
	Key []byte
	// Start and End are the window's bounds in epoch milliseconds, End as
	// Windowed's.
	Start, End int64
	// Value is the aggregate, encoded with the aggregation's codec: the
	// store's StoreInfo.Render decodes it. A join record's is its value,
	// encoded with its side's codec: StoreInfo.RenderSide decodes it.
	Value []byte
	// Side is "left" or "right" for a join record, whose timestamp is
	// Start (and End) and whose input offset is Offset; "" for a window.
	Side   string
	Offset int64
}

// ErrNotWindowStore is the error of a window read of a store that is not a
// windowed aggregation's.
var ErrNotWindowStore = errors.New("not a window, session or join store")

// Windows returns key's windows in the store's committed state, oldest
// first: those starting in [timeFrom, timeTo], or, in a session store, the
// sessions that end at or after timeFrom and start at or before timeTo
// (Kafka Streams' fetch of a key). Windows retention has expired are not
// returned. It fails with ErrNotWindowStore on a key-value store.
//
// On a stream-stream join's store (StoreInfo.Windows "join") it returns
// key's buffered records of both sides with timestamps in [timeFrom,
// timeTo], by timestamp, then side (left first), then input offset; those
// past the join's retention are not returned.
func (v *StoreView) Windows(key []byte, timeFrom, timeTo int64) ([]StoredWindow, error) {
	if v.join != nil {
		return keyJoinRecords(v.join, v.db.Name(), v.Scan, key, timeFrom, timeTo)
	}
	return keyWindows(v.window, v.db.Name(), v.Scan, key, timeFrom, timeTo)
}

// AllWindows returns every key's windows in the store's committed state in
// a time range (as Windows selects them), by time (a session's end), then
// key. On a join's store it returns every key's records in the time
// range, by timestamp, then side, then input offset, then key.
func (v *StoreView) AllWindows(timeFrom, timeTo int64) ([]StoredWindow, error) {
	if v.join != nil {
		return allJoinRecords(v.join, v.db.Name(), v.Scan, timeFrom, timeTo)
	}
	return allWindows(v.window, v.db.Name(), v.Scan, timeFrom, timeTo)
}

// Windows is StoreView.Windows at the store's latest processed state.
func (v *FreshView) Windows(key []byte, timeFrom, timeTo int64) ([]StoredWindow, error) {
	if v.join != nil {
		return keyJoinRecords(v.join, v.db.Name(), v.Scan, key, timeFrom, timeTo)
	}
	return keyWindows(v.window, v.db.Name(), v.Scan, key, timeFrom, timeTo)
}

// AllWindows is StoreView.AllWindows at the store's latest processed
// state.
func (v *FreshView) AllWindows(timeFrom, timeTo int64) ([]StoredWindow, error) {
	if v.join != nil {
		return allJoinRecords(v.join, v.db.Name(), v.Scan, timeFrom, timeTo)
	}
	return allWindows(v.window, v.db.Name(), v.Scan, timeFrom, timeTo)
}

func keyWindows(w *windowStore, store string, scan scanner, key []byte, timeFrom, timeTo int64) ([]StoredWindow, error) {
	if w == nil {
		return nil, fmt.Errorf("store %s: %w", store, ErrNotWindowStore)
	}
	raw, err := w.keyRange(scan, key, timeFrom, timeTo)
	if err != nil {
		return nil, fmt.Errorf("store %s: windows of key %q: %w", store, key, err)
	}
	return storedWindows(raw), nil
}

func allWindows(w *windowStore, store string, scan scanner, timeFrom, timeTo int64) ([]StoredWindow, error) {
	if w == nil {
		return nil, fmt.Errorf("store %s: %w", store, ErrNotWindowStore)
	}
	raw, err := w.timeRange(scan, timeFrom, timeTo)
	if err != nil {
		return nil, fmt.Errorf("store %s: windows in [%d, %d]: %w", store, timeFrom, timeTo, err)
	}
	return storedWindows(raw), nil
}

// layoutOf returns the layout of store when it is a window or session
// store of the replica's topology, or its join's when it is a
// stream-stream join's store; else nils.
func (rep Replica) layoutOf(store string) (*windowStore, *joinStore) {
	if rep.topo == nil {
		return nil, nil
	}
	for _, s := range rep.topo.stores {
		if s.name == store {
			return s.window, s.join
		}
	}
	return nil, nil
}

func storedWindows(raw []rawWindow) []StoredWindow {
	out := make([]StoredWindow, len(raw))
	for i, r := range raw {
		out[i] = StoredWindow{Key: r.key, Start: r.win.Start, End: r.win.End, Value: r.agg}
	}
	return out
}

// windowStore is what reading a window or session store takes: its layout
// and window length.
type windowStore struct {
	layout windowLayout
	size   int64
}

// storeTime reads the store's time (its progress' storeTime) through scan.
func (w *windowStore) storeTime(scan scanner) (int64, error) {
	meta, found := emptyMeta, false
	var err error
	serr := scan(metaKey, []byte{prefixMeta, 0}, func(_, v []byte) bool {
		meta, err = decodeMeta(v)
		found = true
		return false
	})
	if serr != nil {
		return 0, serr
	}
	if found && err != nil {
		return 0, err
	}
	return meta.storeTime, nil
}

// keyRange returns key's windows in a time range, oldest first, as a query
// sees them (expired ones hidden): the windows starting in [from, to], or
// the sessions that end at or after from and start at or before to (Kafka
// Streams' fetch(key, earliestSessionEndTime, latestSessionStartTime)).
func (w *windowStore) keyRange(scan scanner, key []byte, from, to int64) ([]rawWindow, error) {
	now, err := w.storeTime(scan)
	if err != nil {
		return nil, err
	}
	if w.layout.kind != kindSession {
		return w.layout.keyWindows(scan, w.size, key, from, to, now)
	}
	raw, err := w.layout.keyWindows(scan, 0, key, from, math.MaxInt64, now)
	out := raw[:0]
	for _, r := range raw {
		if r.win.Start <= to {
			out = append(out, r)
		}
	}
	return out, err
}

// timeRange returns every key's windows in a time range (as keyRange
// selects them), by time (sessions: end), then key, as a query sees them.
func (w *windowStore) timeRange(scan scanner, from, to int64) ([]rawWindow, error) {
	now, err := w.storeTime(scan)
	if err != nil {
		return nil, err
	}
	hi := to
	if w.layout.kind == kindSession {
		hi = math.MaxInt64
	}
	var out []rawWindow
	visible := func(t int64) bool { return now == window.NoTimestamp || w.layout.segs.Live(t, now) }
	err = w.layout.timeWindows(scan, w.size, from, hi, visible, func(r rawWindow) bool {
		if w.layout.kind == kindSession && r.win.Start > to {
			return true
		}
		out = append(out, rawWindow{key: bytes.Clone(r.key), win: r.win})
		return true
	})
	if err != nil {
		return nil, err
	}
	// The index holds values only under emit-on-close: read each window.
	for i := range out {
		var v []byte
		k := w.layout.dataKey(out[i].key, out[i].win)
		if err := scan(k, append(bytes.Clone(k), 0), func(_, val []byte) bool {
			v = bytes.Clone(val)
			return false
		}); err != nil {
			return nil, err
		}
		if out[i].ts, out[i].agg, err = splitWindowValue(v); err != nil {
			return nil, fmt.Errorf("window [%d,%d] of key %q: %w", out[i].win.Start, out[i].win.End, out[i].key, err)
		}
	}
	return out, nil
}
