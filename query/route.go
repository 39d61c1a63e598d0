package query

import (
	"sync"
	"time"
)

// Routing a key lookup around a peer that does not answer.
//
// A lookup asks its candidates (candidates, keys.go) in order of
// preference: the active first. When the active's instance is frozen or cut
// off the network, a forward to it gets no answer until ForwardTimeout; a
// client that passed max_lag, and so accepts a standby's answer, would
// wait that long on every read, and fail altogether if its own timeout is
// shorter, until the group notices the loss (the session timeout) and moves
// the task. Two things spare it:
//
//   - Hedging: a forward that has not answered within HedgeAfter while
//     another remote candidate remains does not hold the lookup up: the
//     next candidate is asked too, and the first answer to relay wins.
//     Only a lookup with max_lag has a remote candidate after the active
//     (the standbys), so reads of actives only are never doubled.
//   - Memory: a peer a forward could not reach, or that did not answer in
//     time, is remembered for PeerFailureMemory; lookups then ask it after
//     every other candidate (still asking it last, so that it is never
//     ruled out by a stale memory when it is all there is). Any answer from
//     it clears the memory.
//
// The order is a pure function (order); the memory (peerHealth) is the
// only state, and the loop that hedges is the I/O edge (keys.go).

// order returns cands with the remote candidates whose instances recently
// failed (failed(member) is true) moved behind the other remote ones, each
// group keeping its order. Local candidates stay first: they need no peer.
func order(cands []candidate, failed func(member int) bool) []candidate {
	out := make([]candidate, 0, len(cands))
	var late []candidate
	for _, c := range cands {
		if !c.self && failed != nil && failed(c.member) {
			late = append(late, c)
			continue
		}
		out = append(out, c)
	}
	return append(out, late...)
}

// hedges reports whether the remote attempt at position i of cands (in
// order) is hedged: whether a later remote candidate exists that may be
// asked when it is slow to answer.
func hedges(cands []candidate, i int) bool {
	for _, c := range cands[i+1:] {
		if !c.self {
			return true
		}
	}
	return false
}

// peerHealthMax bounds the peers remembered; past it the memory starts
// afresh, so that members coming and going for months cannot grow it.
const peerHealthMax = 4096

// peerHealth remembers, per peer (process id), when a forward to it last
// got no answer, and which peers have an abandoned forward still running
// (a hedged attempt that lost the race and is left to finish, so that the
// memory learns whether the peer answers at all; one per peer at most).
type peerHealth struct {
	mu      sync.Mutex           // guards failed and probing
	failed  map[string]time.Time // process id -> last forward without an answer
	probing map[string]bool      // process ids with an abandoned forward running
}

// failedSince reports whether id failed within memory before now.
func (h *peerHealth) failedSince(id string, now time.Time, memory time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	at, ok := h.failed[id]
	return ok && now.Sub(at) < memory
}

// noteFailure records that a forward to id got no answer at at.
func (h *peerHealth) noteFailure(id string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed == nil || len(h.failed) >= peerHealthMax {
		h.failed = make(map[string]time.Time)
	}
	h.failed[id] = at
	delete(h.probing, id)
}

// noteAnswer records that id answered (whatever the answer).
func (h *peerHealth) noteAnswer(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.failed, id)
	delete(h.probing, id)
}

// adopt reports whether an abandoned forward to id may keep running (no
// other is), and marks one as running; noteFailure or noteAnswer ends it.
func (h *peerHealth) adopt(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.probing[id] {
		return false
	}
	if h.probing == nil || len(h.probing) >= peerHealthMax {
		h.probing = make(map[string]bool)
	}
	h.probing[id] = true
	return true
}
