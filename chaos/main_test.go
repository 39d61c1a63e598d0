package chaos

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
)

// EnvMode selects the form of the suite: "short" or "long"; unset, the
// tests skip (the normal package pass, on kfake or the shared broker, never
// runs them: they need their own broker and most of the machine).
const EnvMode = "RACKSTREAM_CHAOS"

// EnvBrokersDir and EnvBrokersPort place the three-broker cluster of the
// scenarios that need one: its run directory (empty: one of its own under
// the system's temporary directory) and where the search for its ports
// starts (empty: cluster.StartBrokers' default).
const (
	EnvBrokersDir  = "RACKSTREAM_CHAOS_BROKERS_DIR"
	EnvBrokersPort = "RACKSTREAM_CHAOS_BROKERS_PORT"
)

var (
	mode   string          // "", "short" or "long"
	binary string          // this tree's rackstream
	broker *cluster.Broker // the suite's own broker

	// three is the three-broker cluster, started by the first scenario
	// that needs it (threeBrokers) and closed by suite.
	three struct {
		once sync.Once
		b    *cluster.Brokers
		err  error
	}
)

// slots is the number of instances a scenario runs, each with its own
// broker listener.
const slots = 6

func TestMain(m *testing.M) {
	mode = os.Getenv(EnvMode)
	if mode == "" {
		os.Exit(m.Run())
	}
	if mode != "short" && mode != "long" {
		fmt.Fprintf(os.Stderr, "chaos: %s=%q: want short or long\n", EnvMode, mode)
		os.Exit(2)
	}
	os.Exit(suite(m))
}

func suite(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rackstream-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if binary, err = cluster.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	broker, err = cluster.StartBroker(cluster.BrokerOptions{Slots: slots, Dir: os.Getenv("RACKSTREAM_CHAOS_KAFKA_DIR")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	code := m.Run()
	broker.Close(code != 0)
	if code != 0 {
		fmt.Fprintf(os.Stderr, "chaos: the broker's logs are in %s/logs\n", broker.Dir)
	}
	if three.b != nil {
		three.b.Close(code != 0)
		if code != 0 {
			fmt.Fprintf(os.Stderr, "chaos: the three brokers' logs are in %s/node*/logs\n", three.b.Dir)
		}
	}
	return code
}

// threeBrokers returns the suite's three-broker cluster (replication
// factor 3 and min.insync.replicas=2 for every topic, a listener per
// instance slot on every node), starting it on first use: only the
// scenarios that need three JVMs pay for them.
func threeBrokers(t *testing.T) *cluster.Brokers {
	t.Helper()
	three.once.Do(func() {
		o := cluster.BrokersOptions{Slots: slots, Dir: os.Getenv(EnvBrokersDir), ReplicationFactor: 3, MinISR: 2}
		if v := os.Getenv(EnvBrokersPort); v != "" {
			if o.FromPort, three.err = strconv.Atoi(v); three.err != nil {
				three.err = fmt.Errorf("chaos: %s=%q: want a port number", EnvBrokersPort, v)
				return
			}
		}
		three.b, three.err = cluster.StartBrokers(o)
	})
	if errors.Is(three.err, cluster.ErrKafkaUnavailable) {
		kafkatest.SkipOrFail(t, "%v", three.err)
	}
	if three.err != nil {
		t.Fatal(three.err)
	}
	return three.b
}
