// Package kafkatest hands a test a Kafka cluster: the real broker named by
// RACKSTREAM_TEST_BROKERS when it is set (started by deploy/local/kafka.sh),
// otherwise a fresh in-process kfake cluster configured like that broker
// (fast group settings of design §9), closed when the test ends.
//
// Tests must use their own application ids and topic names: packages run in
// parallel against one real broker. Use Cluster.Name for unique names.
package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnvBrokers names the environment variable that points tests at a real broker.
const EnvBrokers = "RACKSTREAM_TEST_BROKERS"

// Cluster is a Kafka cluster for one test.
type Cluster struct {
	// Brokers are the seed brokers, host:port on loopback.
	Brokers []string
	// Fake is the in-process cluster, nil on the real broker.
	Fake *kfake.Cluster

	t testing.TB
}

// Real reports whether the cluster is a real Apache Kafka broker.
func (c *Cluster) Real() bool { return c.Fake == nil }

// Kind is "kafka" or "kfake", for test logs and names.
func (c *Cluster) Kind() string {
	if c.Real() {
		return "kafka"
	}
	return "kfake"
}

// New returns the cluster for t: the real broker when RACKSTREAM_TEST_BROKERS
// is set, else a new kfake cluster with extra options appended.
func New(t testing.TB, fakeOpts ...kfake.Opt) *Cluster {
	t.Helper()
	if env := strings.TrimSpace(os.Getenv(EnvBrokers)); env != "" {
		return &Cluster{Brokers: strings.Split(env, ","), t: t}
	}
	opts := append([]kfake.Opt{
		kfake.NumBrokers(1),
		kfake.GroupMinSessionTimeout(500 * time.Millisecond),
		kfake.BrokerConfigs(map[string]string{
			"group.initial.rebalance.delay.ms": "0",
		}),
	}, fakeOpts...)
	fc, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kafkatest: start kfake: %v", err)
	}
	t.Cleanup(fc.Close)
	return &Cluster{Brokers: fc.ListenAddrs(), Fake: fc, t: t}
}

// Name returns prefix followed by a random suffix: a topic or group name no
// other test (or earlier run against the same broker) uses.
func (c *Cluster) Name(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// Client returns a kgo client on the cluster, closed when the test ends.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Brokers...)}, opts...)...)
	if err != nil {
		c.t.Fatalf("kafkatest: new client: %v", err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// Admin returns an admin client on the cluster, closed when the test ends.
func (c *Cluster) Admin() *kadm.Client {
	c.t.Helper()
	return kadm.NewClient(c.Client())
}

// CreateTopic creates a topic with replication factor 1 and the given
// configs (nil for none), failing the test on error.
func (c *Cluster) CreateTopic(name string, partitions int32, configs map[string]*string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Admin().CreateTopic(ctx, partitions, 1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.t.Fatalf("kafkatest: create topic %s (%d partitions) on %s: %v", name, partitions, c.Kind(), err)
	}
}

// Eventually polls cond every interval until it returns true or the deadline
// passes, then fails the test with msg. It logs how long the wait took.
func Eventually(t testing.TB, deadline time.Duration, msg string, cond func() bool) {
	t.Helper()
	start := time.Now()
	for {
		if cond() {
			t.Logf("%s: took %v", msg, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > deadline {
			t.Fatalf("%s: not true after %v", msg, deadline)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
