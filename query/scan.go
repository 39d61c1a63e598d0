package query

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// scanItem is one key of a scan page.
type scanItem struct {
	// Key is the key as text (base64url under key_encoding=base64url);
	// KeyBase64URL replaces it for a key that is not valid UTF-8.
	Key          *string         `json:"key,omitempty"`
	KeyBase64URL string          `json:"key_base64url,omitempty"`
	Value        json.RawMessage `json:"value"`
	Task         int32           `json:"task"`
	raw          []byte
	// rawValue is a local item's stored value, rendered (into Value) only
	// once the item has made it onto the page.
	rawValue []byte
	local    bool
}

// scanAnswer is the 200 body of a scan.
type scanAnswer struct {
	Items []scanItem `json:"items"`
	// NextCursor continues the scan after the last item; absent on the
	// last page.
	NextCursor string `json:"next_cursor,omitempty"`
	Generation int32  `json:"generation"`
	// ServedBy maps each instance that answered to its tasks.
	ServedBy map[string][]int32 `json:"served_by"`
}

// forwardedMaxKey bounds keys in scans forwarded between instances: their
// bounds derive from stored keys, which no request limit constrains.
const forwardedMaxKey = 1 << 20

// scan answers GET /v1/stores/{store}/scan: the keys of every task (or of
// those in tasks=) in key order, a page at a time. Each task is read from its
// active (or, with max_lag, a standby, a local one first); the instances'
// pages are merged. A key lives in one task, and a page continues strictly
// after the previous page's last key, so every key is returned once across
// pages. A request that arrived as a hop is answered from local replicas
// only; an authenticated one may carry keys as long as stored ones. A
// global store is scanned locally, whoever asks.
func (s *Server) scan(w *statusWriter, r *http.Request, o origin) {
	st, _, ok := s.pathStore(w, false)
	if !ok {
		return
	}
	name := st.Name
	maxKey := s.opts.MaxKeyBytes
	if o.peer {
		maxKey = forwardedMaxKey
	}
	req, err := parseScanRequest(name, r.URL.RawQuery, maxKey, s.opts.MaxScanLimit)
	if err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	req.isolationGiven = req.isolation != ""
	if req.isolation, ok = s.isolation(w, req.isolation); !ok {
		return
	}
	if st.Global {
		s.scanGlobal(w, st, &req)
		return
	}
	s.page(w, r, o, st, &req, pager{local: s.scanLocal, peer: s.scanPeer, write: s.writePage})
}

// pager is how a paged read (a scan, every key's windows) reads tasks'
// items, locally and from a peer, and writes its page. Items are ordered
// by their raw key, which a cursor continues after.
type pager struct {
	local func(st ServedStore, req *scanRequest, tasks []int32) ([]scanItem, bool, failures)
	peer  func(r *http.Request, p *balancer.Placement, member int, req *scanRequest, tasks []int32, c candidate) ([]scanItem, bool, *failure)
	write func(w *statusWriter, st ServedStore, ans *scanAnswer, b64 bool)
}

// page answers a paged read of a partitioned store: every task (or those
// in tasks=) read from its best candidate, merged in raw key order.
func (s *Server) page(w *statusWriter, r *http.Request, o origin, st ServedStore, req *scanRequest, pg pager) {
	p, ok := s.placement(w)
	if !ok {
		return
	}
	tasks := req.tasks
	if tasks == nil {
		tasks = make([]int32, len(p.Tasks))
		for i := range tasks {
			tasks[i] = int32(i)
		}
	} else if last := tasks[len(tasks)-1]; int(last) >= len(p.Tasks) {
		s.fail(w, http.StatusBadRequest, fmt.Sprintf("tasks: task %d does not exist (tasks are 0 to %d)", last, len(p.Tasks)-1))
		return
	}
	ans := &scanAnswer{Items: []scanItem{}, Generation: p.Generation, ServedBy: map[string][]int32{}}
	if req.endEmpty {
		writeJSON(w, http.StatusOK, ans)
		return
	}

	if o.hop {
		items, more, fails := pg.local(st, req, tasks)
		if len(fails) > 0 {
			code, msg := fails.answer()
			s.failure(w, failure{code: code, msg: fmt.Sprintf("store %s: %s", req.store, msg)})
			return
		}
		if items != nil { // else [] from above, never null
			ans.Items = items
		}
		if more {
			ans.NextCursor = encodeCursor(req.identity(), items[len(items)-1].raw)
		}
		ans.ServedBy[s.rt.Self()] = tasks
		pg.write(w, st, ans, req.base64)
		return
	}

	items, more, servedBy, fs := s.gather(r, p, req, st, tasks, pg)
	if fs != nil {
		code, msg := fs.answer()
		s.failure(w, failure{code: code, msg: fmt.Sprintf("store %s: %s", req.store, msg)})
		return
	}
	slices.SortFunc(items, func(a, b scanItem) int { return bytes.Compare(a.raw, b.raw) })
	if len(items) > req.limit {
		items, more = items[:req.limit], true
	}
	ans.ServedBy = servedBy
	if items != nil { // else [] from above, never null
		ans.Items = items
	}
	if more && len(items) > 0 {
		ans.NextCursor = encodeCursor(req.identity(), items[len(items)-1].raw)
	}
	pg.write(w, st, ans, req.base64)
}

// scanGlobal answers a scan of a global store from its local copy.
func (s *Server) scanGlobal(w *statusWriter, st ServedStore, req *scanRequest) {
	if req.tasks != nil {
		s.fail(w, http.StatusBadRequest, fmt.Sprintf("tasks: store %s is global (every instance holds all of it): it has no tasks", st.Name))
		return
	}
	gen := int32(-1)
	if p := s.rt.Placement(); p != nil {
		gen = p.Generation
	}
	ans := &scanAnswer{Items: []scanItem{}, Generation: gen, ServedBy: map[string][]int32{}}
	if !req.endEmpty {
		items, more, fails := s.scanLocal(st, req, []int32{GlobalTask})
		if len(fails) > 0 {
			code, msg := fails.answer()
			s.failure(w, failure{code: code, msg: fmt.Sprintf("store %s: %s", req.store, msg)})
			return
		}
		if items != nil {
			ans.Items = items
		}
		if more {
			ans.NextCursor = encodeCursor(req.identity(), items[len(items)-1].raw)
		}
	}
	ans.ServedBy[s.rt.Self()] = []int32{GlobalTask}
	s.writePage(w, st, ans, req.base64)
}

// writePage renders the page's local values and keys and answers it.
func (s *Server) writePage(w *statusWriter, st ServedStore, ans *scanAnswer, b64 bool) {
	for i := range ans.Items {
		it := &ans.Items[i]
		if !it.local {
			continue
		}
		v, err := renderValue(st, it.rawValue)
		if err != nil {
			s.fail(w, http.StatusInternalServerError, fmt.Sprintf("value of key %q in store %s does not decode with the store's codec: %v", truncate(string(it.raw)), st.Name, err))
			return
		}
		it.Value = v
	}
	s.renderItems(ans.Items, b64)
	writeJSON(w, http.StatusOK, ans)
}

// gather reads every task's page from its best candidate, moving a task to
// its next candidate when one fails, and returns the items unsorted.
func (s *Server) gather(r *http.Request, p *balancer.Placement, req *scanRequest, st ServedStore, tasks []int32, pg pager) (items []scanItem, more bool, servedBy map[string][]int32, fs failures) {
	self := p.MemberIndex(s.rt.Self())
	type state struct {
		cands []candidate
		next  int
		fails failures
	}
	states := make(map[int32]*state, len(tasks))
	for _, t := range tasks {
		states[t] = &state{cands: candidates(p, self, t, req.maxLag >= 0)}
	}
	servedBy = map[string][]int32{}
	pending := tasks
	for len(pending) > 0 {
		groups := map[int][]int32{} // member -> tasks
		for _, t := range pending {
			ts := states[t]
			if ts.next >= len(ts.cands) {
				if len(ts.cands) == 0 {
					ts.fails = append(ts.fails, failure{code: http.StatusServiceUnavailable,
						msg: fmt.Sprintf("task %d has no active instance at generation %d (it is moving between instances)", t, p.Generation)})
				}
				code, msg := ts.fails.answer()
				return nil, false, nil, failures{{code: code, msg: fmt.Sprintf("task %d: %s", t, msg)}}
			}
			m := ts.cands[ts.next].member
			groups[m] = append(groups[m], t)
		}
		type result struct {
			member int
			tasks  []int32
			items  []scanItem
			more   bool
			failed map[int32]failure
		}
		results := make(chan result, len(groups))
		var wg sync.WaitGroup
		for m, ts := range groups {
			wg.Go(func() {
				res := result{member: m, tasks: ts, failed: map[int32]failure{}}
				if m == self {
					var fails failures
					res.items, res.more, fails = pg.local(st, req, ts)
					for _, f := range fails {
						res.failed[f.task] = f
					}
				} else {
					var f *failure
					res.items, res.more, f = pg.peer(r, p, m, req, ts, states[ts[0]].cands[states[ts[0]].next])
					if f != nil {
						for _, t := range ts {
							res.failed[t] = *f
						}
					}
				}
				results <- res
			})
		}
		wg.Wait()
		close(results)
		pending = nil
		for res := range results {
			id := p.Members[res.member].ProcessID
			for _, t := range res.tasks {
				if f, bad := res.failed[t]; bad {
					states[t].fails = append(states[t].fails, f)
					states[t].next++
					pending = append(pending, t)
				} else {
					servedBy[id] = append(servedBy[id], t)
				}
			}
			if len(res.failed) == 0 {
				items = append(items, res.items...)
				more = more || res.more
			} else if len(res.failed) < len(res.tasks) {
				// Keep the items of the tasks that answered.
				for _, it := range res.items {
					if _, bad := res.failed[it.Task]; !bad {
						items = append(items, it)
					}
				}
				// A task that answered may have more beyond its page; a
				// cursor at worst returns an empty page.
				more = more || res.more
			}
		}
		slices.Sort(pending)
	}
	for _, ts := range servedBy {
		slices.Sort(ts)
	}
	return items, more, servedBy, nil
}

// scanLocal reads up to req.limit items of tasks from local replicas, in
// key order, and whether more remain. A task whose replica may not answer
// is a failure (with its task).
func (s *Server) scanLocal(st ServedStore, req *scanRequest, tasks []int32) ([]scanItem, bool, failures) {
	self := s.rt.Self()
	var (
		items []scanItem
		fails failures
	)
	keep := req.limit + 1 // one more than a page says whether more remain
	var page, merged []scanItem
	for _, t := range tasks {
		rep, f := s.pageReplica(st, req, t)
		if f != nil {
			fails = append(fails, *f)
			continue
		}
		// Once keep items are held, only keys below the largest can enter.
		var bound []byte
		if len(items) >= keep {
			bound = items[len(items)-1].raw
		}
		page = page[:0]
		_, err := rep.Scan(req.start, req.end, req.isolation, func(k, v []byte) bool {
			if bound != nil && bytes.Compare(k, bound) >= 0 || len(page) >= keep {
				return false
			}
			kv := make([]byte, len(k)+len(v)) // one allocation per item
			copy(kv, k)
			copy(kv[len(k):], v)
			page = append(page, scanItem{Task: t, raw: kv[:len(k):len(k)], rawValue: kv[len(k):], local: true})
			return true
		})
		if err != nil {
			if s.logs.first(fmt.Sprintf("read\x00%s\x00%d", req.store, t), repeatLogEvery) {
				s.log.Warn("scan of a local replica failed", "store", req.store, "task", t, "err", err)
			}
			fails = append(fails, taskFailure(t, http.StatusServiceUnavailable, fmt.Sprintf("%s: scanning task %d failed (details in its log)", self, t)))
			continue
		}
		items, merged = mergeItems(merged[:0], items, page, keep), items
	}
	more := len(items) > req.limit
	if more {
		items = items[:req.limit]
	}
	return items, more, fails
}

// pageReplica returns the local replica that answers a paged read for
// task t, or the task's failure when none may.
func (s *Server) pageReplica(st ServedStore, req *scanRequest, t int32) (ReplicaView, *failure) {
	self := s.rt.Self()
	rep := s.replica(st, t)
	if rep == nil {
		f := taskFailure(t, http.StatusServiceUnavailable, fmt.Sprintf("%s holds no replica of task %d", self, t))
		return nil, &f
	}
	if f := qualifies(self, rep.Status(), req.maxLag); f != nil {
		tf := taskFailure(t, f.code, f.msg)
		return nil, &tf
	}
	return rep, nil
}

// mergeItems appends to dst the first keep items of a and b, both in key
// order, in key order.
func mergeItems(dst, a, b []scanItem, keep int) []scanItem {
	for len(dst) < keep && (len(a) > 0 || len(b) > 0) {
		if len(b) == 0 || len(a) > 0 && bytes.Compare(a[0].raw, b[0].raw) < 0 {
			dst, a = append(dst, a[0]), a[1:]
		} else {
			dst, b = append(dst, b[0]), b[1:]
		}
	}
	return dst
}

// scanPeer asks member for tasks' page over the effective range, keys in
// base64url so that any key survives the trip. The range travels as a peer
// accepts it from any client: from and to, which come from the client's
// bounds and so are within the key limit, and the page's last key in a
// cursor, which has no key limit because a stored key has none. A request
// that would not fit a peer's request line is a 400: it can never succeed.
func (s *Server) scanPeer(r *http.Request, p *balancer.Placement, member int, req *scanRequest, tasks []int32, c candidate) ([]scanItem, bool, *failure) {
	q := req.peerQuery(tasks)
	fwd := scanRequest{store: req.store, from: req.floor, hasFrom: req.floorSet, to: req.end, hasTo: req.end != nil, tasks: tasks}
	if fwd.hasFrom {
		q.Set("from", base64.RawURLEncoding.EncodeToString(fwd.from))
	}
	if fwd.hasTo {
		q.Set("to", base64.RawURLEncoding.EncodeToString(fwd.to))
	}
	if req.hasAfter {
		q.Set("cursor", encodeCursor(fwd.identity(), req.after))
	}
	var ans scanAnswer
	if f := s.askPeer(r, p, member, c, routeScan, "/v1/stores/"+url.PathEscape(req.store)+"/scan", q, &ans); f != nil {
		return nil, false, f
	}
	for i := range ans.Items {
		it := &ans.Items[i]
		var f *failure
		if it.raw, f = peerItem(c, p.Members[member].ProcessID, tasks, it.Key, it.Task); f != nil {
			return nil, false, f
		}
	}
	return ans.Items, ans.NextCursor != "", nil
}

// peerQuery is the query of a paged read forwarded for tasks, but for its
// range and cursor: keys in base64url, so that any key survives the trip,
// and the client's limit, max_lag and isolation.
func (r *scanRequest) peerQuery(tasks []int32) url.Values {
	q := url.Values{}
	q.Set("key_encoding", encodingBase64URL)
	q.Set("limit", strconv.Itoa(r.limit))
	if r.maxLag >= 0 {
		q.Set("max_lag", strconv.FormatInt(r.maxLag, 10))
	}
	if r.isolationGiven { // else the peer's default, the same as this one's
		q.Set("isolation", string(r.isolation))
	}
	q.Set("tasks", formatTasks(tasks))
	return q
}

// peerItem checks an item of a peer's page, of task, and decodes its
// base64url key.
func peerItem(c candidate, id string, tasks []int32, key *string, task int32) ([]byte, *failure) {
	if key == nil {
		return nil, &failure{code: http.StatusBadGateway, msg: fmt.Sprintf("%s %s answered an item without a key", c.role, id)}
	}
	raw, err := base64.RawURLEncoding.DecodeString(*key)
	if err != nil {
		return nil, &failure{code: http.StatusBadGateway, msg: fmt.Sprintf("%s %s answered a key that is not base64url", c.role, id)}
	}
	if !slices.Contains(tasks, task) {
		return nil, &failure{code: http.StatusBadGateway, msg: fmt.Sprintf("%s %s answered an item of task %d, not asked for", c.role, id, task)}
	}
	return raw, nil
}

// askPeer forwards a paged read to member (candidate c) and decodes its
// 200 answer into ans, or returns why it could not. A request that would
// not fit a peer's request line is a 400: it can never succeed.
func (s *Server) askPeer(r *http.Request, p *balancer.Placement, member int, c candidate, route, path string, q url.Values, ans any) *failure {
	m := p.Members[member]
	rawQuery := q.Encode()
	if n := len(path) + 1 + len(rawQuery); n > s.opts.MaxHeaderBytes {
		return &failure{code: http.StatusBadRequest, msg: fmt.Sprintf(
			"the %s is too long to forward to %s %s: its bounds and cursor make a request line of %d bytes, over the limit of %d",
			pageNoun(route), c.role, m.ProcessID, n, s.opts.MaxHeaderBytes)}
	}
	a, err := s.forward(r.Context(), route, m, p.Generation, path, rawQuery, s.opts.ForwardTimeout)
	if err != nil {
		f := forwardFailure(c, err)
		return &f
	}
	if a.code != http.StatusOK {
		f := peerFailure(c, m.ProcessID, a)
		return &f
	}
	if err := json.Unmarshal(a.body, ans); err != nil {
		s.log.Warn("a peer's page does not decode", "peer", m.ProcessID, "route", route, "err", err)
		return &failure{code: http.StatusBadGateway, msg: fmt.Sprintf("%s %s answered a %s page that does not decode", c.role, m.ProcessID, pageNoun(route))}
	}
	return nil
}

// pageNoun names a paged route's read in messages.
func pageNoun(route string) string {
	if route == routeWindowsScan {
		return "window read"
	}
	return "scan"
}

// renderItems sets each item's key for the client's key encoding.
func (s *Server) renderItems(items []scanItem, b64 bool) {
	for i := range items {
		k, text := renderKey(items[i].raw, b64)
		if text || b64 {
			items[i].Key, items[i].KeyBase64URL = &k, ""
		} else {
			items[i].Key, items[i].KeyBase64URL = nil, k
		}
	}
}
