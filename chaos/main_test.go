package chaos

import (
	"fmt"
	"os"
	"testing"

	"github.com/rackstream/rackstream/harness/cluster"
)

// EnvMode selects the form of the suite: "short" or "long"; unset, the
// tests skip (the normal package pass, on kfake or the shared broker, never
// runs them: they need their own broker and most of the machine).
const EnvMode = "RACKSTREAM_CHAOS"

var (
	mode   string          // "", "short" or "long"
	binary string          // this tree's rackstream
	broker *cluster.Broker // the suite's own broker
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
	return code
}
