package processor_test

import (
	"context"
	"encoding/binary"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/internal/kafkatest"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/processor/codec"
	"github.com/rackstream/rackstream/processor/partition"
)

// The processing benchmark of issue 7: a per-key count over 1M records
// (100k keys, 100-byte values, 12 partitions) on kfake, emitting every
// updated count, beside a plain franz-go consume->produce pipe over the same
// records on the same cluster (the ceiling). Run it with
//
//	go test -run '^$' -bench 'Processing' -benchtime 1x -timeout 30m ./processor/
//
// RACKSTREAM_BENCH_RECORDS lowers the record count for a quick look.
const (
	benchKeys       = 100_000
	benchValueBytes = 100
	benchParts      = 12
)

func benchRecords() int {
	if n, err := strconv.Atoi(os.Getenv("RACKSTREAM_BENCH_RECORDS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// benchInput creates and fills the input topic once per benchmark.
func benchInput(b *testing.B, c *kafkatest.Cluster, records int) string {
	b.Helper()
	topic := c.Name("bench-in")
	c.CreateTopic(topic, benchParts, nil)
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(100_000))
	value := make([]byte, benchValueBytes)
	ctx := context.Background()
	errs := make(chan error, 1)
	for i := 0; i < records; i++ {
		v := append([]byte(nil), value...)
		binary.BigEndian.PutUint64(v, uint64(i))
		cl.Produce(ctx, &kgo.Record{Key: []byte("key-" + strconv.Itoa(i%benchKeys)), Value: v}, func(_ *kgo.Record, err error) {
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
	return topic
}

// measure runs fn and reports records/s and allocations per record.
func measure(b *testing.B, records int, fn func()) {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	b.ResetTimer()
	fn()
	b.StopTimer()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(records)/took.Seconds(), "records/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(records), "allocs/record")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(records), "B/record")
	b.Logf("%d records in %v", records, took.Round(time.Millisecond))
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

func BenchmarkProcessingCount(b *testing.B) {
	c := kafkatest.New(b)
	records := benchRecords()
	input := benchInput(b, c, records)
	output := c.Name("bench-out")
	c.CreateTopic(output, benchParts, nil)
	for i := 0; i < b.N; i++ {
		var handled atomic.Int64
		topo := processor.New(c.Name("bench-count"))
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
			return out.Emit(ctx, key, n)
		})
		o := testOptions(b, c.Brokers, "bench")
		o.CommitInterval = time.Second
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
			for handled.Load() < int64(records) {
				time.Sleep(10 * time.Millisecond)
			}
		})
		waitGroupDone(b, c.Admin(), topo.ApplicationID(), input)
		b.Logf("all offsets committed after %v (commit interval 1s)", time.Since(start).Round(time.Millisecond))
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProcessingPipeCeiling is a plain franz-go group consumer that
// produces every record it reads to an output topic and commits: what the
// client and cluster allow without state, the ceiling of the count above.
func BenchmarkProcessingPipeCeiling(b *testing.B) {
	c := kafkatest.New(b)
	records := benchRecords()
	input := benchInput(b, c, records)
	output := c.Name("bench-pipe-out")
	c.CreateTopic(output, benchParts, nil)
	for i := 0; i < b.N; i++ {
		group := c.Name("bench-pipe")
		cl := c.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(input), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic(output),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		measure(b, records, func() {
			ctx := context.Background()
			seen := 0
			for seen < records {
				fs := cl.PollRecords(ctx, 10_000)
				fs.EachRecord(func(r *kgo.Record) {
					cl.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value, Partition: r.Partition}, nil)
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
