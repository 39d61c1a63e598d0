package chaos

import (
	"testing"
	"time"
)

// TestBrokerStoppedAndKilled is scenario 3: the broker stopped cleanly for
// a while (30 s in the long form) and started again, then killed with
// kill -9 and restarted at once, all under load. Nothing may be lost: the
// producer's records wait in its buffer, the instances' commits and
// changelog writes wait or fail and are retried.
func TestBrokerStoppedAndKilled(t *testing.T) {
	needMode(t, false)
	brokerStoppedAndKilled(t, setup{})
}

// TestBrokerStoppedAndKilledExactlyOnce is scenario 3 under
// exactly_once_v2: transactions open when the broker stops or dies must be
// aborted or completed, never half applied; the counts and the output,
// read committed, must be exact. Long form only.
func TestBrokerStoppedAndKilledExactlyOnce(t *testing.T) {
	needMode(t, true)
	brokerStoppedAndKilled(t, setup{eos: true})
}

func brokerStoppedAndKilled(t *testing.T, s setup) {
	r := beginWith(t, "broker", s)
	outage := 15 * time.Second
	if mode == "long" {
		outage = 30 * time.Second
	}

	down := time.Now()
	if err := broker.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("broker stopped for %v", outage)
	time.Sleep(outage) // the fault itself: the broker stays down this long
	if err := broker.Resume(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	r.brokerDown = append(r.brokerDown, [2]time.Time{down, back})
	r.healed(back)
	r.settle()

	down = time.Now()
	if err := broker.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Log("broker killed (kill -9)")
	if err := broker.Resume(); err != nil {
		t.Fatal(err)
	}
	back = time.Now()
	r.brokerDown = append(r.brokerDown, [2]time.Time{down, back})
	r.healed(back)
	r.settle()
	r.end(r.activeBound())
}
