package kstreams

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor/kafkaref"
	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
)

// The run is sized by these environment variables (defaults in brackets):
//
//	RACKSTREAM_KSTREAMS_RECORDS      input records [200000]
//	RACKSTREAM_KSTREAMS_KEYS         distinct keys [20000]
//	RACKSTREAM_KSTREAMS_VALUE_BYTES  value size [100]
//	RACKSTREAM_KSTREAMS_ROUNDS       rounds per instance count; each runs both, alternating who goes first [3]
//	RACKSTREAM_KSTREAMS_INSTANCES    instance counts to run, comma-separated [1]; "1,2" adds two JVMs vs two runtimes
//	RACKSTREAM_KSTREAMS_STANDBYS     num.standby.replicas [0]
//	RACKSTREAM_KSTREAMS_COMMIT_MS    commit.interval.ms [1000]
//	RACKSTREAM_KSTREAMS_CACHE_BYTES  statestore.cache.max.bytes [10485760, Kafka Streams' default]
//	RACKSTREAM_KSTREAMS_THREADS      num.stream.threads of each JVM [CPUs / instances, at least 1]
//	RACKSTREAM_KSTREAMS_JAVA_OPTS    JVM options, space-separated [none]
//	RACKSTREAM_KSTREAMS_ENGINES      engines to run, comma-separated [kafka-streams,rackstream]; bench/driver runs one per process
//	RACKSTREAM_KSTREAMS_GUARANTEE    processing.guarantee of both engines [at_least_once]; or exactly_once_v2
//	RACKSTREAM_KSTREAMS_WINDOW_MS    above 0: a windowed count, tumbling windows of this size, instead of the count [0]
//	RACKSTREAM_KSTREAMS_GRACE_MS     the windows' grace [0]
//	RACKSTREAM_KSTREAMS_SPAN_MS      the input's timestamps spread evenly over this span, ending now [5 windows]
//	RACKSTREAM_KSTREAMS_RESTORE      0: no restore after each run [1]
type settings struct {
	records, keys, valueBytes, rounds int
	instances                         []int
	standbys                          int
	commit                            time.Duration
	cacheBytes                        int64
	threads                           int // 0: CPUs / instances
	javaOpts                          []string
	engines                           []string
	guarantee                         string
	// window, grace and span make the job a windowed count (windowed_test.go)
	// when window is above 0; base is the first input record's timestamp.
	window, grace, span time.Duration
	base                time.Time
	restore             bool
}

const partitions = 12

func loadSettings(b *testing.B) settings {
	b.Helper()
	num := func(name string, def int) int {
		v := os.Getenv("RACKSTREAM_KSTREAMS_" + name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("RACKSTREAM_KSTREAMS_%s=%q: want a non-negative integer", name, v)
		}
		return n
	}
	s := settings{
		records:    num("RECORDS", 200_000),
		keys:       num("KEYS", 20_000),
		valueBytes: num("VALUE_BYTES", 100),
		rounds:     num("ROUNDS", 3),
		standbys:   num("STANDBYS", 0),
		commit:     time.Duration(num("COMMIT_MS", 1000)) * time.Millisecond,
		cacheBytes: int64(num("CACHE_BYTES", 10<<20)),
		threads:    num("THREADS", 0),
		javaOpts:   strings.Fields(os.Getenv("RACKSTREAM_KSTREAMS_JAVA_OPTS")),
		engines:    strings.Split(cmp(os.Getenv("RACKSTREAM_KSTREAMS_ENGINES"), "kafka-streams,rackstream"), ","),
		guarantee:  cmp(os.Getenv("RACKSTREAM_KSTREAMS_GUARANTEE"), "at_least_once"),
		window:     time.Duration(num("WINDOW_MS", 0)) * time.Millisecond,
		grace:      time.Duration(num("GRACE_MS", 0)) * time.Millisecond,
		restore:    num("RESTORE", 1) != 0,
	}
	s.span = time.Duration(num("SPAN_MS", int(5*s.window/time.Millisecond))) * time.Millisecond
	if s.window > 0 {
		// Ending now: the broker takes the timestamps, and the changelogs'
		// time retention deletes none of them during the run.
		s.base = time.Now().Add(-s.span).Truncate(s.window)
	}
	for _, f := range strings.Split(cmp(os.Getenv("RACKSTREAM_KSTREAMS_INSTANCES"), "1"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("RACKSTREAM_KSTREAMS_INSTANCES=%q: want instance counts like 1,2", os.Getenv("RACKSTREAM_KSTREAMS_INSTANCES"))
		}
		s.instances = append(s.instances, n)
	}
	if s.records == 0 || s.keys == 0 || s.rounds == 0 || s.valueBytes < 8 {
		b.Fatalf("RACKSTREAM_KSTREAMS_*: records, keys and rounds must be positive and values at least 8 bytes")
	}
	return s
}

func cmp(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// BenchmarkCountSideBySide runs the per-key count on Kafka Streams and on
// Rackstream, interleaved, and reports the medians of both and their ratio:
// processing throughput and restore time. Run it with -benchtime 1x (one
// iteration is all the rounds).
func BenchmarkCountSideBySide(b *testing.B) {
	if os.Getenv(kafkatest.EnvBrokers) == "" {
		b.Skip("skipping: the Kafka Streams side-by-side needs the real broker: set RACKSTREAM_TEST_BROKERS (deploy/local/kafka.sh status)")
	}
	ctx := context.Background()
	jar, err := Build(ctx, ".")
	if errors.Is(err, kafkaref.ErrNoToolchain) {
		b.Skipf("skipping the Kafka Streams side-by-side: %v", err)
	}
	if err != nil {
		b.Fatal(err)
	}
	s := loadSettings(b)
	c := kafkatest.New(b)
	input := c.Name("kstreams-in")
	c.CreateTopic(input, partitions, nil)
	b.Cleanup(func() { deleteTopics(c, input) })
	produceInput(b, c, input, s)
	b.Logf("input %s: %d records, %d keys, %d-byte values, %d partitions; commit.interval.ms=%d, statestore.cache.max.bytes=%d, num.standby.replicas=%d",
		input, s.records, s.keys, s.valueBytes, partitions, s.commit.Milliseconds(), s.cacheBytes, s.standbys)
	if s.window > 0 {
		b.Logf("a windowed count: tumbling windows of %v with %v of grace, the timestamps rising evenly over %v from %s",
			s.window, s.grace, s.span, s.base.UTC().Format(time.RFC3339))
	}

	b.ResetTimer()
	for range b.N {
		for _, n := range s.instances {
			var engines []engine
			for _, e := range []engine{kafkaStreams{jar: jar, s: s}, rackstream{s: s}} {
				if slices.Contains(s.engines, e.name()) {
					engines = append(engines, e)
				}
			}
			if len(engines) == 0 {
				b.Fatalf("RACKSTREAM_KSTREAMS_ENGINES=%q names no engine (kafka-streams, rackstream)", strings.Join(s.engines, ","))
			}
			results := map[string][]result{}
			for round := range s.rounds {
				order := engines
				if round%2 == 1 {
					order = slices.Clone(engines)
					slices.Reverse(order)
				}
				for _, e := range order {
					r := runOnce(b, c, e, input, n, s)
					b.Logf("%d instance(s), round %d, %-13s %s", n, round+1, e.name()+":", r)
					results[e.name()] = append(results[e.name()], r)
				}
			}
			report(b, n, s, results["kafka-streams"], results["rackstream"])
		}
	}
}

// produceInput fills the input topic: key-<i mod keys>, values with the
// record's index in their first 8 bytes, murmur2-partitioned (Kafka's
// default, so Kafka Streams' groupByKey needs no repartition).
func produceInput(b *testing.B, c *kafkatest.Cluster, topic string, s settings) {
	b.Helper()
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(100_000))
	defer cl.Close()
	ctx := context.Background()
	errs := make(chan error, 1)
	for i := range s.records {
		v := make([]byte, s.valueBytes)
		binary.BigEndian.PutUint64(v, uint64(i))
		r := &kgo.Record{Key: []byte("key-" + strconv.Itoa(i%s.keys)), Value: v}
		if s.window > 0 {
			r.Timestamp = s.recordTime(i)
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
		b.Fatalf("produce the input: %v", err)
	default:
	}
}

// An engine runs the count as some number of instances of one application.
type engine interface {
	name() string
	// start launches one instance on stateDir; index numbers it among its
	// application's instances.
	start(ctx context.Context, c *kafkatest.Cluster, app, input, output, stateDir string, index, of int) (instance, error)
}

// An instance is one running member of the count's application.
type instance interface {
	// waitRunning waits until the instance is assigned and restored and
	// returns when it was asked to start (after process start-up) and
	// when it was running, and the records it restored and the span of the
	// restore itself if it can tell (-1 if not).
	waitRunning(ctx context.Context) (started, running time.Time, restored int64, span time.Duration, err error)
	// err is non-nil once the instance has failed.
	err() error
	close(ctx context.Context) error
	// cpu is the CPU time its process used, once closed; -1 for an
	// instance inside this process (the run measures the process's).
	cpu() time.Duration
	// rss is its process's peak resident set in bytes, once closed; -1
	// for an instance inside this process.
	rss() int64
}

// result is one engine's run: the count from scratch, then a restore.
type result struct {
	launchToRunning time.Duration // first instance launched to first running: process start-up + group join
	processing      time.Duration // first instance running to every input offset committed
	total           time.Duration // first instance launched to every input offset committed
	changelog       int64         // records in the changelog after the count
	outputs         int64         // records in the output topic after the count
	cpu             time.Duration // CPU time of the count: its processes from launch to close
	rss             int64         // the largest peak RSS of the count's processes, bytes (-1: in this process)
	restoreRSS      int64         // peak RSS of the restoring process, bytes (-1: in this process)
	restore         time.Duration // a fresh instance, empty state dir: start to running
	restored        int64         // records it restored
	restoreSpan     time.Duration // Kafka Streams' restore listener: first restore start to last end (-1: not reported)
}

func (r result) recordsPerSec(records int) float64 {
	return float64(records) / r.processing.Seconds()
}

func (r result) String() string {
	span := ""
	if r.restoreSpan >= 0 {
		span = fmt.Sprintf(", restore listener span %v", r.restoreSpan.Round(time.Millisecond))
	}
	return fmt.Sprintf("start-up %6v  processing %7v  total %7v  CPU %7v  changelog %7d  outputs %7d  restore %6v (%d records%s)",
		r.launchToRunning.Round(time.Millisecond), r.processing.Round(time.Millisecond), r.total.Round(time.Millisecond),
		r.cpu.Round(time.Millisecond), r.changelog, r.outputs, r.restore.Round(time.Millisecond), r.restored, span)
}

// runOnce runs e's count with n instances on a fresh application id until
// the group has committed the input's end offsets, checks the output, then
// times a restore of the whole store by one new instance on an empty state
// directory, and deletes the application's topics and group.
func runOnce(b *testing.B, c *kafkatest.Cluster, e engine, input string, n int, s settings) result {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	app := c.Name("kstreams-" + e.name())
	output := app + "-out"
	changelog := app + "-counts-changelog"
	c.CreateTopic(output, partitions, nil)
	defer deleteTopics(c, output, changelog, app+"-dlq")
	defer func() {
		if _, err := c.Admin().DeleteGroup(context.Background(), app); err != nil {
			b.Logf("delete group %s: %v", app, err)
		}
	}()
	dirs := b.TempDir()
	defer os.RemoveAll(dirs)

	var r result
	var insts []instance
	closeAll := func() {
		for _, in := range insts {
			if err := in.close(ctx); err != nil {
				b.Fatalf("%s: close: %v", e.name(), err)
			}
		}
	}
	defer func() {
		for _, in := range insts {
			in.close(ctx)
		}
	}()
	progress("%s: %d instance(s) of %s counting", e.name(), n, app)
	selfCPU := processCPU(b)
	launched := time.Now()
	for i := range n {
		in, err := e.start(ctx, c, app, input, output, filepath.Join(dirs, "count-"+strconv.Itoa(i)), i, n)
		if err != nil {
			b.Fatal(err)
		}
		insts = append(insts, in)
	}
	firstRunning := time.Time{}
	for _, in := range insts {
		_, running, _, _, err := in.waitRunning(ctx)
		if err != nil {
			b.Fatalf("%s: %v", e.name(), err)
		}
		if firstRunning.IsZero() || running.Before(firstRunning) {
			firstRunning = running
		}
	}
	progress("%s: running after %v", e.name(), firstRunning.Sub(launched).Round(time.Millisecond))
	done := waitCommitted(b, ctx, c.Admin(), app, input, insts)
	progress("%s: all offsets committed after %v", e.name(), done.Sub(launched).Round(time.Millisecond))
	r.launchToRunning = firstRunning.Sub(launched)
	r.processing = done.Sub(firstRunning)
	r.total = done.Sub(launched)
	closeAll()
	r.rss = -1
	for _, in := range insts {
		r.rss = max(r.rss, in.rss())
		if c := in.cpu(); c >= 0 {
			r.cpu += c
		} else {
			r.cpu += processCPU(b) - selfCPU
			selfCPU = processCPU(b) // count this process once
		}
	}
	insts = nil
	r.changelog = sum(c.EndOffsets(changelog))
	r.outputs = sum(c.EndOffsets(output))
	if s.window > 0 {
		checkWindowedCounts(b, c, e.name(), output, s)
	} else {
		checkCounts(b, c, e.name(), output, s)
	}
	if !s.restore {
		return r
	}

	progress("%s: restoring on an empty state dir", e.name())
	in, err := e.start(ctx, c, app, input, output, filepath.Join(dirs, "restore"), 0, 1)
	if err != nil {
		b.Fatal(err)
	}
	insts = append(insts, in)
	started, running, restored, span, err := in.waitRunning(ctx)
	if err != nil {
		b.Fatalf("%s restore: %v", e.name(), err)
	}
	r.restore, r.restored, r.restoreSpan = running.Sub(started), restored, span
	if r.restored < 0 {
		r.restored = r.changelog // an empty state dir restores the whole changelog
	}
	closeAll()
	r.restoreRSS = in.rss()
	insts = nil
	return r
}

// waitCommitted polls the group's committed offsets until they reach the
// input's end offsets, and returns when they did.
func waitCommitted(b *testing.B, ctx context.Context, adm *kadm.Client, group, topic string, insts []instance) time.Time {
	b.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		b.Fatalf("end offsets of %s: %v", topic, err)
	}
	for {
		for _, in := range insts {
			if err := in.err(); err != nil {
				b.Fatalf("an instance of %s failed: %v", group, err)
			}
		}
		committed, err := adm.FetchOffsets(ctx, group)
		now := time.Now()
		if err == nil {
			done := true
			ends.Each(func(o kadm.ListedOffset) {
				if c, ok := committed.Lookup(o.Topic, o.Partition); o.Offset > 0 && (!ok || c.At < o.Offset) {
					done = false
				}
			})
			if done {
				return now
			}
		}
		select {
		case <-ctx.Done():
			b.Fatalf("group %s did not commit the end of %s: %v", group, topic, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkCounts reads the output topic and requires every key's last count
// to be its number of input records: the run did the whole job (with no
// failure, at-least-once counts exactly).
func checkCounts(b *testing.B, c *kafkatest.Cluster, name, output string, s settings) {
	b.Helper()
	last := make(map[string]int64, s.keys)
	for _, r := range c.ConsumeAll(output) {
		if len(r.Value) != 8 {
			b.Fatalf("%s: output %s has a %d-byte value for %q, want an 8-byte long", name, output, len(r.Value), r.Key)
		}
		last[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
	}
	if len(last) != s.keys {
		b.Fatalf("%s: output %s has counts for %d keys, want %d", name, output, len(last), s.keys)
	}
	for k := range s.keys {
		key := "key-" + strconv.Itoa(k)
		want := int64(s.records / s.keys)
		if k < s.records%s.keys {
			want++
		}
		if last[key] != want {
			b.Fatalf("%s: output %s: last count of %s is %d, want %d", name, output, key, last[key], want)
		}
	}
}

// progress tells the person waiting what the run is doing: go test prints
// a benchmark's log only when it ends.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000")+" "+format+"\n", args...)
}

// processCPU is this process's CPU time so far (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sum(offsets map[int32]int64) int64 {
	var n int64
	for _, o := range offsets {
		n += o
	}
	return n
}

func deleteTopics(c *kafkatest.Cluster, topics ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	c.Admin().DeleteTopics(ctx, topics...) // missing ones (no DLQ on the Kafka Streams side) are fine
}

// report logs the medians as a markdown table and reports them as metrics.
func report(b *testing.B, n int, s settings, ks, rs []result) {
	b.Helper()
	med := func(rs []result, f func(result) float64) float64 {
		if len(rs) == 0 {
			return 0 // an engine not run (RACKSTREAM_KSTREAMS_ENGINES)
		}
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		slices.Sort(xs)
		if len(xs)%2 == 1 {
			return xs[len(xs)/2]
		}
		return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	ratios := func(f func(result) float64) float64 { // the median of the rounds' Rackstream/Kafka Streams ratios
		var xs []result
		for i := range min(len(ks), len(rs)) {
			xs = append(xs, result{processing: time.Duration(f(rs[i]) / f(ks[i]) * float64(time.Second))})
		}
		return med(xs, func(r result) float64 { return r.processing.Seconds() })
	}
	rate := func(r result) float64 { return r.recordsPerSec(s.records) }
	rows := []struct {
		name string
		f    func(result) float64
		unit string
	}{
		{"processing, records/s", rate, "%.0f"},
		{"processing time, ms", func(r result) float64 { return ms(r.processing) }, "%.0f"},
		{"launch to running, ms", func(r result) float64 { return ms(r.launchToRunning) }, "%.0f"},
		{"launch to all committed, ms", func(r result) float64 { return ms(r.total) }, "%.0f"},
		{"CPU of the count (launch to close), s", func(r result) float64 { return r.cpu.Seconds() }, "%.1f"},
		{"changelog records", func(r result) float64 { return float64(r.changelog) }, "%.0f"},
		{"output records", func(r result) float64 { return float64(r.outputs) }, "%.0f"},
		{"restore (start to running), ms", func(r result) float64 { return ms(r.restore) }, "%.0f"},
		{"records restored", func(r result) float64 { return float64(r.restored) }, "%.0f"},
	}
	var t strings.Builder
	fmt.Fprintf(&t, "%d instance(s) each, %d rounds, medians:\n\n| figure | Kafka Streams 4.4.0 | Rackstream | Rackstream / Kafka Streams (median of rounds) |\n|---|---:|---:|---:|\n", n, len(ks))
	for _, row := range rows {
		fmt.Fprintf(&t, "| %s | "+row.unit+" | "+row.unit+" | %.2f |\n", row.name, med(ks, row.f), med(rs, row.f), ratios(row.f))
	}
	fmt.Fprintf(&t, "\nKafka Streams' restore listener span (first restore start to last restore end, inside the restore above), median: %.0f ms\n",
		med(ks, func(r result) float64 { return ms(r.restoreSpan) }))
	b.Log("\n" + t.String())
	suffix := ""
	if n > 1 {
		suffix = "-x" + strconv.Itoa(n)
	}
	for _, e := range []struct {
		name string
		rs   []result
	}{{"kstreams", ks}, {"rackstream", rs}} {
		if len(e.rs) == 0 {
			continue
		}
		b.ReportMetric(med(e.rs, rate), e.name+"-records/s"+suffix)
		b.ReportMetric(med(e.rs, func(r result) float64 { return ms(r.restore) }), e.name+"-restore-ms"+suffix)
		b.ReportMetric(med(e.rs, func(r result) float64 { return r.cpu.Seconds() * 1e6 / float64(s.records) }), e.name+"-cpu-µs/record"+suffix)
		if e.name == "kstreams" { // the JVMs' own figures; Rackstream runs in this process
			b.ReportMetric(med(e.rs, func(r result) float64 { return float64(r.rss) / 1e6 }), e.name+"-peak-rss-MB"+suffix)
			b.ReportMetric(med(e.rs, func(r result) float64 { return float64(r.restoreRSS) / 1e6 }), e.name+"-restore-peak-rss-MB"+suffix)
			b.ReportMetric(med(e.rs, func(r result) float64 { return ms(r.restoreSpan) }), e.name+"-restore-span-ms"+suffix)
		}
		b.ReportMetric(med(e.rs, func(r result) float64 { return float64(r.restored) }), e.name+"-restored"+suffix)
	}
	if len(ks) > 0 && len(rs) > 0 {
		b.ReportMetric(ratios(rate), "throughput-ratio"+suffix)
	}
	b.ReportMetric(0, "ns/op") // one op is the whole run: meaningless
}

// kafkaStreams runs the Java program, one JVM per instance.
type kafkaStreams struct {
	jar string
	s   settings
}

func (kafkaStreams) name() string { return "kafka-streams" }

func (k kafkaStreams) start(ctx context.Context, c *kafkatest.Cluster, app, input, output, stateDir string, _, of int) (instance, error) {
	threads := k.s.threads
	if threads == 0 {
		threads = max(1, runtime.NumCPU()/of)
	}
	p, err := StartPeer(ctx, PeerConfig{
		Jar: k.jar, JavaOpts: k.s.javaOpts, Bootstrap: strings.Join(c.Brokers, ","),
		ApplicationID: app, Input: input, Output: output, StateDir: stateDir,
		Props: map[string]string{
			"num.standby.replicas":       strconv.Itoa(k.s.standbys),
			"commit.interval.ms":         strconv.FormatInt(k.s.commit.Milliseconds(), 10),
			"statestore.cache.max.bytes": strconv.FormatInt(k.s.cacheBytes, 10),
			"num.stream.threads":         strconv.Itoa(threads),
			"processing.guarantee":       k.s.guarantee,
		},
		Window: k.s.window, Grace: k.s.grace,
	})
	if err != nil {
		return nil, err
	}
	return jvm{p}, nil
}

type jvm struct{ p *Peer }

func (j jvm) waitRunning(ctx context.Context) (time.Time, time.Time, int64, time.Duration, error) {
	started, running, r, err := j.p.WaitRunning(ctx)
	return started, running, r.Records, r.Span, err
}
func (j jvm) err() error                      { return j.p.Err() }
func (j jvm) close(ctx context.Context) error { return j.p.Close(ctx) }
func (j jvm) cpu() time.Duration              { return j.p.CPU() }
func (j jvm) rss() int64                      { return j.p.MaxRSS() }

// rackstream runs the same count with the processor package, one Runtime
// per instance, in this process.
type rackstream struct{ s settings }

func (rackstream) name() string { return "rackstream" }

func (e rackstream) start(ctx context.Context, c *kafkatest.Cluster, app, input, output, stateDir string, _, _ int) (instance, error) {
	topo := processor.New(app)
	if e.s.window > 0 {
		windowedCount(topo, input, output, e.s)
	} else {
		counts := processor.NewStore(topo, "counts", codec.String(), longCodec{})
		out := processor.NewOutput(topo, output, codec.String(), longCodec{})
		processor.NewInput(topo, input, codec.String(), codec.Bytes(), func(ctx *processor.Context, key string, _ []byte) error {
			n, _, err := counts.Get(ctx, key)
			if err != nil {
				return err
			}
			n++
			if err := counts.Put(ctx, key, n); err != nil {
				return err
			}
			return out.Emit(ctx, key, n)
		})
	}
	o := processor.DefaultOptions()
	o.Brokers, o.ClientOpts, o.StateDir = c.Brokers, c.ClientOpts(), stateDir
	o.Placement.NumStandbyReplicas, o.CommitInterval, o.CacheMaxBytes = e.s.standbys, processor.Exactly(e.s.commit), processor.Exactly(e.s.cacheBytes)
	o.Guarantee = processor.Guarantee(e.s.guarantee) // the same processing.guarantee as Kafka Streams'
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rt, err := processor.NewRuntime(topo, o)
	if err != nil {
		return nil, fmt.Errorf("rackstream: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	in := &goRuntime{rt: rt, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{}), started: time.Now()}
	go func() {
		in.runErr = rt.Run(runCtx)
		close(in.done)
	}()
	go in.watchReady(runCtx)
	return in, nil
}

type goRuntime struct {
	rt      *processor.Runtime
	cancel  context.CancelFunc
	done    chan struct{} // closed when Run returned, with runErr
	runErr  error
	ready   chan struct{} // closed when first ready, at readyAt
	readyAt time.Time
	started time.Time
}

// watchReady records when the runtime is first ready (assigned, restored,
// running), polling every 2ms: with several instances it may be ready
// only for a moment before the next rebalance, and processes meanwhile.
func (g *goRuntime) watchReady(ctx context.Context) {
	for {
		if ok, _ := g.rt.Ready(); ok && g.rt.Tasks() > 0 {
			g.readyAt = time.Now()
			close(g.ready)
			return
		}
		select {
		case <-g.done:
			return
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func (g *goRuntime) waitRunning(ctx context.Context) (time.Time, time.Time, int64, time.Duration, error) {
	select {
	case <-g.ready:
		return g.started, g.readyAt, -1, -1, nil
	case <-g.done:
		return g.started, time.Time{}, -1, -1, fmt.Errorf("rackstream: Run returned before ready: %v", g.runErr)
	case <-ctx.Done():
		_, reason := g.rt.Ready()
		return g.started, time.Time{}, -1, -1, fmt.Errorf("rackstream: not ready (%s): %w", reason, ctx.Err())
	}
}

func (g *goRuntime) err() error {
	select {
	case <-g.done:
		return fmt.Errorf("rackstream: Run returned: %v", g.runErr)
	default:
		return nil
	}
}

func (g *goRuntime) cpu() time.Duration { return -1 }
func (g *goRuntime) rss() int64         { return -1 }

func (g *goRuntime) close(ctx context.Context) error {
	g.cancel()
	select {
	case <-g.done:
		return g.runErr
	case <-ctx.Done():
		return fmt.Errorf("rackstream: waiting for Run to return: %w", ctx.Err())
	}
}

// longCodec is Kafka's LongSerde (8 bytes, big-endian), so that both sides
// write the same bytes to the changelog and the output.
type longCodec struct{}

func (longCodec) Encode(v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(v)), nil
}
func (longCodec) AppendEncode(dst []byte, v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(dst, uint64(v)), nil
}
func (longCodec) Decode(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("decode long: %d bytes, want 8", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}
