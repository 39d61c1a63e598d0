package processor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/tags"
)

// countApp is the integration tests' processor group: a per-key count of
// records whose values are per-key sequence numbers. The handler records
// every (key, sequence) it sees, so that a test can prove no record was
// lost and count the duplicates at-least-once allows.
type countApp struct {
	c        *kafkatest.Cluster
	appID    string
	input    string
	output   string
	parts    int32
	produced map[string]int // key -> records produced (valid ones)
	poison   int

	mu         sync.Mutex
	seen       map[string]map[int64]int // key -> seq -> times handled
	maxSeq     map[string]int64
	outOfOrder int
	dupByPart  map[int32]int
	firstBy    map[string]map[int64]string // key -> seq -> the instance that handled it first
	dupBy      map[string]int              // "first->again": duplicates by the instances that handled them
}

func newCountApp(t *testing.T, c *kafkatest.Cluster, parts int32) *countApp {
	a := &countApp{
		c: c, appID: c.Name("count"), input: c.Name("count-in"), output: c.Name("count-out"), parts: parts,
		produced: make(map[string]int), seen: make(map[string]map[int64]int), dupByPart: map[int32]int{}, maxSeq: map[string]int64{},
		firstBy: map[string]map[int64]string{}, dupBy: map[string]int{},
	}
	c.CreateTopic(a.input, parts, nil)
	c.CreateTopic(a.output, parts, nil)
	return a
}

func (a *countApp) topology() (*processor.Topology, *processor.Store[string, int64]) {
	return a.topologyFor("")
}

// topologyFor is the topology of instance name, whose handlings are
// attributed to it when duplicates are counted.
func (a *countApp) topologyFor(name string) (*processor.Topology, *processor.Store[string, int64]) {
	topo := processor.New(a.appID)
	counts := processor.NewStore(topo, "counts", codec.String(), codec.Int64())
	out := processor.NewOutput(topo, a.output, codec.String(), codec.Int64())
	processor.NewInput(topo, a.input, codec.String(), codec.Int64(), func(ctx *processor.Context, key string, seq int64) error {
		n, _, err := counts.Get(ctx, key)
		if err != nil {
			return err
		}
		n++
		if err := counts.Put(ctx, key, n); err != nil {
			return err
		}
		if err := out.Emit(ctx, key, n); err != nil {
			return err
		}
		a.mu.Lock()
		if a.seen[key] == nil {
			a.seen[key] = make(map[int64]int)
			a.firstBy[key] = make(map[int64]string)
			a.maxSeq[key] = -1
		}
		if a.seen[key][seq] == 0 {
			// A key's records are in one partition, handled in offset
			// order: a sequence number seen for the first time follows
			// the highest seen so far (replays after a failure repeat
			// numbers already seen).
			if seq != a.maxSeq[key]+1 {
				a.outOfOrder++
			}
			a.maxSeq[key] = max(a.maxSeq[key], seq)
			a.firstBy[key][seq] = name
		}
		a.seen[key][seq]++
		if a.seen[key][seq] > 1 {
			a.dupByPart[ctx.Partition()]++
			a.dupBy[a.firstBy[key][seq]+"->"+name]++
		}
		a.mu.Unlock()
		return nil
	})
	return topo, counts
}

// produce writes records keyed key-0..key-(keys-1) round robin, values the
// per-key sequence number; one in poisonEvery records (0: none) has an
// undecodable value instead. poisonEvery should be coprime with keys, so
// that poison spreads over all keys.
func (a *countApp) produce(t *testing.T, records, keys, poisonEvery int) {
	t.Helper()
	cl := a.c.Client(kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())), kgo.DefaultProduceTopic(a.input), kgo.UnknownTopicRetries(-1))
	var recs []*kgo.Record
	for i := 0; i < records; i++ {
		key := "key-" + strconv.Itoa(i%keys)
		if poisonEvery > 0 && i%poisonEvery == poisonEvery-1 {
			recs = append(recs, &kgo.Record{Key: []byte(key), Value: []byte("not-a-number"),
				Headers: []kgo.RecordHeader{{Key: "poison", Value: []byte(strconv.Itoa(i))}}})
			a.poison++
			continue
		}
		recs = append(recs, &kgo.Record{Key: []byte(key), Value: []byte(strconv.Itoa(a.produced[key]))})
		a.produced[key]++
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records: %v", records, err)
	}
}

// missing returns how many produced sequence numbers were never handled,
// and how many handlings were duplicates.
func (a *countApp) missing() (missing, dups int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, n := range a.produced {
		for seq := 0; seq < n; seq++ {
			switch c := a.seen[key][int64(seq)]; {
			case c == 0:
				missing++
			case c > 1:
				dups += c - 1
			}
		}
	}
	return missing, dups
}

type instance struct {
	rt     *processor.Runtime
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
	name   string
}

func (a *countApp) options(t *testing.T, name string, zone string) processor.Options {
	o := testOptions(t, a.c.Brokers, name)
	o.Endpoint = name + ".test:8080"
	o.Tags, o.Placement.RackAwareAssignmentTags = mustTags(t, "zone", zone), tags.Keys{"zone"}
	o.Capacity = 1
	o.SessionTimeout = 3 * time.Second
	processor.SetHeartbeatInterval(&o, 200*time.Millisecond)
	o.ShutdownTimeout = 20 * time.Second
	processor.SetRetry(&o, processor.Retry{Attempts: 2, Backoff: time.Millisecond})
	return o
}

// testOptions are the defaults with what the tests of this package share:
// a temporary state directory, a 200 ms commit interval, no record cache
// (the tests check every intermediate value) and the test's logger.
func testOptions(t testing.TB, brokers []string, name string) processor.Options {
	o := processor.DefaultOptions()
	o.Brokers, o.StateDir = brokers, t.TempDir()
	o.CommitInterval, o.CacheMaxBytes = 200*time.Millisecond, processor.Zero
	o.Logger = testLogger(t, name)
	return o
}

func mustTags(t *testing.T, kv ...string) tags.Set {
	t.Helper()
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	s, err := tags.FromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testLogger(_ testing.TB, name string) *slog.Logger {
	level := slog.LevelError
	if os.Getenv("RACKSTREAM_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("instance", name)
}

func (a *countApp) start(t *testing.T, name string, opts processor.Options) *instance {
	t.Helper()
	topo, _ := a.topologyFor(name)
	return startInstance(t, name, topo, opts)
}

// startInstance runs topo as instance name, stopped when the test ends.
func startInstance(t *testing.T, name string, topo *processor.Topology, opts processor.Options) *instance {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts.Registerer = reg
	rt, err := processor.NewRuntime(topo, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{rt: rt, reg: reg, cancel: cancel, done: make(chan error, 1), name: name}
	go func() { in.done <- rt.Run(ctx) }()
	t.Cleanup(func() { in.stop(t) })
	return in
}

func (in *instance) stop(t *testing.T) {
	in.cancel()
	select {
	case err := <-in.done:
		if err != nil {
			t.Errorf("%s: Run: %v", in.name, err)
		}
		in.done <- nil // later stops return at once
	case <-time.After(60 * time.Second):
		// Where it hangs is what a fix needs: dump every goroutine.
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Errorf("%s: did not shut down within 60s; goroutines:\n%s", in.name, buf.String())
	}
}

// waitCommitted waits until the group's committed offsets reach the input's
// end offsets: every record processed and its effects durable.
func (a *countApp) waitCommitted(t *testing.T, deadline time.Duration) {
	t.Helper()
	adm := a.c.Admin()
	kafkatest.Eventually(t, deadline, "committed offsets reach the end of "+a.input, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, a.input)
		if err != nil {
			return false
		}
		committed, err := adm.FetchOffsets(ctx, a.appID)
		if err != nil {
			return false
		}
		done := true
		ends.Each(func(o kadm.ListedOffset) {
			c, ok := committed.Lookup(o.Topic, o.Partition)
			if o.Offset > 0 && (!ok || c.At < o.Offset) {
				done = false
			}
		})
		return done
	})
}

// lastValues reads topic from the start and returns each key's last value.
func lastValues(t *testing.T, c *kafkatest.Cluster, topic string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := c.Admin().ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	cl := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[int32]int64{}
	last := map[string]string{}
	for {
		doneAll := true
		for p, end := range want {
			if got[p] < end {
				doneAll = false
			}
		}
		if doneAll {
			return last
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = r.Offset + 1
			if r.Value == nil {
				delete(last, string(r.Key))
			} else {
				last[string(r.Key)] = string(r.Value)
			}
		})
	}
}

func TestRuntimeCountsEveryRecordOnOneInstance(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 4)
	a.produce(t, 2000, 50, 101)
	in := a.start(t, "solo", a.options(t, "solo", "a"))
	kafkatest.Eventually(t, 60*time.Second, "instance ready", func() bool { ok, _ := in.rt.Ready(); return ok })
	a.waitCommitted(t, 60*time.Second)
	if missing, dups := a.missing(); missing != 0 {
		t.Fatalf("%d records never handled (%d duplicates)", missing, dups)
	}
	in.stop(t)

	changelog := lastValues(t, c, a.appID+"-counts-changelog")
	output := lastValues(t, c, a.output)
	for key, n := range a.produced {
		if changelog[key] != strconv.Itoa(n) {
			t.Errorf("key %s: store (changelog) count %s, produced %d", key, changelog[key], n)
		}
		if output[key] != changelog[key] {
			t.Errorf("key %s: output's last value %s, store's %s", key, output[key], changelog[key])
		}
	}
	dlq := lastValuesWithHeaders(t, c, a.appID+"-dlq")
	if len(dlq) != a.poison {
		t.Errorf("%d dead letters, %d poison records produced", len(dlq), a.poison)
	}
	for _, r := range dlq {
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		if h[processor.HeaderDLQTopic] != a.input || h[processor.HeaderDLQStage] != processor.StageDecodeValue ||
			h[processor.HeaderDLQPartition] == "" || h[processor.HeaderDLQOffset] == "" || h["poison"] == "" ||
			h[processor.HeaderDLQError] == "" {
			t.Errorf("dead letter headers %v", h)
			break
		}
	}
}

// lastValuesWithHeaders returns every record of topic, with its headers,
// up to the end offsets at the call. The end counts transaction markers,
// which no fetch returns as records, so it reads through ConsumeAll.
func lastValuesWithHeaders(t *testing.T, c *kafkatest.Cluster, topic string) []*kgo.Record {
	t.Helper()
	return c.ConsumeAll(topic)
}

var _ = errors.New
var _ = fmt.Sprint

// With the record cache on, writes to one key within a commit interval are
// merged: one changelog and one output record per key and interval, and the
// counts stay exact. (The other tests run with the cache off and see every
// intermediate value.)
func TestRecordCacheMergesWritesPerKeyWithinACommitInterval(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 2)
	a.produce(t, 1000, 10, 0)
	o := a.options(t, "solo", "a")
	o.CacheMaxBytes = 1 << 20
	o.CommitInterval = time.Hour // the only commit is the one at shutdown
	in := a.start(t, "solo", o)
	kafkatest.Eventually(t, time.Minute, "every record handled", func() bool {
		missing, _ := a.missing()
		return missing == 0
	})
	in.stop(t)

	changelog := lastValuesWithHeaders(t, c, a.appID+"-counts-changelog")
	output := lastValuesWithHeaders(t, c, a.output)
	if len(changelog) != 10 || len(output) != 10 {
		t.Errorf("%d changelog and %d output records for 10 keys in one interval; want 10 each", len(changelog), len(output))
	}
	last := lastValues(t, c, a.appID+"-counts-changelog")
	outLast := lastValues(t, c, a.output)
	for key, n := range a.produced {
		if last[key] != strconv.Itoa(n) || outLast[key] != last[key] {
			t.Errorf("key %s: store %s, output %s, produced %d", key, last[key], outLast[key], n)
		}
	}
}

// A small cache flushes whenever it is full, before any commit: nothing is
// lost or counted twice, and each key's run of updates is merged.
func TestRecordCacheFlushesWhenFull(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 2)
	// 50 keys, each updated 60 times in a row.
	cl := c.Client(kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())), kgo.DefaultProduceTopic(a.input), kgo.UnknownTopicRetries(-1))
	var recs []*kgo.Record
	for k := 0; k < 50; k++ {
		key := "key-" + strconv.Itoa(k)
		for j := 0; j < 60; j++ {
			recs = append(recs, &kgo.Record{Key: []byte(key), Value: []byte(strconv.Itoa(j))})
		}
		a.produced[key] = 60
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	o := a.options(t, "solo", "a")
	o.CacheMaxBytes = 2 * 1000 // two tasks: 1000 bytes, about 13 entries, each
	o.CommitInterval = time.Hour
	in := a.start(t, "solo", o)
	kafkatest.Eventually(t, time.Minute, "every record handled", func() bool {
		missing, _ := a.missing()
		return missing == 0
	})
	// The only commit comes at shutdown: changelog records before it were
	// sent by flushes of the full cache.
	kafkatest.Eventually(t, 30*time.Second, "the full cache flushed to the changelog before any commit", func() bool {
		ends, err := c.Admin().ListEndOffsets(ctx, a.appID+"-counts-changelog")
		if err != nil {
			return false
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n > 0
	})
	in.stop(t)
	changelog := lastValuesWithHeaders(t, c, a.appID+"-counts-changelog")
	if len(changelog) > 2*50 {
		t.Errorf("%d changelog records for 50 runs of 60 updates: want them merged", len(changelog))
	}
	last := lastValues(t, c, a.appID+"-counts-changelog")
	for key, n := range a.produced {
		if last[key] != strconv.Itoa(n) {
			t.Errorf("key %s: store %s, produced %d", key, last[key], n)
		}
	}
}

// A task whose queue is long has its partitions paused until it has worked
// through half: with a queue of 50 records this happens all the time, and
// every record is still handled exactly once, in order.
func TestBackpressurePausesAndResumesWithoutLosingOrRepeating(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 2)
	a.produce(t, 5000, 20, 0)
	o := a.options(t, "solo", "a")
	processor.SetQueues(&o, 50, 500)
	in := a.start(t, "solo", o)
	a.waitCommitted(t, 2*time.Minute)
	in.stop(t)
	a.checkCounts(t, true)
}

// ClientOptsFor gives the runtime's clients options that depend on the
// process id: here a client id the broker reports for the group member.
func TestClientOptsForNamesTheGroupMemberWithTheProcessID(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 2)
	o := a.options(t, "solo", "a")
	var calledWith sync.Map
	o.ClientOptsFor = func(processID string) []kgo.Opt {
		calledWith.Store(processID, true)
		return []kgo.Opt{kgo.ClientID("count-" + processID)}
	}
	in := a.start(t, "solo", o)
	kafkatest.Eventually(t, time.Minute, "ready", func() bool { return allReady(in) })
	pid := in.rt.ProcessID()
	calledWith.Range(func(k, _ any) bool {
		if k != pid {
			t.Errorf("ClientOptsFor called with %q; the process id is %q", k, pid)
		}
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gs, err := c.Admin().DescribeGroups(ctx, a.appID)
	if err != nil {
		t.Fatal(err)
	}
	g := gs[a.appID]
	if len(g.Members) != 1 || g.Members[0].ClientID != "count-"+pid {
		t.Errorf("group members %+v; want one with client id %q", g.Members, "count-"+pid)
	}
}

// CleanupDelay (state.cleanup.delay.ms) reaches the state directory: the
// stores of a task that moved to another instance are deleted once it has
// not been used for that long.
func TestCleanupDelayDeletesTheStoresOfTasksMovedAway(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 4)
	o := a.options(t, "first", "a")
	o.CleanupDelay = time.Second
	first := a.start(t, "first", o)
	a.produce(t, 400, 40, 0)
	a.waitCommitted(t, time.Minute)
	taskDir := func(task int32) string {
		return filepath.Join(o.StateDir, a.appID, strconv.Itoa(int(task)))
	}
	for task := int32(0); task < 4; task++ {
		if _, err := os.Stat(taskDir(task)); err != nil {
			t.Fatalf("task %d's stores before the move: %v", task, err)
		}
	}
	second := a.start(t, "second", a.options(t, "second", "b"))
	var gone int32 = -1
	kafkatest.Eventually(t, 2*time.Minute, "the stores of a task moved away deleted", func() bool {
		for task := int32(0); task < 4; task++ {
			if _, held := first.rt.Replica(task); held {
				continue
			}
			if _, err := os.Stat(taskDir(task)); errors.Is(err, os.ErrNotExist) {
				gone = task
				return true
			}
		}
		return false
	})
	if r, ok := second.rt.Replica(gone); !ok || r.Role != processor.RoleActive {
		t.Errorf("task %d, deleted on the first instance, is not active on the second", gone)
	}
	a.produce(t, 400, 40, 0)
	a.waitCommitted(t, time.Minute)
	second.stop(t)
	first.stop(t)
	a.checkCounts(t, false)
}

// A topology without stores runs: its tasks have nothing to open or
// restore, and commits only flush the outputs and commit the offsets.
func TestStatelessTopologyForwardsEveryRecord(t *testing.T) {
	c := kafkatest.New(t)
	input, output := c.Name("upper-in"), c.Name("upper-out")
	c.CreateTopic(input, 2, nil)
	c.CreateTopic(output, 2, nil)
	topo := processor.New(c.Name("upper"))
	out := processor.NewOutput(topo, output, codec.String(), codec.String())
	processor.NewInput(topo, input, codec.String(), codec.String(), func(ctx *processor.Context, k, v string) error {
		return out.Emit(ctx, k, strings.ToUpper(v))
	})
	in := runTopology(t, "upper", topo, testOptions(t, c.Brokers, "upper"))

	var recs []*kgo.Record
	for i := 0; i < 100; i++ {
		recs = append(recs, &kgo.Record{Key: []byte("k" + strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i))})
	}
	pctx, pcancel := context.WithTimeout(context.Background(), time.Minute)
	defer pcancel()
	if err := c.Client(kgo.DefaultProduceTopic(input)).ProduceSync(pctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := c.Admin()
	kafkatest.Eventually(t, time.Minute, "offsets committed at the end of the input", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, input)
		if err != nil {
			return false
		}
		committed, err := adm.FetchOffsets(ctx, topo.ApplicationID())
		if err != nil {
			return false
		}
		done := true
		ends.Each(func(o kadm.ListedOffset) {
			if c, ok := committed.Lookup(o.Topic, o.Partition); !ok || c.At < o.Offset {
				done = false
			}
		})
		return done
	})
	got := lastValues(t, c, output)
	for i := 0; i < 100; i++ {
		if k, want := "k"+strconv.Itoa(i), "V"+strconv.Itoa(i); got[k] != want {
			t.Errorf("output %s = %q, want %q", k, got[k], want)
		}
	}
	in.stop(t)
}

// A record a handler makes, in a store's changelog or an output topic,
// carries the timestamp of the input record it was made from (Kafka
// Streams' default), not the time it was produced.
func TestWritesCarryTheTimestampOfTheirInputRecord(t *testing.T) {
	c := kafkatest.New(t)
	input, output := c.Name("stamp-in"), c.Name("stamp-out")
	c.CreateTopic(input, 2, nil)
	c.CreateTopic(output, 2, nil)
	topo := processor.New(c.Name("stamp"))
	last := processor.NewStore(topo, "last", codec.String(), codec.String())
	out := processor.NewOutput(topo, output, codec.String(), codec.String())
	processor.NewInput(topo, input, codec.String(), codec.String(), func(ctx *processor.Context, k, v string) error {
		if err := last.Put(ctx, k, v); err != nil {
			return err
		}
		return out.Emit(ctx, k, v)
	})
	runTopology(t, "stamp", topo, testOptions(t, c.Brokers, "stamp"))

	base := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	want := map[string]time.Time{}
	var recs []*kgo.Record
	for i := range 50 {
		k := "k" + strconv.Itoa(i)
		want[k] = base.Add(time.Duration(i) * time.Second)
		recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte("v"), Timestamp: want[k]})
	}
	pctx, pcancel := context.WithTimeout(context.Background(), time.Minute)
	defer pcancel()
	if err := c.Client(kgo.DefaultProduceTopic(input)).ProduceSync(pctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{output, topo.ApplicationID() + "-last-changelog"} {
		var got []*kgo.Record
		kafkatest.Eventually(t, time.Minute, topic+" has a record per input", func() bool {
			got = lastValuesWithHeaders(t, c, topic)
			return len(got) >= len(want)
		})
		for _, r := range got {
			if w := want[string(r.Key)]; !r.Timestamp.Equal(w) {
				t.Errorf("%s: %s stamped %v, its input %v", topic, r.Key, r.Timestamp.UTC(), w)
			}
		}
	}
}
