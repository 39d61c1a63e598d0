package query

import (
	"slices"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor/balancer"
)

func TestOrderMovesRecentlyFailedPeersBehindTheOthers(t *testing.T) {
	// Task 0: active on member 1, standbys on 0, 2 and 3; this instance is
	// member 5 (no replica) or 0.
	p := &balancer.Placement{Tasks: []balancer.Replicas{{Active: 1, Standbys: []int{0, 2, 3}}}}
	members := func(cs []candidate) []int {
		out := make([]int, len(cs))
		for i, c := range cs {
			out[i] = c.member
		}
		return out
	}
	failed := func(ms ...int) func(int) bool { return func(m int) bool { return slices.Contains(ms, m) } }
	for _, tc := range []struct {
		name     string
		self     int
		standbys bool
		failed   func(int) bool
		want     []int
	}{
		{"nothing failed: the placement's order", 5, true, nil, []int{1, 0, 2, 3}},
		{"the active failed: the standbys first, the active still last", 5, true, failed(1), []int{0, 2, 3, 1}},
		{"a standby failed: behind the others", 5, true, failed(2), []int{1, 0, 3, 2}},
		{"all failed: the placement's order", 5, true, failed(0, 1, 2, 3), []int{1, 0, 2, 3}},
		{"actives only: the failed active is all there is", 5, false, failed(1), []int{1}},
		{"the local standby stays first, needing no peer", 0, true, failed(0, 1), []int{0, 2, 3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := members(order(candidates(p, tc.self, 0, tc.standbys), tc.failed)); !slices.Equal(got, tc.want) {
				t.Errorf("got members %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHedgesOnlyWhileAnotherRemoteCandidateRemains(t *testing.T) {
	local, remote := candidate{self: true}, candidate{member: 1}
	cands := []candidate{local, remote, remote, remote}
	for i, want := range []bool{true, true, true, false} {
		if got := hedges(cands, i); got != want {
			t.Errorf("attempt %d: hedges %v, want %v", i, got, want)
		}
	}
	if hedges([]candidate{remote}, 0) {
		t.Error("a lone active (a read of actives only) is hedged")
	}
}

func TestPeerHealthRemembersFailuresForAWhile(t *testing.T) {
	var h peerHealth
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mem := 10 * time.Second
	if h.failedSince("n1", t0, mem) {
		t.Fatal("a peer never asked counts as failed")
	}
	h.noteFailure("n1", t0)
	if !h.failedSince("n1", t0.Add(mem-time.Millisecond), mem) {
		t.Error("forgotten within the memory")
	}
	if h.failedSince("n1", t0.Add(mem), mem) {
		t.Error("remembered past the memory")
	}
	if h.failedSince("n2", t0, mem) {
		t.Error("another peer counts as failed")
	}
	h.noteAnswer("n1")
	if h.failedSince("n1", t0, mem) {
		t.Error("an answer did not clear the failure")
	}
	// One abandoned forward per peer keeps running; its end frees the slot.
	if !h.adopt("n1") || h.adopt("n1") {
		t.Error("want exactly one abandoned forward per peer adopted")
	}
	if !h.adopt("n2") {
		t.Error("another peer's abandoned forward refused")
	}
	h.noteFailure("n1", t0)
	if !h.adopt("n1") {
		t.Error("the adopted forward's end did not free its slot")
	}
}
