package service

import (
	"errors"

	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/query"
)

// windowReader reads a window or session store by time
// (processor.StoreView at the committed state, processor.FreshView at the
// latest).
type windowReader interface {
	Windows(key []byte, timeFrom, timeTo int64) ([]processor.StoredWindow, error)
	AllWindows(timeFrom, timeTo int64) ([]processor.StoredWindow, error)
}

// errNoWindows is a window read of a replica whose views read no windows.
var errNoWindows = errors.New("the store's views read no windows")

// Windows reads key's windows as Get reads a key: the checkpoint first,
// then the windows at iso (see reader.go).
func (r storeReplica) Windows(key []byte, timeFrom, timeTo int64, iso query.Isolation) ([]query.StoredWindow, int64, error) {
	return r.readWindows(iso, func(w windowReader) ([]processor.StoredWindow, error) {
		return w.Windows(key, timeFrom, timeTo)
	})
}

// AllWindows reads every key's windows in the time range as Windows does.
func (r storeReplica) AllWindows(timeFrom, timeTo int64, iso query.Isolation) ([]query.StoredWindow, int64, error) {
	return r.readWindows(iso, func(w windowReader) ([]processor.StoredWindow, error) {
		return w.AllWindows(timeFrom, timeTo)
	})
}

func (r storeReplica) readWindows(iso query.Isolation, read func(windowReader) ([]processor.StoredWindow, error)) ([]query.StoredWindow, int64, error) {
	if err := r.healthy(); err != nil {
		return nil, 0, err
	}
	pos := r.s.Checkpoint()
	src, ok := r.s.(windowReader)
	if fresh, isWin := r.fresh.(windowReader); iso == query.IsolationLatest && isWin {
		src, ok = fresh, true
	}
	if !ok {
		return nil, 0, errNoWindows
	}
	ws, err := read(src)
	if err != nil {
		return nil, 0, err
	}
	out := make([]query.StoredWindow, len(ws))
	for i, w := range ws {
		out[i] = query.StoredWindow{Key: w.Key, Start: w.Start, End: w.End, Value: w.Value, Side: w.Side, Offset: w.Offset}
	}
	return out, pos, nil
}
