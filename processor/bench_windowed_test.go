package processor_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/window"
)

// The windowed benchmarks of bench/driver's windowed section, each run
// alone in its own process:
//
//	go test -run '^$' -bench 'WindowedCount|WindowStoreSize|WallClockTimerLateness' -benchtime 1x -timeout 30m ./processor/
//
// BenchmarkWindowedCount is sized as BenchmarkProcessingCount
// (RACKSTREAM_BENCH_RECORDS, RACKSTREAM_BENCH_KEYS). The other two read
// RACKSTREAM_BENCH_STORE_KEYS [3000], RACKSTREAM_BENCH_TIMER_SECONDS [20],
// RACKSTREAM_BENCH_TIMER_RATE [2000 records/s] and
// RACKSTREAM_BENCH_TIMER_KEYS [10000].

// benchWindow is the windowed count's window: tumbling, one minute, with
// ten seconds of grace. Its input's timestamps span benchWindowSpan.
const (
	benchWindow      = time.Minute
	benchWindowGrace = 10 * time.Second
	benchWindowSpan  = 5 * benchWindow
)

// benchTimedInput creates and fills an input topic of parts partitions
// with records key-<i mod keys>, 100-byte values, whose timestamps rise
// evenly over span in produce order and end about now: each partition's
// are in order, so windows close as the run goes and no record is late.
func benchTimedInput(b *testing.B, c *kafkatest.Cluster, parts int32, records, keys int, span time.Duration) string {
	b.Helper()
	topic := c.Name("bench-win-in")
	c.CreateTopic(topic, parts, nil)
	dropAfter(b, c, topic)
	base := time.Now().Add(-span).Truncate(time.Minute)
	fillBenchInput(b, c, topic, records, keys, func(i int) time.Time {
		return base.Add(time.Duration(int64(span) * int64(i) / int64(records)))
	})
	return topic
}

// windowedRun is one runtime of a windowed count over input, emitting
// every update to output when output is not empty, at-least-once with 1 s
// commits and the record cache off unless tweak changes them.
type windowedRun struct {
	rt       *processor.Runtime
	topo     *processor.Topology
	stateDir string
	handled  atomic.Int64
	cancel   context.CancelFunc
	done     chan error
}

func newWindowedRun(b *testing.B, c *kafkatest.Cluster, input, output string, def window.TimeWindows, tweak func(*processor.Options), opts ...processor.WindowOption) *windowedRun {
	b.Helper()
	r := &windowedRun{topo: processor.New(c.Name("bench-wcount")), done: make(chan error, 1)}
	dropAfter(b, c, r.topo.ApplicationID()+"-counts-changelog", r.topo.ApplicationID()+"-dlq")
	counts := processor.NewWindowedAggregation(r.topo, "counts", def, codec.String(), codec.Int64(),
		processor.Count[string, []byte](), opts...)
	var out *processor.Output[string, processor.WindowValue[int64]]
	if output != "" {
		out = processor.NewWindowedOutput[string, int64](r.topo, output, codec.String())
	}
	h := counts.Handler(out)
	processor.NewInput(r.topo, input, codec.String(), codec.Bytes(), func(ctx *processor.Context, key string, v []byte) error {
		if err := h(ctx, key, v); err != nil {
			return err
		}
		r.handled.Add(1)
		return nil
	})
	o := testOptions(b, c.Brokers, "bench")
	o.CommitInterval = time.Second
	o.Guarantee = processor.AtLeastOnce
	if tweak != nil {
		tweak(&o)
	}
	r.stateDir = o.StateDir
	rt, err := processor.NewRuntime(r.topo, o)
	if err != nil {
		b.Fatal(err)
	}
	r.rt = rt
	return r
}

func (r *windowedRun) start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.rt.Run(ctx) }()
}

// waitHandled waits until records records are handled.
func (r *windowedRun) waitHandled(b *testing.B, records int) {
	b.Helper()
	for deadline := time.Now().Add(20 * time.Minute); r.handled.Load() < int64(records); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d records handled after 20 minutes", r.handled.Load(), records)
		}
	}
}

func (r *windowedRun) stop(b *testing.B) {
	b.Helper()
	r.cancel()
	if err := <-r.done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWindowedCount is the windowed count: tumbling one-minute windows
// with ten seconds of grace over input whose timestamps span five minutes,
// every update emitted (two records per input, the window store's
// changelog and the output), at-least-once, 1 s commits, the record cache
// off, timed as BenchmarkProcessingCount times the count.
func BenchmarkWindowedCount(b *testing.B) {
	c := kafkatest.New(b)
	records := benchRecords()
	input := benchTimedInput(b, c, benchParts, records, benchKeys(), benchWindowSpan)
	output := c.Name("bench-win-out")
	c.CreateTopic(output, benchParts, nil)
	dropAfter(b, c, output)
	def := window.Tumbling(benchWindow.Milliseconds()).WithGrace(benchWindowGrace.Milliseconds())
	for range b.N {
		r := newWindowedRun(b, c, input, output, def, nil)
		measure(b, records, func() {
			r.start()
			r.waitHandled(b, records)
		})
		waitGroupDone(b, c.Admin(), r.topo.ApplicationID(), input)
		r.stop(b)
	}
}

// BenchmarkWindowStoreSize measures the window store's bytes on disk (its
// state directory, after the runtime stopped) at the end of a run whose
// timestamps span six retentions, against a run of one retention's worth
// of the same input: tumbling one-minute windows kept five minutes, two
// records per key and window, RACKSTREAM_BENCH_STORE_KEYS keys, one
// partition, 100 ms commits. Expiry must keep the first within twice the
// second. The store's LevelDB write buffer is 64 KiB: its journal holds up
// to a write buffer of writes whatever the retention, and one retention's
// worth must outweigh it for the ratio to measure expiry.
func BenchmarkWindowStoreSize(b *testing.B) {
	c := kafkatest.New(b)
	keys := benchEnv("RACKSTREAM_BENCH_STORE_KEYS", 3000)
	const retention, perWindow, retentions = 5 * time.Minute, 2, 6
	def := window.Tumbling(time.Minute.Milliseconds())
	smallBuffer := func(o *processor.Options) {
		o.MemoryBytes, o.LevelDB.WriteBufferBytes, o.CommitInterval = processor.Zero, 64<<10, 100*time.Millisecond
	}
	size := func(span time.Duration) int64 {
		records := keys * perWindow * int(span/time.Minute)
		input := benchTimedInput(b, c, 1, records, keys, span)
		r := newWindowedRun(b, c, input, "", def, smallBuffer, processor.WindowRetention(retention))
		r.start()
		r.waitHandled(b, records)
		waitGroupDone(b, c.Admin(), r.topo.ApplicationID(), input)
		r.stop(b)
		return dirBytes(b, r.stateDir)
	}
	for range b.N {
		one := size(retention)
		end := size(retentions * retention)
		b.Logf("window store on disk: %d bytes after one retention, %d after %d", one, end, retentions)
		b.ReportMetric(float64(one)/1e6, "one-retention-MB")
		b.ReportMetric(float64(end)/1e6, "end-MB")
		b.ReportMetric(float64(end)/float64(one), "end/one-retention")
		b.ReportMetric(retentions, "retentions")
	}
	b.ReportMetric(0, "ns/op")
}

// dirBytes is the size of the regular files under dir, and its logged
// breakdown by kind (LevelDB's tables, journals and the rest).
func dirBytes(b *testing.B, dir string) int64 {
	b.Helper()
	var n int64
	kinds := map[string]int64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
			kind := filepath.Ext(path)
			if kind != ".ldb" && kind != ".log" {
				kind = "other"
			}
			kinds[kind] += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatalf("size of %s: %v", dir, err)
	}
	b.Logf("%s: %d bytes: %d in tables (.ldb), %d in journals (.log), %d in other files", dir, n, kinds[".ldb"], kinds[".log"], kinds["other"])
	return n
}

// BenchmarkWallClockTimerLateness measures how late durable wall-clock
// timers fire on healthy tasks: records arrive at RACKSTREAM_BENCH_TIMER_RATE
// per second over RACKSTREAM_BENCH_TIMER_KEYS keys for
// RACKSTREAM_BENCH_TIMER_SECONDS, each setting its key's timer 200 ms
// ahead (replacing the key's earlier one), and each fired timer notes its
// handler's start minus its due time. It reports the percentiles of that.
// A key comes back after keys/rate seconds: past 200 ms, most timers fire.
func BenchmarkWallClockTimerLateness(b *testing.B) {
	c := kafkatest.New(b)
	rate := benchEnv("RACKSTREAM_BENCH_TIMER_RATE", 2000)
	keys := benchEnv("RACKSTREAM_BENCH_TIMER_KEYS", 10_000)
	runFor := time.Duration(benchEnv("RACKSTREAM_BENCH_TIMER_SECONDS", 20)) * time.Second
	const ahead = 200 * time.Millisecond
	input := c.Name("bench-timer-in")
	c.CreateTopic(input, benchParts, nil)
	dropAfter(b, c, input)
	for range b.N {
		var (
			mu      sync.Mutex
			late    []time.Duration
			pending = map[string]int64{} // each key's last timer set (due, ms) until it fires
			handled atomic.Int64
		)
		topo := processor.New(c.Name("bench-timers"))
		dropAfter(b, c, topo.ApplicationID()+"-__time-changelog", topo.ApplicationID()+"-dlq")
		var timers *processor.Timers[string]
		processor.NewInput(topo, input, codec.String(), codec.Bytes(), func(ctx *processor.Context, key string, _ []byte) error {
			due := time.Now().Add(ahead)
			if err := timers.Set(ctx, key, processor.WallClock, due); err != nil {
				return err
			}
			mu.Lock()
			pending[key] = due.UnixMilli()
			mu.Unlock()
			handled.Add(1)
			return nil
		})
		timers = processor.OnTimer(topo, "bench", codec.String(), func(_ *processor.Context, key string, due time.Time) error {
			d := time.Since(due)
			mu.Lock()
			late = append(late, d)
			if pending[key] == due.UnixMilli() {
				delete(pending, key)
			}
			mu.Unlock()
			return nil
		})
		o := testOptions(b, c.Brokers, "bench")
		o.CommitInterval = time.Second
		rt, err := processor.NewRuntime(topo, o)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- rt.Run(ctx) }()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			if ok, _ := rt.Ready(); ok {
				break
			}
			if time.Now().After(deadline) {
				b.Fatal("the runtime was not ready within a minute")
			}
		}
		sent := produceSteadily(b, c, input, keys, rate, runFor)
		// Done when every record is handled and every key's last timer
		// has fired. A key's record handled within 200 ms of its previous
		// one (a burst after a wait) replaces its timer: fewer fire.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			left := len(pending)
			mu.Unlock()
			if handled.Load() >= int64(sent) && left == 0 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d records handled, %d keys' timers not fired, a minute after the last record", handled.Load(), sent, left)
			}
		}
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		slices.Sort(late)
		pct := func(p int) float64 {
			return float64(late[min(len(late)-1, len(late)*p/100)]) / float64(time.Millisecond)
		}
		b.Logf("%d records, %d timers fired: lateness p50 %.1f ms, p99 %.1f ms, max %.1f ms", sent, len(late), pct(50), pct(99), pct(100))
		b.ReportMetric(pct(50), "late-p50-ms")
		b.ReportMetric(pct(99), "late-p99-ms")
		b.ReportMetric(pct(100), "late-max-ms")
		b.ReportMetric(float64(len(late)), "timers")
		mu.Unlock()
	}
	b.ReportMetric(0, "ns/op")
}

// produceSteadily produces rate records/s of key-<i mod keys> to topic, in
// 10 ms slices, for d, and returns how many it produced.
func produceSteadily(b *testing.B, c *kafkatest.Cluster, topic string, keys, rate int, d time.Duration) int {
	b.Helper()
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())))
	defer cl.Close()
	ctx := context.Background()
	var failed atomic.Int64
	start, sent := time.Now(), 0
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for now := range tick.C {
		if now.Sub(start) >= d {
			break
		}
		for due := int(float64(rate) * now.Sub(start).Seconds()); sent < due; sent++ {
			cl.Produce(ctx, &kgo.Record{Key: []byte("key-" + strconv.Itoa(sent%keys)), Value: []byte("x")}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d records not produced", n, sent)
	}
	return sent
}
