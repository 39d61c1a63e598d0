package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// keyAnswer is the 200 body of a key lookup.
type keyAnswer struct {
	// Key is the key as the request gave it (base64url under
	// key_encoding=base64url); KeyBase64URL replaces it for a key that is
	// not valid UTF-8 without that encoding.
	Key          string          `json:"key,omitempty"`
	KeyBase64URL string          `json:"key_base64url,omitempty"`
	Value        json.RawMessage `json:"value"`
	answerMeta
}

// answerMeta is what a key lookup's answer says of the replica that
// answered it.
type answerMeta struct {
	Task       int32       `json:"task"`
	ServedBy   string      `json:"served_by"`
	Role       ReplicaRole `json:"role"`
	Lag        int64       `json:"lag"`
	Position   int64       `json:"position"`
	Generation int32       `json:"generation"`
}

// failure is why one candidate replica could not answer, in words a
// client may see (never a URL or a raw error: those are logged).
type failure struct {
	code int // 409; 503 (retry may help); 500 and 502 (it won't)
	msg  string
	task int32 // the task, where a failure concerns one of several
}

func taskFailure(task int32, code int, msg string) failure {
	return failure{code: code, msg: msg, task: task}
}

// failures accumulates the candidates' failures into the final answer: a
// request that can never succeed (400) first, then a replica behind
// min_position (409), then one that may answer later (503).
type failures []failure

func (fs failures) answer() (int, string) {
	code := http.StatusBadGateway
	msgs := make([]string, len(fs))
	for i, f := range fs {
		msgs[i] = f.msg
		switch {
		case f.code == http.StatusBadRequest:
			code = http.StatusBadRequest
		case code == http.StatusBadRequest:
		case f.code == http.StatusConflict:
			code = http.StatusConflict
		case f.code == http.StatusServiceUnavailable && code != http.StatusConflict:
			code = http.StatusServiceUnavailable
		case f.code == http.StatusInternalServerError && code == http.StatusBadGateway:
			code = http.StatusInternalServerError
		}
	}
	return code, strings.Join(msgs, "; ")
}

// candidate is an instance that may answer for a task.
type candidate struct {
	member int // index in Placement.Members
	self   bool
	role   ReplicaRole // its role in the placement: active or standby
}

// candidates returns who may answer for task, in order of preference: the
// active when it is this instance; this instance's standby (only if
// standbys may answer); the active elsewhere; the other standbys. A key
// lookup then moves peers that recently failed to the end (order,
// route.go).
func candidates(p *balancer.Placement, self int, task int32, standbys bool) []candidate {
	r := p.Tasks[task]
	out := make([]candidate, 0, 2+len(r.Standbys))
	if r.Active != balancer.NoMember && r.Active == self {
		out = append(out, candidate{member: self, self: true, role: RoleActive})
	}
	if standbys && self != balancer.NoMember && slices.Contains(r.Standbys, self) {
		out = append(out, candidate{member: self, self: true, role: RoleStandby})
	}
	if r.Active != balancer.NoMember && r.Active != self {
		out = append(out, candidate{member: r.Active, role: RoleActive})
	}
	if standbys {
		for _, m := range r.Standbys {
			if m != self {
				out = append(out, candidate{member: m, role: RoleStandby})
			}
		}
	}
	return out
}

// key answers GET /v1/stores/{store}/keys/{key}. A request that arrived as
// a hop is answered from the local replica only. A global store's key is
// read locally, whoever asks.
func (s *Server) key(w *statusWriter, r *http.Request, o origin) {
	s.lookup(w, r, o, false)
}

// lookup answers a key lookup, or with windows a key's windows (GET
// /v1/stores/{store}/windows/{key}, windows.go): both are routed to the
// key's task alike.
func (s *Server) lookup(w *statusWriter, r *http.Request, o origin, windows bool) {
	st, escapedKey, ok := s.pathStore(w, windows)
	if !ok {
		return
	}
	name := st.Name
	var err error
	var req keyRequest
	if windows {
		req, err = parseWindowsRequest(name, escapedKey, r.URL.RawQuery, s.opts.MaxKeyBytes)
	} else {
		req, err = parseKeyRequest(name, escapedKey, r.URL.RawQuery, s.opts.MaxKeyBytes)
	}
	if err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.isolation, ok = s.isolation(w, req.isolation); !ok {
		return
	}
	if st.Global {
		gen := int32(-1)
		if p := s.rt.Placement(); p != nil {
			gen = p.Generation
		}
		if f := s.answerLocal(w, st, &req, GlobalTask, gen); f != nil {
			s.failure(w, *f)
		}
		return
	}
	p, ok := s.placement(w)
	if !ok {
		return
	}
	task := s.opts.Partitioner.Partition(req.key, int32(len(p.Tasks)))
	self := p.MemberIndex(s.rt.Self())

	if o.hop {
		// One hop only: answer from the local replica or refuse.
		if f := s.answerLocal(w, st, &req, task, p.Generation); f != nil {
			s.failure(w, *f)
		}
		return
	}

	cands := candidates(p, self, task, req.maxLag >= 0)
	if len(cands) == 0 {
		msg := fmt.Sprintf("store %s task %d has no active instance at generation %d (it is moving between instances)", req.store, task, p.Generation)
		if req.maxLag < 0 {
			msg += "; pass max_lag to let a standby answer"
		} else {
			msg += " and no standby"
		}
		s.fail(w, http.StatusServiceUnavailable, msg)
		return
	}
	s.ask(w, r, st, &req, task, p, cands)
}

// ask answers from the first of cands (in preference order) that can: the
// local ones first, then the remote ones, each recently failed peer last
// (route.go), a slow remote attempt hedged with the next. It answers with
// the candidates' failures when none could.
func (s *Server) ask(w *statusWriter, r *http.Request, st ServedStore, req *keyRequest, task int32, p *balancer.Placement, cands []candidate) {
	now := time.Now()
	cands = order(cands, func(m int) bool {
		return s.health.failedSince(p.Members[m].ProcessID, now, s.opts.PeerFailureMemory)
	})
	type outcome struct {
		i   int // the attempt's position in cands
		a   peerAnswer
		err error
	}
	type failed struct {
		i int // the candidate's position in cands
		f failure
	}
	var (
		fs      []failed
		results = make(chan outcome, len(cands))
		cancels = map[int]context.CancelFunc{} // the attempts still running
		next    = 0
	)
	// Attempts outlive the request only as adopted probes (below); each is
	// bounded by ForwardTimeout, and reads only these copies.
	base := context.WithoutCancel(r.Context())
	path, query := w.path, r.URL.RawQuery
	launch := func() {
		i, c := next, cands[next]
		next++
		m := p.Members[c.member]
		ctx, cancel := context.WithCancel(base)
		cancels[i] = cancel
		go func() {
			defer cancel()
			a, err := s.forward(ctx, req.route(), m, p.Generation, path, query, s.opts.ForwardTimeout)
			s.notePeer(ctx, m.ProcessID, err)
			results <- outcome{i: i, a: a, err: err}
		}()
	}
	// abandon ends the running attempts once the lookup has its answer: one
	// per peer may finish, so that the memory learns whether it answers.
	abandon := func() {
		for i, cancel := range cancels {
			if !s.health.adopt(p.Members[cands[i].member].ProcessID) {
				cancel()
			}
		}
	}
	for next < len(cands) || len(cancels) > 0 {
		if len(cancels) == 0 {
			c := cands[next]
			if !c.self {
				launch()
				continue
			}
			next++
			if f := s.answerLocal(w, st, req, task, p.Generation); f != nil {
				fs = append(fs, failed{next - 1, *f})
				continue
			}
			return
		}
		// Candidates are local first, remote after (candidates, order):
		// once one remote attempt runs, every later candidate is remote.
		var (
			hedge <-chan time.Time
			timer *time.Timer
		)
		if hedges(cands, next-1) {
			timer = time.NewTimer(s.opts.HedgeAfter)
			hedge = timer.C
		}
		var o outcome
		select {
		case o = <-results:
		case <-hedge:
			launch()
			continue
		case <-r.Context().Done(): // the client is gone
			for _, cancel := range cancels {
				cancel()
			}
			return
		}
		if timer != nil {
			timer.Stop()
		}
		delete(cancels, o.i)
		c := cands[o.i]
		if o.err == nil {
			switch o.a.code {
			case http.StatusOK, http.StatusNotFound, http.StatusBadRequest:
				abandon()
				writeRaw(w, o.a.code, o.a.body)
				return
			}
			fs = append(fs, failed{o.i, peerFailure(c, p.Members[c.member].ProcessID, o.a)})
		} else {
			fs = append(fs, failed{o.i, forwardFailure(c, o.err)})
		}
		// A failed attempt while another still runs: the next candidate
		// now, as if the failed one had been the last asked.
		if len(cancels) > 0 && next < len(cands) {
			launch()
		}
	}
	// The failures in preference order, whatever order they came in.
	slices.SortStableFunc(fs, func(a, b failed) int { return a.i - b.i })
	byCand := make(failures, len(fs))
	for j, f := range fs {
		byCand[j] = f.f
	}
	code, msg := byCand.answer()
	s.failure(w, failure{code: code, msg: fmt.Sprintf("store %s task %d: %s", req.store, task, msg)})
}

// notePeer records in the peer memory what a forward to id found: no
// answer (timeout, unreachable) or an answer; nothing when the lookup
// cancelled it, or when it was never attempted.
func (s *Server) notePeer(ctx context.Context, id string, err error) {
	var fe *forwardError
	switch {
	case err == nil:
		s.health.noteAnswer(id)
	case ctx.Err() != nil:
	case errors.As(err, &fe) && (fe.kind == forwardTimeout || fe.kind == forwardUnreachable):
		s.health.noteFailure(id, time.Now())
	case errors.As(err, &fe) && (fe.kind == forwardBusy || fe.kind == forwardNoEndpoint):
	default:
		s.health.noteAnswer(id) // it answered, if not well: it is there
	}
}

// failure answers f, with the code that says what it is.
func (s *Server) failure(w *statusWriter, f failure) {
	c := ""
	if f.code == http.StatusConflict {
		c = codeBehindMinimum
	}
	s.failCode(w, f.code, c, f.msg)
}

// answerLocal answers from the local replica (200 or 404), or returns why
// it may not, having written nothing.
func (s *Server) answerLocal(w *statusWriter, st ServedStore, req *keyRequest, task, gen int32) *failure {
	ans, found, f := s.readLocal(st, req, task, gen)
	switch {
	case f != nil:
		return f
	case !found:
		s.failCode(w, http.StatusNotFound, codeKeyNotFound, notFoundMsg(req, task))
	default:
		writeJSON(w, http.StatusOK, ans)
	}
	return nil
}

func notFoundMsg(req *keyRequest, task int32) string {
	k, _ := renderKey(req.key, req.base64)
	return fmt.Sprintf("key %q not found in store %s (task %d)", truncate(k), req.store, task)
}

// readLocal reads key from this instance's replica of task, if that
// replica may answer: an active one, or a standby within max_lag.
func (s *Server) readLocal(st ServedStore, req *keyRequest, task int32, gen int32) (any, bool, *failure) {
	self := s.rt.Self()
	rep := s.replica(st, task)
	if rep == nil {
		msg := fmt.Sprintf("%s holds no replica of task %d (placement generation %d)", self, task, gen)
		if st.Global {
			msg = fmt.Sprintf("%s holds no copy of global store %s", self, st.Name)
		}
		return nil, false, &failure{code: http.StatusServiceUnavailable, msg: msg}
	}
	stat := rep.Status()
	if f := qualifies(self, stat, req.maxLag); f != nil {
		return nil, false, f
	}
	var (
		value []byte
		wins  []StoredWindow
		found bool
		pos   int64
		err   error
	)
	if req.windows {
		wins, pos, err = readWindows(rep, req)
		found = true // no window is an empty list
	} else {
		value, found, pos, err = rep.Get(req.key, req.isolation)
	}
	if err != nil {
		if s.logs.first(fmt.Sprintf("read\x00%s\x00%d", req.store, task), repeatLogEvery) {
			s.log.Warn("read from a local replica failed", "store", req.store, "task", task, "err", err)
		}
		return nil, false, &failure{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("%s: reading task %d failed (details in its log)", self, task)}
	}
	if req.minPosition >= 0 && pos < req.minPosition {
		return nil, false, &failure{code: http.StatusConflict,
			msg: fmt.Sprintf("%s (%s) is at position %d, behind min_position %d", self, stat.Role, pos, req.minPosition)}
	}
	if !found {
		return nil, false, nil
	}
	meta := answerMeta{Task: task, ServedBy: self, Role: stat.Role, Position: pos, Generation: gen}
	if stat.Role == RoleStandby {
		meta.Lag = stat.Lag
	}
	key, keyB64 := "", ""
	if k, text := renderKey(req.key, req.base64); text || req.base64 {
		key = k
	} else {
		keyB64 = k
	}
	if req.windows {
		ans, err := keyWindowsAnswer(st, key, keyB64, wins, meta)
		if err != nil {
			return nil, false, undecodable(req, err)
		}
		return ans, true, nil
	}
	ans := &keyAnswer{Key: key, KeyBase64URL: keyB64, answerMeta: meta}
	if ans.Value, err = renderValue(st, value); err != nil {
		return nil, false, undecodable(req, err)
	}
	return ans, true, nil
}

func undecodable(req *keyRequest, err error) *failure {
	return &failure{code: http.StatusInternalServerError,
		msg: fmt.Sprintf("value of key %q in store %s does not decode with the store's codec: %v", truncate(string(req.key)), req.store, err)}
}

// replica returns the local replica of st that answers for task: for a
// global store, its one local copy.
func (s *Server) replica(st ServedStore, task int32) ReplicaView {
	if st.Global {
		return s.rt.Global(st.Name)
	}
	return s.rt.Replica(st.Name, task)
}

// qualifies says why a replica in this status may not answer a read that
// allows maxLag (-1: actives only), or nil if it may.
func qualifies(self string, stat ReplicaStatus, maxLag int64) *failure {
	switch stat.Role {
	case RoleActive:
		return nil
	case RoleStandby:
		switch {
		case maxLag < 0:
			return &failure{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("%s is a standby of task %d and max_lag is not set", self, stat.Task)}
		case stat.Lag < 0:
			return &failure{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("%s is a standby of task %d whose lag is not known yet", self, stat.Task)}
		case stat.Lag > maxLag:
			return &failure{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("%s is a standby of task %d with lag %d > max_lag %d", self, stat.Task, stat.Lag, maxLag)}
		}
		return nil
	}
	msg := fmt.Sprintf("%s's replica of task %d is %s", self, stat.Task, stat.Role)
	if stat.Reason != "" {
		msg += ": " + stat.Reason
	}
	return &failure{code: http.StatusServiceUnavailable, msg: msg}
}

// renderValue renders a stored value through the store's codec.
func renderValue(st ServedStore, value []byte) (json.RawMessage, error) {
	if st.Render == nil {
		return json.Marshal(value)
	}
	v, err := st.Render(value)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// forwardFailure is a candidate that got no answer: 503, as if no replica
// were reachable, but for a certificate that is not trusted (502:
// retrying won't help).
func forwardFailure(c candidate, err error) failure {
	fe, ok := err.(*forwardError)
	if !ok { // not produced by forward: no detail is safe to show
		return failure{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("%s could not be asked", c.role)}
	}
	f := failure{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("%s %s", c.role, fe.words())}
	if fe.kind == forwardUntrusted {
		f.code = http.StatusBadGateway
	}
	return f
}

// peerFailure is a candidate's answer that is not one to relay. Only the
// message of an answer in our error shape is shown; any other body is not.
func peerFailure(c candidate, id string, a peerAnswer) failure {
	var body errorBody
	msg := fmt.Sprintf("%s %s answered %d", c.role, id, a.code)
	if json.Unmarshal(a.body, &body) == nil && body.Error != "" {
		msg += ": " + truncate(body.Error)
	}
	f := failure{code: http.StatusServiceUnavailable, msg: msg}
	switch a.code {
	case http.StatusConflict, http.StatusInternalServerError:
		f.code = a.code
	case http.StatusBadRequest, http.StatusRequestURITooLong, http.StatusRequestHeaderFieldsTooLarge:
		// The peer refuses the request as it is: asking again cannot help.
		f.code = http.StatusBadRequest
	case http.StatusUnauthorized:
		f.code = http.StatusBadGateway
		if body.Code != codeHopSignature && body.Code != codeHopExpired {
			// It wants a token this instance does not have.
			f.msg += " (the instances' http.auth.token differ)"
		}
	}
	return f
}
