// Package kafkatest hands a test a Kafka cluster: the real broker named by
// RACKSTREAM_TEST_BROKERS when it is set (started by deploy/local/kafka.sh),
// otherwise a fresh in-process kfake cluster configured like that broker
// (fast group settings of docs/design.md §9), closed when the test ends.
//
//	c := kafkatest.New(t)
//	topic := c.Name("orders")
//	c.CreateTopic(topic, 3, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})
//	c.Produce(&kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte("v")})
//	recs := c.ConsumeAll(topic) // everything up to the end offsets of now
//
// Tests must use their own application ids and topic names: packages run in
// parallel against one real broker, and it keeps what earlier runs wrote. Use
// Cluster.Name for unique names.
//
// The two kinds differ where kfake does: kfake compacts only when asked
// (Cluster.Fake.Compact, or a lowered log.cleaner.backoff.ms passed to New),
// and then compacts everything, while the real broker never compacts a
// topic's active segment and looks for work every 200 ms (kafka.sh sets
// log.cleaner.backoff.ms=200). Tests of compaction set a small segment.ms or
// segment.bytes on their topic and poll for the outcome with Eventually.
//
// SASL tests call SASL, which gives a cluster whose clients authenticate
// with SCRAM-SHA-512: the real broker's SASL_PLAINTEXT listener, or a kfake
// cluster with SASL enabled.
package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The environment that points tests at a real broker; deploy/local/kafka.sh
// env prints all of it.
const (
	// EnvBrokers is the real broker's PLAINTEXT address, host:port[,host:port].
	EnvBrokers = "RACKSTREAM_TEST_BROKERS"
	// EnvBrokerRun identifies the broker's current life (kafka.sh sets its
	// cluster id). Read alongside EnvBrokers so that go test's cache, which
	// keys on the environment a test reads, reruns tests on a new broker
	// instead of reporting a result from an earlier one.
	EnvBrokerRun = "RACKSTREAM_TEST_BROKER_RUN"
	// EnvSASLBrokers is its SASL_PLAINTEXT (SCRAM-SHA-512) address.
	EnvSASLBrokers = "RACKSTREAM_TEST_SASL_BROKERS"
	// EnvSASLUser and EnvSASLPassword are the SCRAM credentials.
	EnvSASLUser     = "RACKSTREAM_TEST_SASL_USER"
	EnvSASLPassword = "RACKSTREAM_TEST_SASL_PASSWORD"
	// EnvSASLMechanism is the SASL mechanism; only SCRAM-SHA-512 and
	// SCRAM-SHA-256 are accepted, SCRAM-SHA-512 when unset.
	EnvSASLMechanism = "RACKSTREAM_TEST_SASL_MECHANISM"
)

// Timeout bounds each helper's broker round trips (topic creation, produce,
// consume-all) so that a wedged broker fails the test with a message instead
// of hanging until go test's -timeout.
const Timeout = 30 * time.Second

// Cluster is a Kafka cluster for one test.
type Cluster struct {
	// Brokers are the seed brokers, host:port on loopback.
	Brokers []string
	// Fake is the in-process cluster, nil on the real broker.
	Fake *kfake.Cluster

	t        testing.TB
	baseOpts []kgo.Opt // options every client of this cluster gets (SASL)

	mu       sync.Mutex
	producer *kgo.Client // lazily created by Produce
	admin    *kadm.Client
}

// At returns the cluster of the brokers already running at the given
// addresses, a broker the test started itself (the fault suite's own): the
// helpers work on it as on the shared one.
func At(t testing.TB, brokers ...string) *Cluster {
	return &Cluster{Brokers: brokers, t: t}
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
	if brokers := splitList(os.Getenv(EnvBrokers)); len(brokers) > 0 {
		_ = os.Getenv(EnvBrokerRun) // a cache key only
		return &Cluster{Brokers: brokers, t: t}
	}
	return newFake(t, nil, fakeOpts)
}

func newFake(t testing.TB, baseOpts []kgo.Opt, fakeOpts []kfake.Opt) *Cluster {
	t.Helper()
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
	return &Cluster{Brokers: fc.ListenAddrs(), Fake: fc, t: t, baseOpts: baseOpts}
}

// Name returns prefix followed by a random suffix: a topic or group name no
// other test (or earlier run against the same broker) uses.
func (c *Cluster) Name(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// ClientOpts returns the options that connect a client to the cluster (seed
// brokers, and SASL on a SASL cluster), for code under test that builds its
// own clients.
func (c *Cluster) ClientOpts() []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(c.Brokers...)}, c.baseOpts...)
}

// Client returns a kgo client on the cluster, closed when the test ends.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append(c.ClientOpts(), opts...)...)
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

// sharedAdmin returns the cluster's admin client for the helpers.
func (c *Cluster) sharedAdmin() *kadm.Client {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.admin == nil {
		c.admin = c.Admin()
	}
	return c.admin
}

// CreateTopic creates a topic with replication factor 1 and the given
// configs (nil for none), failing the test on error. It returns once the
// broker's metadata shows every partition with a leader: a real broker
// answers the creation before its metadata cache has the topic, and a
// produce in that gap fails with UNKNOWN_TOPIC_OR_PARTITION.
func (c *Cluster) CreateTopic(name string, partitions int32, configs map[string]*string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	adm := c.sharedAdmin()
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.t.Fatalf("kafkatest: create topic %s (%d partitions) on %s: %v", name, partitions, c.Kind(), err)
	}
	for {
		td, err := adm.ListTopics(ctx, name)
		if err == nil && topicReady(td[name], partitions) {
			// Metadata names a leader before that broker's replica
			// manager serves the partition: KRaft brokers apply the
			// topic's records asynchronously, and a ListOffsets in the
			// gap gets NOT_LEADER_FOR_PARTITION (goka, for one, gives
			// up on that). A ListOffsets answered by every leader is
			// the readiness clients actually need.
			if err = offsetsServed(ctx, adm, name, partitions); err == nil {
				return
			}
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("kafkatest: topic %s (%d partitions) on %s created but not in metadata with leaders within %v (last error: %v)", name, partitions, c.Kind(), Timeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// offsetsServed returns nil once every partition of topic answers a
// ListOffsets request without an error.
func offsetsServed(ctx context.Context, adm *kadm.Client, topic string, partitions int32) error {
	offs, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return err
	}
	n := int32(0)
	var first error
	offs.Each(func(o kadm.ListedOffset) {
		n++
		if o.Err != nil && first == nil {
			first = fmt.Errorf("list offsets %s/%d: %w", o.Topic, o.Partition, o.Err)
		}
	})
	if first != nil {
		return first
	}
	if n != partitions {
		return fmt.Errorf("list offsets %s: %d of %d partitions answered", topic, n, partitions)
	}
	return nil
}

func topicReady(td kadm.TopicDetail, partitions int32) bool {
	if td.Err != nil || int32(len(td.Partitions)) != partitions {
		return false
	}
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

// Produce writes records synchronously with acks=all, failing the test on
// any error. Each record must name its topic; records without a partition
// are partitioned by key with Kafka's murmur2 (kgo's default). On return the
// records carry their partitions and offsets.
func (c *Cluster) Produce(records ...*kgo.Record) {
	c.t.Helper()
	c.mu.Lock()
	if c.producer == nil {
		c.producer = c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	pr := c.producer
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := pr.ProduceSync(ctx, records...).FirstErr(); err != nil {
		c.t.Fatalf("kafkatest: produce %d record(s) on %s: %v", len(records), c.Kind(), err)
	}
}

// EndOffsets returns the end offset (high watermark: the offset the next
// record will get) of each partition of topic.
func (c *Cluster) EndOffsets(topic string) map[int32]int64 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	listed, err := c.sharedAdmin().ListEndOffsets(ctx, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		c.t.Fatalf("kafkatest: end offsets of %s on %s: %v", topic, c.Kind(), err)
	}
	ends := make(map[int32]int64)
	listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	if len(ends) == 0 {
		c.t.Fatalf("kafkatest: end offsets of %s on %s: topic has no partitions", topic, c.Kind())
	}
	return ends
}

// ConsumeAll reads every partition of topic from its start to the end
// offsets it has when ConsumeAll is called, and returns the data records
// (no transaction markers) ordered by partition, then offset. It fails the
// test if the ends are not reached within Timeout: with read_committed
// (pass kgo.FetchIsolationLevel(kgo.ReadCommitted())) that includes an open
// transaction that never finishes. Right after a transaction ends its marker
// may not be written yet (the coordinator writes markers after EndTransaction
// returns): the end read here may then stop short of it, and read_committed
// waits for the marker before it returns the transaction's records. opts are
// added to the consumer's options.
//
// The end is detected by offset, counting transaction markers, so it works
// on transactional topics. One case never ends: a compacted topic whose last
// record before the end was removed (a tombstone past delete.retention.ms).
func (c *Cluster) ConsumeAll(topic string, opts ...kgo.Opt) []*kgo.Record {
	c.t.Helper()
	ends := c.EndOffsets(topic)
	start := make(map[int32]kgo.Offset, len(ends))
	for p := range ends {
		start[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(append(append(c.ClientOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}),
		kgo.KeepControlRecords(),
	), opts...)...)
	if err != nil {
		c.t.Fatalf("kafkatest: consume %s: new client: %v", topic, err)
	}
	defer cl.Close()

	// next[p] is the offset after the last record (data or marker) seen.
	next := make(map[int32]int64, len(ends))
	done := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	var out []*kgo.Record
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			c.t.Fatalf("kafkatest: consume %s on %s: ends %v not reached within %v (reached %v)", topic, c.Kind(), ends, Timeout, next)
		}
		fs.EachError(func(t string, p int32, err error) {
			c.t.Fatalf("kafkatest: consume %s/%d on %s: %v", t, p, c.Kind(), err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			// Records past the end were produced after the call: not ours.
			if r.Offset >= ends[r.Partition] {
				return
			}
			next[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

// TopicConfig returns the value of config key of topic as the broker
// reports it (set on the topic or inherited), failing the test when the
// broker does not report the key.
func (c *Cluster) TopicConfig(topic, key string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	rcs, err := c.sharedAdmin().DescribeTopicConfigs(ctx, topic)
	if err != nil {
		c.t.Fatalf("kafkatest: describe configs of %s on %s: %v", topic, c.Kind(), err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		c.t.Fatalf("kafkatest: describe configs of %s on %s: %v", topic, c.Kind(), err)
	}
	for _, cfg := range rc.Configs {
		if cfg.Key == key {
			return cfg.MaybeValue()
		}
	}
	c.t.Fatalf("kafkatest: topic %s on %s has no config %q", topic, c.Kind(), key)
	return ""
}

// SASLCluster is a cluster whose clients authenticate with SCRAM. Its
// Client, Admin and helpers authenticate as User; tests that need a failing
// login build a client from Brokers themselves.
type SASLCluster struct {
	*Cluster
	// Mechanism is SCRAM-SHA-512 or SCRAM-SHA-256.
	Mechanism string
	User      string
	Password  string
}

// Default SCRAM credentials, the same as deploy/local/kafka.sh's defaults.
const (
	defaultSASLUser     = "rackstream"
	defaultSASLPassword = "rackstream-test-secret"
	defaultMechanism    = "SCRAM-SHA-512"
)

// SASL returns a cluster that requires SCRAM authentication. With
// RACKSTREAM_TEST_BROKERS set it is the real broker's SASL_PLAINTEXT
// listener named by RACKSTREAM_TEST_SASL_BROKERS with the credentials of
// RACKSTREAM_TEST_SASL_USER and RACKSTREAM_TEST_SASL_PASSWORD; when those are
// unset the test is skipped, except under CI (see CI) where that fails it:
// CI must test SASL against the real broker. Without RACKSTREAM_TEST_BROKERS it
// is a new kfake cluster with SASL enabled and one SCRAM-SHA-512 user.
func SASL(t testing.TB, fakeOpts ...kfake.Opt) *SASLCluster {
	t.Helper()
	if len(splitList(os.Getenv(EnvBrokers))) == 0 {
		sc := &SASLCluster{Mechanism: defaultMechanism, User: defaultSASLUser, Password: defaultSASLPassword}
		sc.Cluster = newFake(t, []kgo.Opt{kgo.SASL(sc.Auth())}, append([]kfake.Opt{
			kfake.EnableSASL(),
			kfake.Superuser(sc.Mechanism, sc.User, sc.Password),
		}, fakeOpts...))
		return sc
	}
	_ = os.Getenv(EnvBrokerRun) // a cache key only
	brokers := splitList(os.Getenv(EnvSASLBrokers))
	user, pass := os.Getenv(EnvSASLUser), os.Getenv(EnvSASLPassword)
	mech := strings.ToUpper(strings.TrimSpace(os.Getenv(EnvSASLMechanism)))
	if mech == "" {
		mech = defaultMechanism
	}
	var missing []string
	for _, kv := range [][2]string{{EnvSASLBrokers, strings.Join(brokers, ",")}, {EnvSASLUser, user}, {EnvSASLPassword, pass}} {
		if kv[1] == "" {
			missing = append(missing, kv[0])
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("kafkatest: %s is set but %s is not (eval \"$(deploy/local/kafka.sh env)\" sets them)", EnvBrokers, strings.Join(missing, ", "))
		SkipOrFail(t, "%s", msg)
	}
	if mech != "SCRAM-SHA-512" && mech != "SCRAM-SHA-256" {
		t.Fatalf("kafkatest: %s=%q: only SCRAM-SHA-512 and SCRAM-SHA-256 are supported", EnvSASLMechanism, mech)
	}
	sc := &SASLCluster{Mechanism: mech, User: user, Password: pass}
	sc.Cluster = &Cluster{Brokers: brokers, t: t, baseOpts: []kgo.Opt{kgo.SASL(sc.Auth())}}
	return sc
}

// Auth returns the SASL mechanism that logs in as the cluster's user.
func (s *SASLCluster) Auth() sasl.Mechanism {
	return s.AuthAs(s.User, s.Password)
}

// AuthAs returns the cluster's SASL mechanism logging in as user.
func (s *SASLCluster) AuthAs(user, password string) sasl.Mechanism {
	a := scram.Auth{User: user, Pass: password}
	if s.Mechanism == "SCRAM-SHA-256" {
		return a.AsSha256Mechanism()
	}
	return a.AsSha512Mechanism()
}

// Eventually polls cond every 20 ms until it returns true or the deadline
// passes, then fails the test with msg. It logs how long the wait took.
func Eventually(t testing.TB, deadline time.Duration, msg string, cond func() bool) {
	t.Helper()
	Poll(t, deadline, 20*time.Millisecond, msg, cond)
}

// Poll is Eventually polling every interval: for conditions that cost
// several HTTP calls (reading a group's placement), polled less often on a
// small machine.
func Poll(t testing.TB, deadline, interval time.Duration, msg string, cond func() bool) {
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
		time.Sleep(interval)
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
