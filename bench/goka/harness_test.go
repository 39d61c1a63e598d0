package gokabench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
)

// The data shape of processor/bench_test.go (keys "key-<i>", 100-byte
// values, 12 partitions), scaled down so that a side-by-side run stays
// within a couple of minutes on the shared machine.
const (
	partitions = 12
	valueBytes = 100
)

// envInt reads a positive integer from the environment, def when unset.
func envInt(tb testing.TB, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// fnv1a is the partitioner of every topic here: goka's, so that goka's
// group table stays co-partitioned with the input, and Rackstream's
// partitioner=fnv1a.
var fnv1a = partition.FNV1a()

func keyOf(i, keys int) string { return "key-" + strconv.Itoa(i%keys) }

// createTopics creates topics with the job's partition count and deletes
// them when the benchmark ends (the real broker keeps what it is given).
func createTopics(tb testing.TB, c *kafkatest.Cluster, configs map[string]*string, topics ...string) {
	tb.Helper()
	for _, t := range topics {
		c.CreateTopic(t, partitions, configs)
	}
	dropTopics(tb, c, topics...)
}

// ensureTable creates goka's group table, compacted, unless it exists, and
// waits until every partition has a leader: goka creates a missing table
// itself and asks for its offsets at once, which a real broker may answer
// with NOT_LEADER_FOR_PARTITION before the new partitions' leaders are known,
// and goka gives up on that.
func ensureTable(tb testing.TB, c *kafkatest.Cluster, topic string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	details, err := c.Admin().ListTopics(ctx, topic)
	if err != nil {
		tb.Fatalf("list topic %s on %s: %v", topic, c.Kind(), err)
	}
	if details.Has(topic) {
		return
	}
	compact := "compact"
	c.CreateTopic(topic, partitions, map[string]*string{"cleanup.policy": &compact})
}

// dropTopics deletes topics, created by the systems under test, at the end.
func dropTopics(tb testing.TB, c *kafkatest.Cluster, topics ...string) {
	if !c.Real() {
		return // the fake cluster goes with the test
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
		defer cancel()
		if _, err := c.Admin().DeleteTopics(ctx, topics...); err != nil {
			tb.Logf("delete topics %v: %v", topics, err)
		}
	})
}

// produceInput fills topic with records records over keys keys (record i
// has key keyOf(i, keys) and a 100-byte value) and returns each key's count.
func produceInput(tb testing.TB, c *kafkatest.Cluster, topic string, records, keys int) map[string]int64 {
	tb.Helper()
	want := make(map[string]int64, keys)
	produce(tb, c, topic, records, func(i int) *kgo.Record {
		v := make([]byte, valueBytes)
		binary.BigEndian.PutUint64(v, uint64(i))
		k := keyOf(i, keys)
		want[k]++
		return &kgo.Record{Key: []byte(k), Value: v}
	})
	return want
}

// produceTable fills a table topic with keys keys, key i holding count i+1
// in decimal (goka's codec.Int64 and Rackstream's codec.Int64 both read it).
func produceTable(tb testing.TB, c *kafkatest.Cluster, topic string, keys int) {
	tb.Helper()
	produce(tb, c, topic, keys, func(i int) *kgo.Record {
		return &kgo.Record{Key: []byte(keyOf(i, keys)), Value: strconv.AppendInt(nil, int64(i+1), 10)}
	})
}

// produce writes n records made by record(0..n-1) to topic,
// partitioned by FNV-1a, and fails tb on any error.
func produce(tb testing.TB, c *kafkatest.Cluster, topic string, n int, record func(i int) *kgo.Record) {
	tb.Helper()
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(partition.Kgo(fnv1a)),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(100_000))
	ctx := context.Background()
	var failed atomic.Pointer[error]
	for i := 0; i < n; i++ {
		cl.Produce(ctx, record(i), func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		tb.Fatalf("produce to %s: %v", topic, err)
	}
	if err := failed.Load(); err != nil {
		tb.Fatalf("produce to %s: %v", topic, *err)
	}
	cl.Close() // its buffers are not the systems' to carry
}

// instance is one running instance of either system's job.
type instance interface {
	// handled is the number of records whose update ran.
	handled() int64
	// group is the consumer group whose committed offsets show progress.
	group() string
	// recovered reports whether every assigned partition's table is
	// rebuilt and processing runs.
	recovered() bool
	// count returns key's count in the instance's local state.
	count(key string) (n int64, found bool, err error)
	// exited reports whether Run has returned, and its error.
	exited() (bool, error)
	// stop shuts the instance down and returns Run's error.
	stop() error
}

// running is the Run goroutine of an instance.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's, set before done is closed
}

func run(fn func(context.Context) error) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = fn(ctx)
	}()
	return r
}

func (r *running) exited() (bool, error) {
	select {
	case <-r.done:
		return true, r.err
	default:
		return false, nil
	}
}

// stop cancels Run and waits for it to return.
func (r *running) stop() error {
	r.cancel()
	select {
	case <-r.done:
		if errors.Is(r.err, context.Canceled) {
			return nil
		}
		return r.err
	case <-time.After(time.Minute):
		return errors.New("did not stop within a minute")
	}
}

// system starts an instance of one system's job as consumer group name
// over input, its state in dir.
type system struct {
	name  string
	start func(tb testing.TB, c *kafkatest.Cluster, name, input, dir string) instance
}

var (
	gokaSystem       = system{name: "goka", start: startGoka}
	rackstreamSystem = system{name: "rackstream", start: startRackstream}
)

type gokaInstance struct {
	*running
	proc *goka.Processor
	name string
	n    atomic.Int64
}

// startGoka runs GokaCount as group name; its group table is name-table.
func startGoka(tb testing.TB, c *kafkatest.Cluster, name, input, dir string) instance {
	tb.Helper()
	g := &gokaInstance{name: name}
	ensureTable(tb, c, name+"-table")
	proc, err := goka.NewProcessor(c.Brokers, GokaCount(name, input, func() { g.n.Add(1) }), GokaOptions(dir, SaramaConfig())...)
	if err != nil {
		tb.Fatalf("goka processor %s on %s: %v", name, c.Kind(), err)
	}
	dropTopics(tb, c, name+"-table")
	g.proc = proc
	g.running = run(proc.Run)
	tb.Cleanup(func() { _ = g.stop() }) // after a failure; stopping twice is harmless
	return g
}

func (g *gokaInstance) handled() int64  { return g.n.Load() }
func (g *gokaInstance) group() string   { return g.name }
func (g *gokaInstance) recovered() bool { return g.proc.Recovered() }

func (g *gokaInstance) count(key string) (int64, bool, error) {
	v, err := g.proc.Get(key)
	if err != nil || v == nil {
		return 0, false, err
	}
	return v.(int64), true, nil
}

type rackstreamInstance struct {
	*running
	rt   *processor.Runtime
	name string
	n    atomic.Int64
}

// startRackstream runs RackstreamCount as application name with its own
// changelog, name-counts-changelog.
func startRackstream(tb testing.TB, c *kafkatest.Cluster, name, input, dir string) instance {
	tb.Helper()
	return startRackstreamOn(tb, c, name, input, dir)
}

// startRackstreamOn is startRackstream with store options (the recovery
// benchmark adopts goka's group table with processor.WithChangelog).
func startRackstreamOn(tb testing.TB, c *kafkatest.Cluster, name, input, dir string, opts ...processor.StoreOption) instance {
	tb.Helper()
	r := &rackstreamInstance{name: name}
	topo, _ := RackstreamCount(name, input, func() { r.n.Add(1) }, opts...)
	o := processor.DefaultOptions()
	o.Brokers, o.StateDir = c.Brokers, dir
	o.ClientOpts = c.ClientOpts()[1:] // SASL, when the cluster has it
	o.LevelDB.WriteBufferBytes = envInt(tb, "GOKA_BENCH_RS_WRITE_BUFFER", o.LevelDB.WriteBufferBytes)
	o.Partitioner = fnv1a
	o.CommitInterval = time.Second   // sarama's auto-commit interval, which goka uses
	o.CacheMaxBytes = processor.Zero // as before the defaults moved: goka has no record cache
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()})).With("instance", name)
	rt, err := processor.NewRuntime(topo, o)
	if err != nil {
		tb.Fatalf("rackstream runtime %s: %v", name, err)
	}
	dropTopics(tb, c, name+"-dlq")
	if len(opts) == 0 {
		dropTopics(tb, c, name+"-counts-changelog")
	}
	r.rt = rt
	r.running = run(rt.Run)
	tb.Cleanup(func() { _ = r.stop() }) // after a failure; stopping twice is harmless
	return r
}

func (r *rackstreamInstance) handled() int64 { return r.n.Load() }
func (r *rackstreamInstance) group() string  { return r.name }
func (r *rackstreamInstance) recovered() bool {
	ok, _ := r.rt.Ready()
	return ok
}

func (r *rackstreamInstance) count(key string) (int64, bool, error) {
	task := fnv1a.Partition([]byte(key), partitions)
	rep, ok := r.rt.Replica(task)
	if !ok {
		return 0, false, fmt.Errorf("no replica of task %d", task)
	}
	st := rep.Fresh("counts")
	if st == nil {
		return 0, false, fmt.Errorf("task %d has no latest view of store counts", task)
	}
	b, found, err := st.Get([]byte(key))
	if err != nil || !found {
		return 0, false, err
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, true, err
}

// waitFor polls cond every interval until it holds; it fails tb after
// limit, saying what was awaited, or as soon as in's Run returns.
func waitFor(tb testing.TB, in instance, limit, interval time.Duration, what func() string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if ended, err := in.exited(); ended {
			tb.Fatalf("%s: Run returned early: %v", what(), err)
		}
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %s", limit, what())
		}
		time.Sleep(interval)
	}
}

// usage is what one measured run cost the process.
type usage struct {
	wall     time.Duration
	cpu      time.Duration // user+system CPU of the whole process
	mallocs  uint64
	bytes    uint64
	peakHeap uint64 // highest heap-object bytes seen (live and not yet swept), over the start
	peakLive uint64 // highest live heap a GC cycle marked, over the start
}

// meter measures the process from its creation to done: CPU, allocations,
// and the heap sampled every 10 ms: the bytes in heap objects (what the
// heap's footprint follows, garbage not yet swept included) and the live
// heap the last GC cycle marked.
type meter struct {
	start      time.Time
	cpu0       time.Duration
	ms0        runtime.MemStats
	base       [2]uint64
	peak       [2]uint64 // written by the sampler until sampled is closed
	stopSample chan struct{}
	sampled    chan struct{}
}

func heapSamples() []metrics.Sample {
	return []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
}

func startMeter() *meter {
	runtime.GC()
	m := &meter{stopSample: make(chan struct{}), sampled: make(chan struct{})}
	s := heapSamples()
	metrics.Read(s)
	for i := range s {
		m.base[i] = s[i].Value.Uint64()
	}
	runtime.ReadMemStats(&m.ms0)
	m.cpu0 = processCPU()
	go func() {
		defer close(m.sampled)
		s := heapSamples()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			for i := range s {
				m.peak[i] = max(m.peak[i], s[i].Value.Uint64())
			}
			select {
			case <-m.stopSample:
				return
			case <-t.C:
			}
		}
	}()
	m.start = time.Now()
	return m
}

func (m *meter) done() usage {
	wall := time.Since(m.start)
	cpu := processCPU() - m.cpu0
	close(m.stopSample)
	<-m.sampled
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	over := func(i int) uint64 {
		if m.peak[i] > m.base[i] {
			return m.peak[i] - m.base[i]
		}
		return 0
	}
	return usage{wall: wall, cpu: cpu, mallocs: ms.Mallocs - m.ms0.Mallocs, bytes: ms.TotalAlloc - m.ms0.TotalAlloc,
		peakHeap: over(0), peakLive: over(1)}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// logLevel is Rackstream's log level: errors, or everything with
// RACKSTREAM_TEST_DEBUG set.
func logLevel() slog.Level {
	if os.Getenv("RACKSTREAM_TEST_DEBUG") != "" {
		return slog.LevelDebug
	}
	return slog.LevelError
}
