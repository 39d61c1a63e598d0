package query

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// Window queries read window and session stores (ServedStore.Windowed) by
// time range: GET /v1/stores/{store}/windows/{key} a key's windows, routed
// like a key lookup; GET /v1/stores/{store}/windows every key's, merged
// across tasks and paged like a scan. time_from and time_to (epoch ms,
// both inclusive, default 0 and no bound) select the windows as
// WindowView does.

// windowValue is one window of a key's windows answer.
type windowValue struct {
	Start int64           `json:"start"`
	End   int64           `json:"end"`
	Value json.RawMessage `json:"value"`
}

// windowsAnswer is the 200 body of a key's windows: the windows oldest
// first, none an empty list.
type windowsAnswer struct {
	Key          string        `json:"key,omitempty"`
	KeyBase64URL string        `json:"key_base64url,omitempty"`
	Windows      []windowValue `json:"windows"`
	answerMeta
}

// windowItem is one window of a page of every key's windows.
type windowItem struct {
	Key          *string         `json:"key,omitempty"`
	KeyBase64URL string          `json:"key_base64url,omitempty"`
	Start        int64           `json:"start"`
	End          int64           `json:"end"`
	Value        json.RawMessage `json:"value"`
	Task         int32           `json:"task"`
}

// windowsPage is the 200 body of every key's windows: by start, then
// end, then key.
type windowsPage struct {
	Windows    []windowItem       `json:"windows"`
	NextCursor string             `json:"next_cursor,omitempty"`
	Generation int32              `json:"generation"`
	ServedBy   map[string][]int32 `json:"served_by"`
}

// windows answers GET /v1/stores/{store}/windows/{key}.
func (s *Server) windows(w *statusWriter, r *http.Request, o origin) {
	s.lookup(w, r, o, true)
}

// keyWindowsAnswer renders a key's windows read from a replica, or a
// join's store's records (joinAnswer).
func keyWindowsAnswer(st ServedStore, key, keyB64 string, wins []StoredWindow, meta answerMeta) (any, error) {
	if st.Join {
		return joinAnswer(st, key, keyB64, wins, meta)
	}
	ans := &windowsAnswer{Key: key, KeyBase64URL: keyB64, Windows: make([]windowValue, len(wins)), answerMeta: meta}
	for i, win := range wins {
		v, err := renderValue(st, win.Value)
		if err != nil {
			return nil, err
		}
		ans.Windows[i] = windowValue{Start: win.Start, End: win.End, Value: v}
	}
	return ans, nil
}

// pathStore returns the store the request's path names, and its
// still-escaped key under keys/ or windows/, having answered 400 or 404
// when the path names none or a store of the other kind (storeKind).
func (s *Server) pathStore(w *statusWriter, windows bool) (ServedStore, string, bool) {
	name, escapedKey, err := parseStorePath(w.path)
	if err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return ServedStore{}, "", false
	}
	st, ok := s.store(w, name)
	if !ok || !s.storeKind(w, st, windows) {
		return ServedStore{}, "", false
	}
	return st, escapedKey, true
}

// storeKind refuses (400) a window read of a key-value store and a key
// read of a window store, and reports whether st may be read so.
func (s *Server) storeKind(w *statusWriter, st ServedStore, windows bool) bool {
	switch {
	case windows && !st.Windowed:
		s.fail(w, http.StatusBadRequest, fmt.Sprintf("store %s is not windowed: read it at /v1/stores/%s/keys/{key} or /v1/stores/%s/scan", st.Name, st.Name, st.Name))
		return false
	case !windows && st.Windowed:
		kind := "a window store"
		if st.Join {
			kind = "a stream-stream join's store"
		}
		s.fail(w, http.StatusBadRequest, fmt.Sprintf("store %s is %s: read it at /v1/stores/%s/windows/{key} or /v1/stores/%s/windows", st.Name, kind, st.Name, st.Name))
		return false
	}
	return true
}

// parseTimeRange parses time_from and time_to: epoch ms, 0 and
// math.MaxInt64 when absent, time_from not after time_to.
func parseTimeRange(q map[string]string) (from, to int64, err error) {
	from, to = 0, math.MaxInt64
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"time_from", &from}, {"time_to", &to}} {
		v, ok := q[p.name]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, fmt.Errorf("%s %s: want epoch milliseconds, 0 or more", p.name, strconv.Quote(truncate(v)))
		}
		*p.dst = n
	}
	if from > to {
		return 0, 0, fmt.Errorf("time_from %d is after time_to %d", from, to)
	}
	return from, to, nil
}

// parseWindowsRequest parses a key's windows request: a key lookup's
// parameters and the time range.
func parseWindowsRequest(store, escapedKey, rawQuery string, maxKey int) (keyRequest, error) {
	q, err := parseQuery(rawQuery, append(slices.Clone(keyParams), "time_from", "time_to")...)
	if err != nil {
		return keyRequest{}, err
	}
	from, to, err := parseTimeRange(q)
	if err != nil {
		return keyRequest{}, err
	}
	req, err := parseKeyQuery(store, escapedKey, q, maxKey)
	req.windows, req.timeFrom, req.timeTo = true, from, to
	return req, err
}

// parseAllWindowsRequest parses a request for every key's windows: the
// time range and a scan's paging and read parameters.
func parseAllWindowsRequest(store, rawQuery string, maxLimit int) (scanRequest, error) {
	req := scanRequest{store: store, limit: min(defaultScanLimit, maxLimit), maxLag: -1, windows: true}
	q, err := parseQuery(rawQuery, "time_from", "time_to", "limit", "cursor", "key_encoding", "max_lag", "tasks", "isolation")
	if err != nil {
		return req, err
	}
	if req.timeFrom, req.timeTo, err = parseTimeRange(q); err != nil {
		return req, err
	}
	if req.base64, req.maxLag, req.isolation, err = parseReadOptions(q); err != nil {
		return req, err
	}
	if err := req.parsePaging(q, maxLimit); err != nil {
		return req, err
	}
	if _, _, _, ok := splitWindowKey(req.after); req.hasAfter && !ok {
		return req, fmt.Errorf("invalid cursor %s: pass next_cursor from a previous page unchanged", strconv.Quote(truncate(q["cursor"])))
	}
	return req, nil
}

// readWindows reads req's key's windows from rep.
func readWindows(rep ReplicaView, req *keyRequest) ([]StoredWindow, int64, error) {
	wv, ok := rep.(WindowView)
	if !ok {
		return nil, 0, fmt.Errorf("store %s: the replica reads no windows", req.store)
	}
	return wv.Windows(req.key, req.timeFrom, req.timeTo, req.isolation)
}

// allWindows answers GET /v1/stores/{store}/windows: every key's windows
// in the time range, of every task (or those in tasks=), a page at a
// time, by start, then end, then key. Tasks are read and merged as a scan
// reads them (page), and a page continues strictly after the previous
// page's last window.
func (s *Server) allWindows(w *statusWriter, r *http.Request, o origin) {
	st, _, ok := s.pathStore(w, true)
	if !ok {
		return
	}
	name := st.Name
	req, err := parseAllWindowsRequest(name, r.URL.RawQuery, s.opts.MaxScanLimit)
	if err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	req.isolationGiven = req.isolation != ""
	if req.isolation, ok = s.isolation(w, req.isolation); !ok {
		return
	}
	write := s.writeWindowsPage
	if st.Join {
		req.join, write = true, s.writeJoinPage
	}
	s.page(w, r, o, st, &req, pager{local: s.windowsLocal, peer: s.windowsPeer, write: write})
}

// windowKey is a window's raw key in a page: its start and end (sign bit
// flipped, big-endian) and its key, so that byte order is the page's
// order.
func windowKey(start, end int64, key []byte) []byte {
	b := make([]byte, 16, 16+len(key))
	binary.BigEndian.PutUint64(b, uint64(start)^1<<63)
	binary.BigEndian.PutUint64(b[8:], uint64(end)^1<<63)
	return append(b, key...)
}

func splitWindowKey(b []byte) (start, end int64, key []byte, ok bool) {
	if len(b) < 16 {
		return 0, 0, nil, false
	}
	return int64(binary.BigEndian.Uint64(b) ^ 1<<63), int64(binary.BigEndian.Uint64(b[8:]) ^ 1<<63), b[16:], true
}

// windowsLocal reads up to req.limit windows of tasks from local replicas,
// in page order, and whether more remain.
func (s *Server) windowsLocal(st ServedStore, req *scanRequest, tasks []int32) ([]scanItem, bool, failures) {
	self := s.rt.Self()
	var (
		items, merged, page []scanItem
		fails               failures
	)
	keep := req.limit + 1 // one more than a page says whether more remain
	for _, t := range tasks {
		rep, f := s.pageReplica(st, req, t)
		if f != nil {
			fails = append(fails, *f)
			continue
		}
		wv, ok := rep.(WindowView)
		var wins []StoredWindow
		var err error
		if !ok {
			err = fmt.Errorf("store %s: the replica reads no windows", req.store)
		} else {
			wins, _, err = wv.AllWindows(req.timeFrom, req.timeTo, req.isolation)
		}
		if err != nil {
			if s.logs.first(fmt.Sprintf("read\x00%s\x00%d", req.store, t), repeatLogEvery) {
				s.log.Warn("window read of a local replica failed", "store", req.store, "task", t, "err", err)
			}
			fails = append(fails, taskFailure(t, http.StatusServiceUnavailable, fmt.Sprintf("%s: reading task %d failed (details in its log)", self, t)))
			continue
		}
		page = page[:0]
		for _, win := range wins {
			raw := storedItemKey(st, win)
			if req.hasAfter && bytes.Compare(raw, req.after) <= 0 {
				continue
			}
			page = append(page, scanItem{Task: t, raw: raw, rawValue: win.Value, local: true})
		}
		slices.SortFunc(page, func(a, b scanItem) int { return bytes.Compare(a.raw, b.raw) })
		items, merged = mergeItems(merged[:0], items, page, keep), items
	}
	more := len(items) > req.limit
	if more {
		items = items[:req.limit]
	}
	return items, more, fails
}

// windowsPeer asks member for tasks' page of windows (askPeer), continuing
// after the page's last window in a cursor.
func (s *Server) windowsPeer(r *http.Request, p *balancer.Placement, member int, req *scanRequest, tasks []int32, c candidate) ([]scanItem, bool, *failure) {
	q := req.peerQuery(tasks)
	q.Set("time_from", strconv.FormatInt(req.timeFrom, 10))
	q.Set("time_to", strconv.FormatInt(req.timeTo, 10))
	if req.hasAfter {
		fwd := scanRequest{store: req.store, tasks: tasks, windows: true, join: req.join, timeFrom: req.timeFrom, timeTo: req.timeTo}
		q.Set("cursor", encodeCursor(fwd.identity(), req.after))
	}
	path := "/v1/stores/" + url.PathEscape(req.store) + "/windows"
	if req.join {
		var ans joinRecordsPage
		if f := s.askPeer(r, p, member, c, routeWindowsScan, path, q, &ans); f != nil {
			return nil, false, f
		}
		items, f := s.peerJoinItems(ans.Records, c, p.Members[member].ProcessID, tasks)
		return items, ans.NextCursor != "", f
	}
	var ans windowsPage
	if f := s.askPeer(r, p, member, c, routeWindowsScan, path, q, &ans); f != nil {
		return nil, false, f
	}
	items := make([]scanItem, len(ans.Windows))
	for i, win := range ans.Windows {
		key, f := peerItem(c, p.Members[member].ProcessID, tasks, win.Key, win.Task)
		if f != nil {
			return nil, false, f
		}
		items[i] = scanItem{Task: win.Task, raw: windowKey(win.Start, win.End, key), Value: win.Value}
	}
	return items, ans.NextCursor != "", nil
}

// writeWindowsPage renders a page of windows and answers it.
func (s *Server) writeWindowsPage(w *statusWriter, st ServedStore, ans *scanAnswer, b64 bool) {
	page := windowsPage{Windows: make([]windowItem, len(ans.Items)), NextCursor: ans.NextCursor, Generation: ans.Generation, ServedBy: ans.ServedBy}
	for i, it := range ans.Items {
		start, end, key, _ := splitWindowKey(it.raw)
		win := windowItem{Start: start, End: end, Value: it.Value, Task: it.Task}
		if it.local {
			v, err := renderValue(st, it.rawValue)
			if err != nil {
				s.fail(w, http.StatusInternalServerError, fmt.Sprintf("window of key %q in store %s does not decode with the store's codec: %v", truncate(string(key)), st.Name, err))
				return
			}
			win.Value = v
		}
		if k, text := renderKey(key, b64); text || b64 {
			win.Key = &k
		} else {
			win.KeyBase64URL = k
		}
		page.Windows[i] = win
	}
	writeJSON(w, http.StatusOK, page)
}
