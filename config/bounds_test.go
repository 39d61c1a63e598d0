package config

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// TestBoundsAreTheRuntimesBounds: each bound Load applies to a value the
// runtime hands to its group client or balancer is the bound that client or
// balancer applies, so that a configuration Load accepts (validate) does
// not fail when the instance starts (run), and one Load refuses would.
func TestBoundsAreTheRuntimesBounds(t *testing.T) {
	load := func(set string) error {
		_, err := Load(Sources{Set: append(required[:2:2], set)})
		return err
	}
	// session.timeout.ms: the group client, with the balancer's heartbeat.
	group := func(session time.Duration) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"),
			kgo.SessionTimeout(session), kgo.HeartbeatInterval(balancer.DefaultHeartbeatInterval))
		if err == nil {
			cl.Close()
		}
		return err
	}
	d := lookup("session.timeout.ms")
	for _, tc := range []struct {
		ms int64
		ok bool
	}{{d.min - 1, false}, {d.min, true}, {d.max, true}, {d.max + 1, false}} {
		loadErr, runErr := load("session.timeout.ms="+strconv.FormatInt(tc.ms, 10)), group(time.Duration(tc.ms)*time.Millisecond)
		if (loadErr == nil) != tc.ok || (runErr == nil) != tc.ok {
			t.Errorf("session.timeout.ms=%d: Load says %v, the group client %v; want both to accept: %v", tc.ms, loadErr, runErr, tc.ok)
		}
	}
	// num.stream.threads and application.server: the balancer.
	bal := func(capacity int, endpoint string) error {
		_, err := balancer.New(balancer.Settings{ApplicationID: "a", ProcessID: "p", InputTopics: []string{"t"},
			Capacity: capacity, Endpoint: endpoint, Placement: balancer.DefaultSettings().Placement,
			ProbingInterval: balancer.MinProbingInterval, PlacementReplicationFactor: -1,
			HeartbeatInterval: time.Second, WarmupCheckInterval: time.Second})
		return err
	}
	if err := bal(1, "h:1"); err != nil {
		t.Fatalf("the balancer refuses the test's settings: %v", err)
	}
	threads := lookup("num.stream.threads")
	for _, tc := range []struct {
		n  int64
		ok bool
	}{{threads.max, true}, {threads.max + 1, false}} {
		loadErr, runErr := load("num.stream.threads="+strconv.FormatInt(tc.n, 10)), bal(int(tc.n), "h:1")
		if (loadErr == nil) != tc.ok || (runErr == nil) != tc.ok {
			t.Errorf("num.stream.threads=%d: Load says %v, the balancer %v; want both to accept: %v", tc.n, loadErr, runErr, tc.ok)
		}
	}
	for _, tc := range []struct {
		hostLen int
		ok      bool
	}{{maxEndpointBytes - len(":80"), true}, {maxEndpointBytes - len(":80") + 1, false}} {
		endpoint := strings.Repeat("h", tc.hostLen) + ":80"
		loadErr, runErr := load("application.server="+endpoint), bal(1, endpoint)
		if (loadErr == nil) != tc.ok || (runErr == nil) != tc.ok {
			t.Errorf("application.server of %d bytes: Load says %.200v, the balancer %.200v; want both to accept: %v", len(endpoint), loadErr, runErr, tc.ok)
		}
	}
}
