package processor

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/rackstream/rackstream/window"
)

// joinStore is what reading a stream-stream join's store takes: its
// retention and each side's value codec, for display.
type joinStore struct {
	retention int64
	render    [2]func([]byte) (any, error)
}

// Rendering a join record's value: RenderSide of StoreInfo.
func (j *joinStore) renderSide(side string, value []byte) (any, error) {
	switch side {
	case window.Left.String():
		return j.render[window.Left](value)
	case window.Right.String():
		return j.render[window.Right](value)
	}
	return nil, fmt.Errorf("join side %q: want %q or %q", side, window.Left, window.Right)
}

func keyJoinRecords(j *joinStore, store string, scan scanner, key []byte, timeFrom, timeTo int64) ([]StoredWindow, error) {
	recs, err := j.keyRecords(scan, key, timeFrom, timeTo)
	if err != nil {
		return nil, fmt.Errorf("store %s: join records of key %q: %w", store, key, err)
	}
	return recs, nil
}

func allJoinRecords(j *joinStore, store string, scan scanner, timeFrom, timeTo int64) ([]StoredWindow, error) {
	recs, err := j.allRecords(scan, timeFrom, timeTo)
	if err != nil {
		return nil, fmt.Errorf("store %s: join records in [%d, %d]: %w", store, timeFrom, timeTo, err)
	}
	return recs, nil
}

// keyRecords returns key's records of both sides with timestamps in
// [from, to], as a query sees them (expired ones hidden), in joinOrder.
func (j *joinStore) keyRecords(scan scanner, key []byte, from, to int64) ([]StoredWindow, error) {
	st, err := joinProgress(scan)
	if err != nil {
		return nil, err
	}
	var out []StoredWindow
	for _, side := range []window.Side{window.Left, window.Right} {
		lo, hi := window.JoinRecordRange(key, j.visibleFrom(st, side, from), to)
		lo, hi = prefixedRange(joinSidePrefix(side), lo, hi)
		if out, err = scanJoinRecords(scan, lo, hi, out); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, joinOrder)
	return out, nil
}

// allRecords returns every key's records of both sides with timestamps in
// [from, to], as a query sees them, in joinOrder. It walks the join's
// time index over the range, then reads each record.
func (j *joinStore) allRecords(scan scanner, from, to int64) ([]StoredWindow, error) {
	st, err := joinProgress(scan)
	if err != nil {
		return nil, err
	}
	low := [2]int64{j.visibleFrom(st, window.Left, from), j.visibleFrom(st, window.Right, from)}
	if min(low[0], low[1]) > to {
		return nil, nil
	}
	lo, hi := window.JoinTimeRange(min(low[0], low[1]), to)
	lo, hi = prefixedRange(prefixJoinIndex, lo, hi)
	var keys [][]byte
	var perr error
	err = scan(lo, hi, func(k, _ []byte) bool {
		ts, side, key, seq, err := window.ParseJoinTimeKey(k[1:])
		if err != nil {
			perr = err
			return false
		}
		if ts >= low[side] {
			keys = append(keys, prefixed(joinSidePrefix(side), window.JoinRecordKey(key, ts, seq)))
		}
		return true
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return nil, err
	}
	out := make([]StoredWindow, 0, len(keys))
	for _, k := range keys {
		if out, err = scanJoinRecords(scan, k, append(bytes.Clone(k), 0), out); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, joinOrder)
	return out, nil
}

// visibleFrom is the earliest timestamp of side's records a read in a
// range from from sees: retention ends with the side's store time.
func (j *joinStore) visibleFrom(st window.JoinState, side window.Side, from int64) int64 {
	if t := st.StoreTime[side]; t != window.NoTimestamp {
		return max(from, t-j.retention+1)
	}
	return from
}

// joinProgress reads the join's progress through scan; a join that has
// stored nothing has NewJoinState's.
func joinProgress(scan scanner) (window.JoinState, error) {
	st, found := window.NewJoinState(), false
	var derr error
	err := scan(joinStateKey, []byte{prefixMeta, 0}, func(_, v []byte) bool {
		var m joinMeta
		m, derr = decodeJoinMeta(v)
		st, found = m.state, true
		return false
	})
	if err != nil {
		return st, err
	}
	if found && derr != nil {
		return st, derr
	}
	return st, nil
}

// scanJoinRecords appends the records of one side's keys in [lo, hi) to
// out, each parsed by parseJoinRecord.
func scanJoinRecords(scan scanner, lo, hi []byte, out []StoredWindow) ([]StoredWindow, error) {
	var perr error
	err := scan(lo, hi, func(k, v []byte) bool {
		var r StoredWindow
		if r, perr = parseJoinRecord(k, v); perr != nil {
			return false
		}
		out = append(out, r)
		return true
	})
	if err == nil {
		err = perr
	}
	return out, err
}

// parseJoinRecord decodes one entry of a side's records in a join's
// store: its side prefix, key, timestamp and input offset, and its value.
// The result's Start and End are the timestamp; its slices are copies.
func parseJoinRecord(k, v []byte) (StoredWindow, error) {
	if len(k) == 0 || k[0] != prefixJoinLeft && k[0] != prefixJoinRight {
		return StoredWindow{}, fmt.Errorf("join store key %x: not a record's", k)
	}
	side := window.Left
	if k[0] == prefixJoinRight {
		side = window.Right
	}
	key, ts, seq, err := window.ParseJoinRecordKey(k[1:])
	if err != nil {
		return StoredWindow{}, err
	}
	return StoredWindow{Key: bytes.Clone(key), Start: ts, End: ts, Side: side.String(), Offset: seq, Value: bytes.Clone(v)}, nil
}

// joinOrder orders join records by timestamp, then side (left first),
// then input offset, then key.
func joinOrder(a, b StoredWindow) int {
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	if a.Side != b.Side {
		if a.Side == window.Left.String() {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(a.Offset, b.Offset); c != 0 {
		return c
	}
	return bytes.Compare(a.Key, b.Key)
}
