package chaos

import (
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/cluster"
)

// TestFrozenInstance is scenario 4's first half: an instance frozen
// (SIGSTOP) past the session timeout, as a long GC pause or a VM migration
// freezes it, then resumed. The group evicts it and its standbys take
// over; resumed, it finds itself fenced, drops what it held and rejoins.
func TestFrozenInstance(t *testing.T) {
	needMode(t, true)
	frozenInstance(t, setup{})
}

// TestFrozenInstanceExactlyOnce is the freeze under exactly_once_v2: the
// thawed instance is a zombie whose transaction must be fenced, and the
// counts and the output, read committed, must be exact. (Before main's
// 0beb06a a thawed zombie lost an update here in 1 of 4 runs: key-3 of
// partition 11 at 128 of 129, its output holding one count twice; 8 of 8
// runs were exact after it.)
func TestFrozenInstanceExactlyOnce(t *testing.T) {
	needMode(t, true)
	frozenInstance(t, setup{eos: true})
}

func frozenInstance(t *testing.T, s setup) {
	r := beginWith(t, "freeze", s)
	victim := r.ins[3]
	r.midTransaction(victim)
	victim.Freeze()
	frozen := time.Now()
	r.waitTakeover(victim)
	r.settle()
	if d := time.Since(frozen); d <= r.p.session {
		t.Fatalf("the group evicted %s %v after the freeze, within the session timeout %v", victim.Name, d, r.p.session)
	}
	back := time.Now()
	victim.Thaw()
	r.healed(back)
	r.settle()
	// No bound on the reads with max_lag here, unlike the network cut:
	// after the thaw they failed for 6.0 s once (ALOS, 11:44 UTC on
	// 2026-12-03) while the zombie rejoined.
	r.end(r.activeBound())
}

// TestNetworkCut is scenario 4's second half: an instance's network cut
// while it keeps running (every connection it has passes a proxy the test
// cuts: its broker listener's and its HTTP endpoint's), then restored.
func TestNetworkCut(t *testing.T) {
	needMode(t, true)
	networkCut(t, setup{})
}

// TestNetworkCutExactlyOnce is the network cut under exactly_once_v2: the
// cut instance's open transaction can neither commit nor abort until it
// is back, and is fenced by the instance that took its tasks over.
func TestNetworkCutExactlyOnce(t *testing.T) {
	needMode(t, true)
	networkCut(t, setup{eos: true})
}

func networkCut(t *testing.T, s setup) {
	r := beginWith(t, "network-cut", s)
	victim := r.ins[4]
	r.midTransaction(victim)
	victim.Isolate()
	cut := time.Now()
	r.waitTakeover(victim)
	r.settle()
	dropped := int64(0)
	for _, p := range victim.Proxies {
		dropped += p.Dropped()
	}
	t.Logf("cut for %v; %d bytes dropped by %s's proxies", time.Since(cut).Round(time.Millisecond), dropped, victim.Name)
	if dropped == 0 { // it heartbeats every few seconds: the cut must have caught something
		t.Errorf("%s's proxies dropped nothing during the cut: was it cut?", victim.Name)
	}
	if !victim.Running() {
		t.Fatalf("%s exited during the cut", victim.Name)
	}
	back := time.Now()
	victim.Reconnect()
	r.healed(back)
	r.settle()
	_, lag := r.end(r.activeBound())
	r.standbysAnswered(lag, cut, back)
}

// standbysAnswered checks that reads a standby may answer (max_lag) never
// waited, while the victim was cut off (from cut to back), for the group
// to notice (the session timeout) and move its tasks: a lookup hedges a
// silent active with a standby and then asks it last
// (query/route.go). Before that, reads of its keys failed for
// 8-10 s from the cut on (session timeout 6 s). Only the part of each
// window within the cut counts: after it is mended the instance rejoins
// (a thawed instance's reads once failed for 6.0 s then), another matter,
// reported in the scenario's line.
func (r *run) standbysAnswered(lag cluster.ProbeReport, cut, back time.Time) {
	r.t.Helper()
	for _, w := range lag.Windows {
		from, to := maxTime(w.From, cut), minTime(w.To, back)
		if to.Sub(from) < r.p.session {
			continue
		}
		r.t.Errorf("with max_lag=%d key %s could not be read for %v of the cut (%s to %s; the cut %s to %s), not less than the session timeout %v: reads waited for the group to notice the cut",
			maxLag, w.Key, to.Sub(from).Round(time.Millisecond), w.From.Format("15:04:05.000"), w.To.Format("15:04:05.000"),
			cut.Format("15:04:05.000"), back.Format("15:04:05.000"), r.p.session)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
