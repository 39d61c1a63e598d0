package processor_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
)

// The processing benchmark: a per-key count over 1M records
// (100k keys, 100-byte values, 12 partitions) on kfake, emitting every
// updated count, beside a plain franz-go consume->produce pipe over the same
// records on the same cluster (the ceiling). Run it with
//
//	go test -run '^$' -bench 'Processing' -benchtime 1x -timeout 30m ./processor/
//
// RACKSTREAM_BENCH_RECORDS and RACKSTREAM_BENCH_KEYS change the record
// and key counts (bench/driver, which runs each sub-benchmark alone in its
// own process for `make bench`, sets them).
//
// The fair comparison: the count writes two records per
// input (changelog and output), so its ceiling is the pipe writing two
// (records-per-input=2: one to a compacted topic, like a changelog, and one
// to an output topic); the count with no output topic (no-output, as goka's
// group table) writes one, as the pipe with records-per-input=1 does.
const (
	benchValueBytes = 100
	benchParts      = 12
)

func benchEnv(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func benchRecords() int { return benchEnv("RACKSTREAM_BENCH_RECORDS", 1_000_000) }

// benchKeys is the number of distinct keys, key-<i mod benchKeys()>.
func benchKeys() int { return benchEnv("RACKSTREAM_BENCH_KEYS", 100_000) }

// dropAfter deletes topics when the benchmark ends on the real broker,
// which keeps what it is given (kfake goes with the process).
func dropAfter(b *testing.B, c *kafkatest.Cluster, topics ...string) {
	if !c.Real() {
		return
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
		defer cancel()
		if _, err := c.Admin().DeleteTopics(ctx, topics...); err != nil {
			b.Logf("delete topics %v: %v", topics, err)
		}
	})
}

// benchInput creates and fills the input topic once per benchmark.
func benchInput(b *testing.B, c *kafkatest.Cluster, records int) string {
	b.Helper()
	topic := c.Name("bench-in")
	c.CreateTopic(topic, benchParts, nil)
	dropAfter(b, c, topic)
	fillBenchInput(b, c, topic, records, benchKeys(), nil)
	return topic
}

// fillBenchInput produces records key-<i mod keys> with 100-byte values
// to topic, murmur2-partitioned, record i at at(i) (nil: the producer's
// time).
func fillBenchInput(b *testing.B, c *kafkatest.Cluster, topic string, records, keys int, at func(i int) time.Time) {
	b.Helper()
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(100_000))
	value := make([]byte, benchValueBytes)
	ctx := context.Background()
	errs := make(chan error, 1)
	for i := 0; i < records; i++ {
		v := append([]byte(nil), value...)
		binary.BigEndian.PutUint64(v, uint64(i))
		r := &kgo.Record{Key: []byte("key-" + strconv.Itoa(i%keys)), Value: v}
		if at != nil {
			r.Timestamp = at(i)
		}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	cl.Close() // its buffers are not the benchmark's to carry
}

// measure runs fn and reports records/s, allocations and CPU per record
// (the process's user+system time over fn: with kfake the broker's too).
func measure(b *testing.B, records int, fn func()) {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu0 := benchCPU()
	stopProfile := profileSpan(b)
	start := time.Now()
	b.ResetTimer()
	fn()
	b.StopTimer()
	took := time.Since(start)
	stopProfile()
	cpu := benchCPU() - cpu0
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(cpu.Microseconds())/float64(records), "cpu-µs/record")
	b.ReportMetric(float64(records)/took.Seconds(), "records/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(records), "allocs/record")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(records), "B/record")
	b.Logf("%d records in %v", records, took.Round(time.Millisecond))
}

// profileSpan writes CPU and heap profiles of the measured span when
// RACKSTREAM_BENCH_PROFILE names a file prefix: <prefix>.cpu, and
// <prefix>.heap0 and <prefix>.heap1 at the span's start and end, and an
// execution trace, <prefix>.trace (`go tool
// pprof -sample_index=alloc_space -base <prefix>.heap0 <prefix>.heap1`
// gives the span's allocations). Test-binary flags such as -cpuprofile
// would also profile producing the input.
func profileSpan(b *testing.B) (stop func()) {
	prefix := os.Getenv("RACKSTREAM_BENCH_PROFILE")
	if prefix == "" {
		return func() {}
	}
	write := func(name string, fn func(f *os.File) error) {
		f, err := os.Create(prefix + name)
		if err == nil {
			err = errors.Join(fn(f), f.Close())
		}
		if err != nil {
			b.Fatalf("profile %s: %v", prefix+name, err)
		}
	}
	heap := func(f *os.File) error { return pprof.Lookup("allocs").WriteTo(f, 0) }
	write(".heap0", heap)
	cpu, err := os.Create(prefix + ".cpu")
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		b.Fatal(err)
	}
	tr, err := os.Create(prefix + ".trace")
	if err != nil {
		b.Fatal(err)
	}
	if err := trace.Start(tr); err != nil {
		b.Fatal(err)
	}
	return func() {
		trace.Stop()
		if err := tr.Close(); err != nil {
			b.Fatal(err)
		}
		pprof.StopCPUProfile()
		if err := cpu.Close(); err != nil {
			b.Fatal(err)
		}
		runtime.GC() // the allocs profile is as of the last GC
		write(".heap1", heap)
	}
}

// benchCPU is the process's user+system CPU time so far.
func benchCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitGroupDone waits until group's committed offsets reach topic's end.
func waitGroupDone(b *testing.B, adm *kadm.Client, group, topic string) {
	b.Helper()
	for deadline := time.Now().Add(20 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ends, err1 := adm.ListEndOffsets(ctx, topic)
		committed, err2 := adm.FetchOffsets(ctx, group)
		cancel()
		if err1 != nil || err2 != nil {
			continue
		}
		done := true
		ends.Each(func(o kadm.ListedOffset) {
			if c, ok := committed.Lookup(o.Topic, o.Partition); o.Offset > 0 && (!ok || c.At < o.Offset) {
				done = false
			}
		})
		if done {
			return
		}
	}
	b.Fatal("group did not finish within 20 minutes")
}

// BenchmarkProcessingCount is the per-key count, emitting every updated
// count to an output topic ("output": two records per input, changelog and
// output) or not ("no-output": the changelog only, as goka's group table),
// at-least-once, and with the output under exactly-once ("output-eos").
func BenchmarkProcessingCount(b *testing.B) {
	c := kafkatest.New(b)
	records := benchRecords()
	input := benchInput(b, c, records)
	atLeastOnce := func(o *processor.Options) { o.Guarantee = processor.AtLeastOnce }
	b.Run("output", func(b *testing.B) { benchCount(b, c, input, records, true, atLeastOnce) })
	b.Run("no-output", func(b *testing.B) { benchCount(b, c, input, records, false, atLeastOnce) })
	// The output with the record cache at its default budget (the rows
	// above run without it): it merges a key's updates within a commit
	// interval, evicting the least recently written keys when full.
	b.Run("output-cache", func(b *testing.B) {
		benchCount(b, c, input, records, true, func(o *processor.Options) {
			o.Guarantee, o.CacheMaxBytes = processor.AtLeastOnce, processor.DefaultOptions().CacheMaxBytes
		})
	})
	// The same under another memory budget (state.memory.bytes, 64 MiB
	// unless RACKSTREAM_BENCH_MEMORY_BYTES says; the rows above run under
	// the default, state.DefaultMemoryBytes): it sizes the stores' LevelDB
	// memtables and block caches and bounds the record cache; compare peak
	// RSS with output-cache, run in its own process.
	b.Run("output-budget", func(b *testing.B) {
		benchCount(b, c, input, records, true, func(o *processor.Options) {
			o.Guarantee, o.MemoryBytes = processor.AtLeastOnce, int64(benchEnv("RACKSTREAM_BENCH_MEMORY_BYTES", 64<<20))
		})
	})
	// Exactly-once at the same 1s commit interval: the comparison of the
	// guarantees, not of their default intervals (BenchmarkProcessingGuarantees
	// has those).
	b.Run("output-eos", func(b *testing.B) {
		benchCount(b, c, input, records, true, func(o *processor.Options) { o.Guarantee = processor.ExactlyOnceV2 })
	})
}

// benchCount runs the count b.N times over input's records, at a 1s commit
// interval unless tweak sets another, and reports its throughput.
func benchCount(b *testing.B, c *kafkatest.Cluster, input string, records int, emit bool, tweak func(*processor.Options)) {
	output := c.Name("bench-out")
	c.CreateTopic(output, benchParts, nil)
	dropAfter(b, c, output)
	for i := 0; i < b.N; i++ {
		var handled atomic.Int64
		topo := processor.New(c.Name("bench-count"))
		dropAfter(b, c, topo.ApplicationID()+"-counts-changelog", topo.ApplicationID()+"-dlq")
		counts := processor.NewStore(topo, "counts", codec.String(), codec.Int64())
		out := processor.NewOutput(topo, output, codec.String(), codec.Int64())
		processor.NewInput(topo, input, codec.String(), codec.Bytes(), func(ctx *processor.Context, key string, _ []byte) error {
			n, _, err := counts.Get(ctx, key)
			if err != nil {
				return err
			}
			n++
			if err := counts.Put(ctx, key, n); err != nil {
				return err
			}
			handled.Add(1)
			if !emit {
				return nil
			}
			return out.Emit(ctx, key, n)
		})
		o := testOptions(b, c.Brokers, "bench")
		o.CommitInterval = time.Second
		tweak(&o)
		rt, err := processor.NewRuntime(topo, o)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		// Timed: until every record is handled and its effects produced
		// (the last commit then comes within the commit interval).
		start := time.Now()
		measure(b, records, func() {
			go func() { done <- rt.Run(ctx) }()
			first := time.Duration(0)
			for handled.Load() < int64(records) {
				time.Sleep(10 * time.Millisecond)
				if first == 0 && handled.Load() > 0 {
					first = time.Since(start)
				}
			}
			b.Logf("first record handled after %v", first.Round(time.Millisecond))
		})
		waitGroupDone(b, c.Admin(), topo.ApplicationID(), input)
		b.Logf("all offsets committed after %v (commit interval %v)", time.Since(start).Round(time.Millisecond), o.CommitInterval)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProcessingPipeCeiling is a plain franz-go group consumer that
// produces what it reads and commits: what the client and cluster allow
// without state, the ceiling of the count above. records-per-input=1
// produces every record once, to an output topic (the ceiling of the count
// with no output); records-per-input=2 produces it twice, to a compacted
// topic standing for the changelog and to an output topic, as many records
// as the count with an output writes (the fair ceiling). The values it
// writes are the input values' first 8 bytes: the count writes decimal
// counts of a few bytes, so copying the 100-byte inputs would make the
// ceiling carry more bytes than the job it bounds.
func BenchmarkProcessingPipeCeiling(b *testing.B) {
	c := kafkatest.New(b)
	records := benchRecords()
	input := benchInput(b, c, records)
	b.Run("records-per-input=1", func(b *testing.B) { benchPipe(b, c, input, records, 1) })
	b.Run("records-per-input=2", func(b *testing.B) { benchPipe(b, c, input, records, 2) })
}

func benchPipe(b *testing.B, c *kafkatest.Cluster, input string, records, perInput int) {
	outputs := []string{c.Name("bench-pipe-out")}
	c.CreateTopic(outputs[0], benchParts, nil)
	if perInput == 2 {
		outputs = append(outputs, c.Name("bench-pipe-changelog"))
		c.CreateTopic(outputs[1], benchParts, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})
	}
	dropAfter(b, c, outputs...)
	for i := 0; i < b.N; i++ {
		group := c.Name("bench-pipe")
		cl := c.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(input), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		measure(b, records, func() {
			ctx := context.Background()
			seen, start := 0, time.Now()
			for seen < records {
				fs := cl.PollRecords(ctx, 10_000)
				if seen == 0 && fs.NumRecords() > 0 {
					b.Logf("first record polled after %v", time.Since(start).Round(time.Millisecond))
				}
				fs.EachRecord(func(r *kgo.Record) {
					for _, t := range outputs {
						cl.Produce(ctx, &kgo.Record{Topic: t, Key: r.Key, Value: r.Value[:8], Partition: r.Partition}, nil)
					}
					seen++
				})
				if err := cl.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				if err := cl.CommitUncommittedOffsets(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		cl.Close()
	}
}
