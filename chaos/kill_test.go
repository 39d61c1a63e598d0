package chaos

import (
	"testing"
	"time"
)

// TestKillInstanceThenZone is scenario 1: kill -9 of one instance under
// load, its tasks taken over by standbys, the instance back; then kill -9
// of a whole zone (both its instances) at once, and the zone back.
func TestKillInstanceThenZone(t *testing.T) {
	needMode(t, false)
	r := begin(t, "kill")

	victim := r.ins[0]
	victim.Kill()
	r.waitTakeover(victim)
	r.settle()
	back := time.Now()
	r.restart(victim)
	r.healed(back)

	r.settle()
	zone := r.zone("zone-b")
	for _, in := range zone {
		in.Kill()
	}
	r.waitTakeover(zone...)
	r.settle()
	back = time.Now()
	r.restart(zone...)
	r.healed(back)

	r.settle()
	r.end(r.p.session + 5*time.Second)
}
