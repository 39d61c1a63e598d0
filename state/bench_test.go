package state

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkRestore measures restoring one changelog partition of
// STATE_BENCH_RECORDS records [1,000,000], with 16-byte random keys and
// 100-byte values. It runs beside its two ceilings. One is a plain
// franz-go consumer reading the same partition and discarding it. The
// other is goleveldb loading the same records in batches, with no Kafka. It runs against kfake, or against the
// real broker when RACKSTREAM_TEST_BROKERS is set. Use -benchtime=1x (or
// 3x): one iteration restores the whole partition.
//
// The machine is shared, so the "interleaved" sub-benchmark runs the three
// back to back in every iteration and reports restore as a percentage of
// the slower ceiling measured under the same load.
func BenchmarkRestore(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("STATE_BENCH_RECORDS")); err == nil && v > 0 {
		n = v
	}
	e := newEnv(b, 1, "bench")
	topic := ChangelogTopic(e.app, "bench")
	e.open(b.TempDir()).Close() // creates the changelog
	start := time.Now()
	produceBenchRecords(b, e, topic, n)
	b.Logf("%s: produced %d records in %v", e.c.Kind(), n, time.Since(start).Round(time.Millisecond))
	const recBytes = 16 + 100

	report := func(b *testing.B, took time.Duration, peak peakHeap) {
		el := took.Seconds()
		total := float64(n) * float64(b.N)
		b.ReportMetric(total/el, "records/s")
		b.ReportMetric(total*recBytes/el/1e6, "MB/s")
		b.ReportMetric(float64(peak.peak)/1e6, "peak-heap-MB")
		// With kfake the broker's log is on this heap too: the growth of
		// the live heap over the one before the run is what the code
		// under test held.
		b.ReportMetric(float64(peak.live-min(peak.live, peak.base))/1e6, "live-heap-growth-MB")
		b.ReportMetric(0, "ns/op")
	}
	variants := []struct {
		name string
		run  func(b *testing.B, peak *peakHeap) time.Duration
	}{
		{"restore", func(b *testing.B, peak *peakHeap) time.Duration { return benchRestore(b, e, n, peak) }},
		{"ceiling-consume", func(b *testing.B, peak *peakHeap) time.Duration { return benchConsume(b, e, topic, n, peak) }},
		{"ceiling-leveldb", func(b *testing.B, peak *peakHeap) time.Duration { return benchLevelDB(b, n, peak) }},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			var peak peakHeap
			var took time.Duration
			cpu0 := processCPU()
			for b.Loop() {
				took += v.run(b, &peak)
			}
			// CPU time of the whole process (setup included, so an upper
			// bound): on a shared machine wall time partly measures the
			// wait for a core. With kfake it includes the broker.
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(n)/float64(b.N), "cpu-ns/record")
			report(b, took, peak)
		})
	}
	b.Run("interleaved", func(b *testing.B) {
		took := make([]time.Duration, len(variants))
		for b.Loop() {
			for i, v := range variants {
				took[i] += v.run(b, &peakHeap{})
			}
		}
		perSec := func(d time.Duration) float64 { return float64(n) * float64(b.N) / d.Seconds() }
		b.ReportMetric(perSec(took[0]), "restore-records/s")
		b.ReportMetric(perSec(took[1]), "consume-records/s")
		b.ReportMetric(perSec(took[2]), "leveldb-records/s")
		b.ReportMetric(100*perSec(took[0])/min(perSec(took[1]), perSec(took[2])), "pct-of-slower-ceiling")
		b.ReportMetric(0, "ns/op")
	})
}

// benchRestore restores the bench changelog into a fresh directory and
// returns how long Restore took.
func benchRestore(b *testing.B, e *env, n int, peak *peakHeap) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	m := e.open(b.TempDir(), func(o *Options) {
		// Knobs for tuning experiments.
		if v, err := strconv.Atoi(os.Getenv("STATE_BENCH_BATCH_BYTES")); err == nil {
			o.RestoreBatchBytes = v
		}
		if v, err := strconv.Atoi(os.Getenv("STATE_BENCH_FETCH_BYTES")); err == nil {
			o.FetchMaxBytes = int32(v)
		}
	})
	defer m.Close()
	task, err := m.OpenTask(0, e.stores)
	must(b, err)
	runtime.GC()
	stop := samplePeakHeap(peak)
	began := time.Now()
	must(b, task.Restore(context.Background()))
	took := time.Since(began)
	stop()
	if ck := task.Store("bench").Checkpoint(); ck != int64(n) {
		b.Fatalf("checkpoint after restore = %d, want %d", ck, n)
	}
	return took
}

// benchConsume reads the partition with a plain consumer, discarding it.
func benchConsume(b *testing.B, e *env, topic string, n int, peak *peakHeap) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.c.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(DefaultOptions().FetchMaxBytes), kgo.FetchMaxPartitionBytes(DefaultOptions().FetchMaxBytes))
	must(b, err)
	defer cl.Close()
	runtime.GC()
	stop := samplePeakHeap(peak)
	began := time.Now()
	var got int
	for got < n {
		fs := cl.PollFetches(context.Background())
		must(b, fs.Err0())
		got += fs.NumRecords()
	}
	took := time.Since(began)
	stop()
	return took
}

// benchLevelDB loads the records into a fresh goleveldb database with the
// stores' options, in batches of the restore's size.
//
// The records are generated here so that no other variant runs with them
// on the heap: a large live heap lets the garbage collector leave that much
// garbage too, and the heap figures would measure the pacing, not the code.
func benchLevelDB(b *testing.B, n int, peak *peakHeap) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	keys, vals := benchRecords(n)
	o := DefaultLevelDBOptions()
	db, err := leveldb.OpenFile(b.TempDir(), &opt.Options{
		BlockCacheCapacity: o.BlockCacheBytes, WriteBuffer: o.WriteBufferBytes,
		Filter: filter.NewBloomFilter(o.BloomBits), CompactionTableSize: 4 << 20,
		WriteL0SlowdownTrigger: 16, WriteL0PauseTrigger: 24,
	})
	must(b, err)
	defer db.Close()
	runtime.GC()
	stop := samplePeakHeap(peak)
	began := time.Now()
	// Each batch is written sorted, as the restore writes its own
	// (batchSorter): the ceiling is the fastest this batch size loads, not
	// a slower way that the restore would beat.
	batch := leveldb.MakeBatch(DefaultOptions().RestoreBatchBytes * 9 / 8)
	var sorter batchSorter
	for i := range keys {
		batch.Put(keys[i], vals[i])
		if len(batch.Dump()) >= DefaultOptions().RestoreBatchBytes {
			must(b, db.Write(sorter.sorted(batch), nil))
			batch.Reset()
		}
	}
	must(b, db.Write(sorter.sorted(batch), nil))
	took := time.Since(began)
	stop()
	return took
}

// benchRecords returns n deterministic records: 16-byte random keys,
// 100-byte values.
func benchRecords(n int) (keys, vals [][]byte) {
	r := rand.New(rand.NewPCG(1, 2))
	keys, vals = make([][]byte, n), make([][]byte, n)
	buf := make([]byte, n*116)
	for i := range n {
		rec := buf[i*116 : (i+1)*116]
		for j := 0; j < 116; j += 8 {
			v := r.Uint64()
			for k := 0; k < 8 && j+k < 116; k++ {
				rec[j+k] = byte(v >> (8 * k))
			}
		}
		keys[i], vals[i] = rec[:16:16], rec[16:]
	}
	return keys, vals
}

func produceBenchRecords(b *testing.B, e *env, topic string, n int) {
	p := e.c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(100_000))
	keys, vals := benchRecords(n)
	// A broker restarted under the benchmark (losing the topic) must fail
	// it, not hang it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var failed atomic.Value
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		p.Produce(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: keys[i], Value: vals[i]}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Store(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatalf("produce bench records: %v", err)
	}
}

// peakHeap is what samplePeakHeap saw. base is the live heap before the
// run. peak is the largest heap: live objects and garbage not yet swept.
// live is the largest live heap the garbage collector marked during the
// run (runtime/metrics /gc/heap/live:bytes): the memory the run held on to.
type peakHeap struct{ base, peak, live uint64 }

// samplePeakHeap records into p, until the returned func is called, the
// live heap before the run and the peaks during it (maxima over runs).
func samplePeakHeap(p *peakHeap) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s)
	if base := s[1].Value.Uint64(); base > p.base {
		p.base = base
	}
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			rtmetrics.Read(s)
			p.peak = max(p.peak, s[0].Value.Uint64())
			p.live = max(p.live, s[1].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// processCPU returns the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkActiveWrite measures the active write path per record: Put into
// the write buffer and the changelog producer, with a Flush and Commit
// every 1000 records. It runs against kfake, or the real broker.
// allocs/op includes the producer's own.
func BenchmarkActiveWrite(b *testing.B) {
	e := newEnv(b, 1, "s")
	m := e.open(b.TempDir())
	p := e.producer(kgo.ProducerLinger(5 * time.Millisecond))
	task := e.activeTask(m, 0, p)
	s := task.Store("s")
	keys, vals := benchRecords(10_000)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		must(b, s.Put(keys[i%len(keys)], vals[i%len(vals)]))
		i++
		if i%1000 == 0 {
			must(b, p.Flush(ctx))
			must(b, task.Commit())
		}
	}
	must(b, p.Flush(ctx))
	must(b, task.Commit())
}

// BenchmarkRestoreTasks restores 8 tasks at once (STATE_BENCH_RECORDS in
// total, spread over 8 changelog partitions) through the Manager's one
// consumer: the apply path writes to different stores in parallel.
func BenchmarkRestoreTasks(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("STATE_BENCH_RECORDS")); err == nil && v > 0 {
		n = v
	}
	const tasks = 8
	e := newEnv(b, tasks, "bench")
	topic := ChangelogTopic(e.app, "bench")
	e.open(b.TempDir()).Close()
	p := e.c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(100_000))
	keys, vals := benchRecords(n)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := range n {
		p.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % tasks), Key: keys[i], Value: vals[i]}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Errorf("produce: %v", err)
			}
		})
	}
	must(b, p.Flush(ctx))
	keys, vals = nil, nil
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		m := e.open(b.TempDir())
		var ts []*Task
		for id := range int32(tasks) {
			task, err := m.OpenTask(id, e.stores)
			must(b, err)
			ts = append(ts, task)
		}
		runtime.GC()
		b.StartTimer()
		began := time.Now()
		errs := make(chan error, tasks)
		for _, task := range ts {
			go func() { errs <- task.Restore(context.Background()) }()
		}
		for range tasks {
			must(b, <-errs)
		}
		took += time.Since(began)
		b.StopTimer()
		must(b, m.Close())
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/took.Seconds(), "records/s")
	b.ReportMetric(0, "ns/op")
}
