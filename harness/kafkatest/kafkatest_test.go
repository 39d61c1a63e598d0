package kafkatest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// The helper's own contract, run against whichever cluster New gives: kfake
// without RACKSTREAM_TEST_BROKERS, the real broker with it (make test runs
// both).

func TestCompactedTopicRoundTrip(t *testing.T) {
	t.Parallel()
	c := kafkatest.New(t)
	topic := c.Name("kafkatest-compacted")
	c.CreateTopic(topic, 3, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"),
	})
	if got := c.TopicConfig(topic, "cleanup.policy"); got != "compact" {
		t.Fatalf("cleanup.policy of %s on %s = %q, want compact", topic, c.Kind(), got)
	}

	var produced []*kgo.Record
	for round := range 3 {
		for k := range 10 {
			produced = append(produced, &kgo.Record{
				Topic: topic,
				Key:   []byte("key-" + strconv.Itoa(k)),
				Value: []byte(fmt.Sprintf("round-%d", round)),
			})
		}
	}
	c.Produce(produced...)

	perPartition := map[int32]int64{}
	for _, r := range produced {
		perPartition[r.Partition]++
	}
	ends := c.EndOffsets(topic)
	if len(ends) != 3 {
		t.Fatalf("end offsets of %s on %s cover %d partitions, want 3: %v", topic, c.Kind(), len(ends), ends)
	}
	for p, end := range ends {
		if end != perPartition[p] {
			t.Errorf("end offset of %s/%d on %s = %d, want %d (records produced to it)", topic, p, c.Kind(), end, perPartition[p])
		}
	}

	consumed := c.ConsumeAll(topic)
	if got, want := describe(consumed), describe(sortByPartitionOffset(produced)); !slices.Equal(got, want) {
		t.Fatalf("consumed from %s on %s:\n%s\nwant:\n%s", topic, c.Kind(), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCompactionKeepsLatestValuePerKey(t *testing.T) {
	t.Parallel()
	c := kafkatest.New(t)
	topic := c.Name("kafkatest-compaction")
	// Small segments and an eager cleaner: the real broker compacts closed
	// segments within about a second (kafka.sh sets log.cleaner.backoff.ms=200).
	c.CreateTopic(topic, 1, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.ms":                kadm.StringPtr("100"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
		"min.compaction.lag.ms":     kadm.StringPtr("0"),
	})
	rec := func(k, v string) *kgo.Record { return &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v)} }
	c.Produce(rec("a", "1"), rec("b", "1"), rec("a", "2"))

	latest := func() (map[string]string, bool) {
		vals := map[string]string{}
		overwritten := false
		for _, r := range c.ConsumeAll(topic) {
			if string(r.Key) == "tick" {
				continue // the ticks below overwrite each other all the time
			}
			if _, seen := vals[string(r.Key)]; seen {
				overwritten = true
			}
			vals[string(r.Key)] = string(r.Value)
		}
		return vals, !overwritten
	}
	ticks := 0
	kafkatest.Eventually(t, 30*time.Second, "a compacted to its latest value on "+c.Kind(), func() bool {
		// Neither broker cleans its active segment (kfake: the last
		// batch). A record appended after segment.ms rolls a new one.
		ticks++
		c.Produce(rec("tick", strconv.Itoa(ticks)))
		if c.Fake != nil {
			c.Fake.Compact()
		}
		_, compacted := latest()
		return compacted
	})
	vals, _ := latest()
	if vals["a"] != "2" || vals["b"] != "1" {
		t.Fatalf("after compaction of %s on %s: a=%q b=%q, want a=2 b=1", topic, c.Kind(), vals["a"], vals["b"])
	}
	if end := c.EndOffsets(topic)[0]; end != int64(3+ticks) {
		t.Fatalf("end offset of %s on %s = %d after compaction, want %d: compaction never moves the end", topic, c.Kind(), end, 3+ticks)
	}
}

func TestConsumeAllReadCommittedSkipsAbortedRecords(t *testing.T) {
	t.Parallel()
	c := kafkatest.New(t)
	topic := c.Name("kafkatest-txn")
	c.CreateTopic(topic, 1, nil)
	txn := c.Client(
		kgo.TransactionalID(c.Name("kafkatest-txn")),
		kgo.TransactionTimeout(10*time.Second),
		kgo.DefaultProduceTopic(topic),
	)
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	for _, step := range []struct {
		value  string
		commit kgo.TransactionEndTry
	}{{"aborted", kgo.TryAbort}, {"committed", kgo.TryCommit}} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := txn.ProduceSync(ctx, kgo.StringRecord(step.value)).FirstErr(); err != nil {
			t.Fatalf("produce %s on %s: %v", step.value, c.Kind(), err)
		}
		if err := txn.EndTransaction(ctx, step.commit); err != nil {
			t.Fatalf("end transaction of %s on %s: %v", step.value, c.Kind(), err)
		}
	}

	// Two data records, each followed by its transaction marker. The
	// coordinator writes markers after EndTransaction returns, so wait.
	var end int64
	kafkatest.Eventually(t, kafkatest.Timeout, "both transaction markers written on "+c.Kind(), func() bool {
		end = c.EndOffsets(topic)[0]
		return end >= 4
	})
	if end != 4 {
		t.Fatalf("end offset of %s on %s = %d, want 4 (two records, two markers)", topic, c.Kind(), end)
	}
	if got := values(c.ConsumeAll(topic, kgo.FetchIsolationLevel(kgo.ReadCommitted()))); !slices.Equal(got, []string{"committed"}) {
		t.Errorf("read_committed on %s = %q, want only the committed record", c.Kind(), got)
	}
	if got := values(c.ConsumeAll(topic, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))); !slices.Equal(got, []string{"aborted", "committed"}) {
		t.Errorf("read_uncommitted on %s = %q, want both records and no markers", c.Kind(), got)
	}
}

// The broker of the tests never creates topics by itself: a test that
// forgets to create one fails instead of passing on a default topic.
func TestProduceToMissingTopicFails(t *testing.T) {
	t.Parallel()
	c := kafkatest.New(t)
	topic := c.Name("kafkatest-missing")
	cl := c.Client(kgo.UnknownTopicRetries(1), kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("produce to missing %s on %s: err = %v, want %v", topic, c.Kind(), err, kerr.UnknownTopicOrPartition)
	}
	topics, err := c.Admin().ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has(topic) {
		t.Fatalf("%s on %s was created by producing to it: auto.create.topics.enable must be false", topic, c.Kind())
	}
}

// Tests use 1-3 s session timeouts (docs/design.md §9), which brokers reject unless
// group.min.session.timeout.ms is lowered (Kafka's default is 6 s).
func TestGroupAcceptsShortSessionTimeout(t *testing.T) {
	t.Parallel()
	c := kafkatest.New(t)
	topic, group := c.Name("kafkatest-group"), c.Name("kafkatest-group")
	c.CreateTopic(topic, 2, nil)
	assigned := make(chan int, 1)
	cl := c.Client(
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(600*time.Millisecond),
		kgo.HeartbeatInterval(200*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			select {
			case assigned <- len(m[topic]):
			default:
			}
		}),
	)
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	select {
	case n := <-assigned:
		if n != 2 {
			t.Fatalf("the only member of %s on %s got %d partitions, want 2", group, c.Kind(), n)
		}
	case <-ctx.Done():
		t.Fatalf("no assignment within %v with a 600 ms session timeout on %s", kafkatest.Timeout, c.Kind())
	}
	cancel()
}

// The real broker runs with the settings of docs/design.md §9; kafka.sh writes
// them and this pins them.
func TestRealBrokerRunsWithTestSettings(t *testing.T) {
	t.Parallel()
	c := kafkatest.New(t)
	if !c.Real() {
		t.Skip("kfake: its settings are set in code by kafkatest.New; RACKSTREAM_TEST_BROKERS runs this against the real broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	adm := c.Admin()
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Without ids, DescribeBrokerConfigs describes the cluster-wide dynamic
	// defaults, not what a broker runs with.
	rcs, err := adm.DescribeBrokerConfigs(ctx, md.Brokers.NodeIDs()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(rcs) == 0 {
		t.Fatal("no broker configs described")
	}
	want := map[string]string{
		"auto.create.topics.enable":                "false",
		"default.replication.factor":               "1",
		"min.insync.replicas":                      "1",
		"offsets.topic.replication.factor":         "1",
		"offsets.topic.num.partitions":             "1",
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.num.partitions":     "1",
		"transaction.state.log.min.isr":            "1",
		"group.min.session.timeout.ms":             "500",
		"group.initial.rebalance.delay.ms":         "0",
		"log.cleaner.backoff.ms":                   "200",
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("describe configs of broker %s: %v", rc.Name, rc.Err)
		}
		got := map[string]string{}
		for _, cfg := range rc.Configs {
			got[cfg.Key] = cfg.MaybeValue()
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("broker %s: %s = %q, want %q", rc.Name, k, got[k], v)
			}
		}
	}
}

func TestSASLClusterAuthenticates(t *testing.T) {
	t.Parallel()
	sc := kafkatest.SASL(t)
	if sc.Mechanism != "SCRAM-SHA-512" && sc.Mechanism != "SCRAM-SHA-256" {
		t.Fatalf("mechanism %q, want SCRAM-SHA-512 or SCRAM-SHA-256", sc.Mechanism)
	}
	// The helpers authenticate: a round trip works.
	topic := sc.Name("kafkatest-sasl")
	sc.CreateTopic(topic, 1, nil)
	sc.Produce(&kgo.Record{Topic: topic, Value: []byte("over sasl")})
	if got := values(sc.ConsumeAll(topic)); !slices.Equal(got, []string{"over sasl"}) {
		t.Fatalf("consumed %q over SASL on %s, want [over sasl]", got, sc.Kind())
	}

	// A wrong password is refused.
	bad, err := kgo.NewClient(kgo.SeedBrokers(sc.Brokers...), kgo.SASL(sc.AuthAs(sc.User, sc.Password+"-wrong")))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	_, err = kadm.NewClient(bad).BrokerMetadata(ctx)
	switch {
	case err == nil:
		t.Fatalf("metadata with a wrong password on %s succeeded", sc.Kind())
	case sc.Real() && !errors.Is(err, kerr.SaslAuthenticationFailed):
		// kfake just closes the connection; Kafka says why.
		t.Fatalf("metadata with a wrong password on %s: err = %v, want %v", sc.Kind(), err, kerr.SaslAuthenticationFailed)
	}
}

func TestNewChoosesTheBrokerFromTheEnvironment(t *testing.T) {
	t.Setenv(kafkatest.EnvBrokers, " 127.0.0.1:1 , 127.0.0.2:2,")
	c := kafkatest.New(t)
	if !c.Real() || c.Kind() != "kafka" || c.Fake != nil {
		t.Fatalf("with %s set: Real()=%v Kind()=%q, want the real broker", kafkatest.EnvBrokers, c.Real(), c.Kind())
	}
	if want := []string{"127.0.0.1:1", "127.0.0.2:2"}; !slices.Equal(c.Brokers, want) {
		t.Fatalf("Brokers = %q, want %q", c.Brokers, want)
	}

	t.Setenv(kafkatest.EnvBrokers, "")
	c = kafkatest.New(t)
	if c.Real() || c.Kind() != "kfake" || c.Fake == nil || len(c.Brokers) != 1 || !strings.HasPrefix(c.Brokers[0], "127.0.0.1:") {
		t.Fatalf("without %s: Real()=%v Kind()=%q Brokers=%q, want one kfake broker on loopback", kafkatest.EnvBrokers, c.Real(), c.Kind(), c.Brokers)
	}
}

func TestSASLWithoutCredentials(t *testing.T) {
	for _, tc := range []struct {
		name, ci string
		want     string // "skip" or "fatal"
	}{
		{"skips outside CI", "", "skip"},
		{"fails under CI", "true", "fatal"},
		{"fails under CI=1", "1", "fatal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(kafkatest.EnvBrokers, "127.0.0.1:1")
			t.Setenv(kafkatest.EnvSASLBrokers, "")
			t.Setenv(kafkatest.EnvSASLUser, "")
			t.Setenv(kafkatest.EnvSASLPassword, "")
			t.Setenv("CI", tc.ci)
			ft := run(func(tb testing.TB) { kafkatest.SASL(tb) })
			if ft.ended != tc.want {
				t.Fatalf("SASL with %s set and no credentials, CI=%q: ended by %q, want %q (%s)", kafkatest.EnvBrokers, tc.ci, ft.ended, tc.want, ft.msg)
			}
			if !strings.Contains(ft.msg, kafkatest.EnvSASLBrokers) {
				t.Errorf("message %q does not name %s", ft.msg, kafkatest.EnvSASLBrokers)
			}
		})
	}
}

func TestNameIsUniqueAndKeepsPrefix(t *testing.T) {
	c := kafkatest.New(t)
	seen := map[string]bool{}
	for range 100 {
		n := c.Name("orders")
		if !strings.HasPrefix(n, "orders-") || seen[n] {
			t.Fatalf("Name(orders) = %q: want a fresh name starting orders-", n)
		}
		seen[n] = true
	}
}

func TestEventually(t *testing.T) {
	t.Run("returns once the condition holds", func(t *testing.T) {
		calls := 0
		kafkatest.Eventually(t, 10*time.Second, "third call", func() bool { calls++; return calls == 3 })
		if calls != 3 {
			t.Fatalf("cond called %d times, want 3", calls)
		}
	})
	t.Run("fails the test at the deadline", func(t *testing.T) {
		ft := run(func(tb testing.TB) {
			kafkatest.Eventually(tb, 50*time.Millisecond, "never", func() bool { return false })
		})
		if ft.ended != "fatal" || !strings.Contains(ft.msg, "never: not true after 50ms") {
			t.Fatalf("Eventually past its deadline: ended by %q with %q, want a fatal naming the condition", ft.ended, ft.msg)
		}
	})
}

// fakeTB records how a helper ended a test.
type fakeTB struct {
	testing.TB // nil: calling anything not below panics
	mu         sync.Mutex
	ended, msg string
	cleanups   []func()
}

func (f *fakeTB) Helper()                      {}
func (f *fakeTB) Logf(string, ...any)          {}
func (f *fakeTB) Cleanup(fn func())            { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Skip(args ...any)             { f.end("skip", fmt.Sprint(args...)) }
func (f *fakeTB) Fatal(args ...any)            { f.end("fatal", fmt.Sprint(args...)) }
func (f *fakeTB) Fatalf(s string, args ...any) { f.end("fatal", fmt.Sprintf(s, args...)) }

func (f *fakeTB) end(how, msg string) {
	f.mu.Lock()
	f.ended, f.msg = how, msg
	f.mu.Unlock()
	runtime.Goexit()
}

// run calls fn with a fakeTB on its own goroutine, as the testing package
// does, so that Skip and Fatal can end it.
func run(fn func(testing.TB)) *fakeTB {
	ft := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ft)
	}()
	<-done
	for i := len(ft.cleanups) - 1; i >= 0; i-- {
		ft.cleanups[i]()
	}
	return ft
}

func sortByPartitionOffset(rs []*kgo.Record) []*kgo.Record {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b *kgo.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return out
}

func describe(rs []*kgo.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%d@%d %s=%s", r.Partition, r.Offset, r.Key, r.Value)
	}
	return out
}

func values(rs []*kgo.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Value)
	}
	return out
}
