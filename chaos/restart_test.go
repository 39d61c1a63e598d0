package chaos

import (
	"testing"
	"time"
)

// TestRollingRestart is scenario 2: every instance restarted in turn under
// load, as Kubernetes rolls a StatefulSet: SIGTERM, wait for the exit,
// start it again, wait until it is ready, next. A clean stop leaves the
// group at once, so its tasks move without waiting for the session
// timeout.
func TestRollingRestart(t *testing.T) {
	needMode(t, true)
	r := begin(t, "rolling-restart")
	var back time.Time
	for _, in := range r.ins {
		if code := in.Stop(time.Minute); code != 0 {
			t.Errorf("%s exited %d after SIGTERM", in.Name, code)
		}
		back = time.Now()
		in.StartReady(deadline)
	}
	r.healed(back)
	r.settle()
	r.end(r.p.session + 5*time.Second)
}
