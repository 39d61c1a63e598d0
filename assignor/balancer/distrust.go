package balancer

import (
	"sync/atomic"

	"github.com/rackstream/rackstream/internal/endpoint"
	"github.com/rackstream/rackstream/internal/textsafe"
)

// A member's join metadata is untrusted input (docs/design.md §10): Kafka's ACLs
// decide who may join the group, not what a member may claim. This file
// holds the leader's rules for two claims it cannot verify but must not
// believe blindly, and the once-per-member warnings they raise.

// claimedLag turns a member's checkpoint claim for a task into its lag
// against the changelog end (both sums over the task's changelog
// partitions): end - checkpoint, and known. A checkpoint above the end is no
// lag of 0: no replica can have read records the log does not have, so the
// member's state comes from a log since truncated or recreated, or the claim
// is forged. Either way it must not win the task from a replica that is
// really caught up: the lag is unknown (known false), which the assignor
// ranks as not caught up.
func claimedLag(end, checkpoint int64) (lag int64, known bool) {
	if checkpoint > end {
		return 0, false
	}
	return end - checkpoint, true
}

// checkEndpoint returns the endpoint a member announced, or "" with the
// reason when it is not a plain host:port (internal/endpoint.Validate, the
// check the query server repeats before it dials). An empty endpoint
// (application.server unset) is valid and stays empty. A member with an
// invalid endpoint keeps its place in the plan; with no endpoint in the
// placement, nobody forwards a query, or the token, to it.
func checkEndpoint(announced string) (ep string, reason error) {
	if announced == "" {
		return "", nil
	}
	if err := endpoint.Validate(announced); err != nil {
		return "", err
	}
	return announced, nil
}

// maxLoggedBytes bounds a hostile value quoted in a log line.
const maxLoggedBytes = 64

// quoteForLog renders an untrusted value for a log line: every
// non-printable character escaped as %q would (no terminal escape sequence
// passes, whatever the log handler), cut to maxLoggedBytes of the value.
func quoteForLog(s string) string { return textsafe.Bounded(s, maxLoggedBytes) }

// Kinds of once-per-member warnings, besides rejections (Balancer.warned).
const (
	noteBeyondEnd   = "checkpoint beyond the changelog end"
	noteBadEndpoint = "invalid endpoint"
)

// noteOnce reports whether member id has not been warned about kind since
// it joined, records that it now has, and then counts it in counter.
func (b *Balancer) noteOnce(kind, id string, counter *atomic.Uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.noted[kind] == nil {
		b.noted[kind] = make(map[string]bool)
	}
	if b.noted[kind][id] {
		return false
	}
	b.noted[kind][id] = true
	counter.Add(1)
	return true
}

// forgetNotes drops the notes of members that left the group, so that one
// that comes back with the same fault is warned about again. b.mu must be
// held.
func (b *Balancer) forgetNotes(present map[string]*memberState) {
	for _, ids := range b.noted {
		for id := range ids {
			if _, ok := present[id]; !ok {
				delete(ids, id)
			}
		}
	}
}

// noteBadEndpoint warns once per member that its announced endpoint was
// dropped, and counts it.
func (b *Balancer) noteBadEndpoint(memberID, processID, announced string, reason error) {
	if !b.noteOnce(noteBadEndpoint, memberID, &b.badEndpoints) {
		return
	}
	b.log.Warn("member announced an endpoint that is not host:port; it keeps its tasks but no query is forwarded to it",
		"member_id", memberID, "process_id", quoteForLog(processID), "endpoint", quoteForLog(announced), "reason", reason.Error())
}

// noteBeyondEnd warns once per member that it claimed checkpoints beyond
// the changelog end for tasks, and counts it.
func (b *Balancer) noteBeyondEnd(memberID, processID string, tasks []int32) {
	if !b.noteOnce(noteBeyondEnd, memberID, &b.beyondEnd) {
		return
	}
	b.log.Warn("member claims store checkpoints beyond the changelog end; its lag on those tasks counts as unknown (not caught up)",
		"member_id", memberID, "process_id", quoteForLog(processID), "tasks", tasks)
}
