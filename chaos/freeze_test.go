package chaos

import (
	"testing"
	"time"
)

// TestFrozenInstance is scenario 4's first half: an instance frozen
// (SIGSTOP) past the session timeout, as a long GC pause or a VM migration
// freezes it, then resumed. The group evicts it and its standbys take
// over; resumed, it finds itself fenced, drops what it held and rejoins.
func TestFrozenInstance(t *testing.T) {
	needMode(t, true)
	r := begin(t, "freeze")
	victim := r.ins[3]
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
	r.end(r.p.session + 5*time.Second)
}

// TestNetworkCut is scenario 4's second half: an instance's network cut
// while it keeps running (every connection it has passes a proxy the test
// cuts: its broker listener's and its HTTP endpoint's), then restored.
func TestNetworkCut(t *testing.T) {
	needMode(t, true)
	r := begin(t, "network-cut")
	victim := r.ins[4]
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
	r.end(r.p.session + 5*time.Second)
}
