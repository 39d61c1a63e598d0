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
	rollingRestart(t, setup{})
}

// TestRollingRestartExactlyOnce is scenario 2 under exactly_once_v2: each
// clean stop commits or aborts its transaction; the counts and the
// output, read committed, must be exact.
func TestRollingRestartExactlyOnce(t *testing.T) {
	needMode(t, true)
	rollingRestart(t, setup{eos: true})
}

func rollingRestart(t *testing.T, s setup) {
	r := beginWith(t, "rolling-restart", s)
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
	r.end(r.activeBound())
}
