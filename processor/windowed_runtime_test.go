package processor_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/internal/cutdial"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/window"
)

// windowApp counts each key's records in tumbling windows of a second,
// emitting final results, on two partitions. Window number w starts at
// base + w*windowSize, base being a window start near the wall clock: the
// broker deletes a changelog's segments by their records' timestamps, so
// records stamped near the epoch would leave the changelog at its next
// retention check.
type windowApp struct {
	c             *kafkatest.Cluster
	appID         string
	input, output string
	parts         int32
	windowSize    int64
	base          int64 // Unix ms, a multiple of windowSize
	recordsPerWin int   // per key and window
	keys          []string
	closers       []string // a key per partition, for the records that close every window
	emitFinal     bool
	retention     time.Duration // 0: the minimum
}

func newWindowApp(t *testing.T, c *kafkatest.Cluster, final bool) *windowApp {
	a := &windowApp{
		c: c, appID: c.Name("wcount"), input: c.Name("wcount-in"), output: c.Name("wcount-out"),
		parts: 2, windowSize: 1000, recordsPerWin: 10, emitFinal: final,
	}
	a.base = time.Now().UnixMilli() / a.windowSize * a.windowSize
	c.CreateTopic(a.input, a.parts, nil)
	c.CreateTopic(a.output, a.parts, nil)
	for i := range 6 {
		a.keys = append(a.keys, "key-"+strconv.Itoa(i))
	}
	a.closers = make([]string, a.parts)
	for i, found := 0, 0; found < int(a.parts); i++ {
		k := "closer-" + strconv.Itoa(i)
		if p := partition.Murmur2().Partition([]byte(k), a.parts); a.closers[p] == "" {
			a.closers[p] = k
			found++
		}
	}
	return a
}

// at returns the start of window number w, in Unix ms.
func (a *windowApp) at(w int) int64 { return a.base + int64(w)*a.windowSize }

func (a *windowApp) topology() *processor.Topology {
	topo := processor.New(a.appID)
	var opts []processor.WindowOption
	if a.emitFinal {
		opts = append(opts, processor.EmitFinal())
	}
	if a.retention > 0 {
		opts = append(opts, processor.WindowRetention(a.retention))
	}
	counts := processor.NewWindowedAggregation(topo, "counts", window.Tumbling(a.windowSize), codec.String(), codec.Int64(),
		processor.Count[string, string](), opts...)
	out := processor.NewWindowedOutput[string, int64](topo, a.output, codec.String())
	plain := processor.NewStore(topo, "plain", codec.String(), codec.String())
	h := counts.Handler(out)
	processor.NewInput(topo, a.input, codec.String(), codec.String(), func(ctx *processor.Context, k, v string) error {
		if err := plain.Put(ctx, k, v); err != nil {
			return err
		}
		return h(ctx, k, v)
	})
	return topo
}

// produceWindows writes recordsPerWin records of every key into each of
// the windows [from, to) (window numbers), in timestamp order.
func (a *windowApp) produceWindows(t *testing.T, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	step := a.windowSize / int64(a.recordsPerWin)
	for w := from; w < to; w++ {
		for i := range a.recordsPerWin {
			ts := a.at(w) + int64(i)*step
			for _, k := range a.keys {
				recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(ts)})
			}
		}
	}
	a.produce(t, recs)
}

// close writes a record at the start of window number at to every
// partition: every window before it closes.
func (a *windowApp) close(t *testing.T, at int) {
	t.Helper()
	var recs []*kgo.Record
	for _, k := range a.closers {
		recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(a.at(at))})
	}
	a.produce(t, recs)
}

func (a *windowApp) produce(t *testing.T, recs []*kgo.Record) {
	t.Helper()
	cl := a.c.Client(kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())), kgo.DefaultProduceTopic(a.input))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records: %v", len(recs), err)
	}
}

func (a *windowApp) start(t *testing.T, name string, g processor.Guarantee, tweak func(*processor.Options)) *instance {
	t.Helper()
	return startStreaming(t, a.c, name, a.topology(), g, tweak)
}

// results reads the output (read_committed) and counts each result,
// "key [start,end]=n", by how often it appears.
func (a *windowApp) results(t *testing.T) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, r := range a.c.ConsumeAll(a.output, kgo.FetchIsolationLevel(kgo.ReadCommitted())) {
		v, err := codec.JSON[processor.WindowValue[int64]]().Decode(r.Value)
		if err != nil {
			t.Fatalf("output %s@%d: %v", r.Key, r.Offset, err)
		}
		got[fmt.Sprintf("%s [%d,%d]=%d", r.Key, v.Start, v.End, v.Value)]++
	}
	return got
}

// windows is results with each result's value replaced by the largest
// count of its window, when at least recordsPerWin: "key [start,end]=n".
func (a *windowApp) windows(t *testing.T) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, r := range a.c.ConsumeAll(a.output) {
		v, err := codec.JSON[processor.WindowValue[int64]]().Decode(r.Value)
		if err != nil {
			t.Fatalf("output %s@%d: %v", r.Key, r.Offset, err)
		}
		if v.Value >= int64(a.recordsPerWin) {
			got[fmt.Sprintf("%s [%d,%d]=%d", r.Key, v.Start, v.End, a.recordsPerWin)]++
		}
	}
	return got
}

// want is the final result of every key's windows [0, to).
func (a *windowApp) want(to int) []string {
	var out []string
	for w := range to {
		for _, k := range a.keys {
			out = append(out, fmt.Sprintf("%s [%d,%d]=%d", k, a.at(w), a.at(w+1), a.recordsPerWin))
		}
	}
	return out
}

// A windowed count emitting final results moves to another instance in
// the middle of its stream: the first instance loses its connections
// without a final commit (a crash), and a second one with an empty state
// directory (no standby) takes its tasks over, restoring the window store
// and the aggregation's progress from the changelog. Under exactly_once_v2
// every final result appears exactly once, with its full count; under
// at_least_once every window's final result appears (a replay may repeat
// one or count a record twice).
func TestWindowedCountEmitFinalSurvivesAMoveWithoutItsFinalCommit(t *testing.T) {
	for _, g := range []processor.Guarantee{processor.ExactlyOnceV2, processor.AtLeastOnce} {
		t.Run(string(g), func(t *testing.T) {
			c := kafkatest.New(t)
			a := newWindowApp(t, c, true)
			victim := new(cutdial.Dialer)
			first := a.start(t, "w0", g, func(o *processor.Options) {
				o.ClientOpts = append(o.ClientOpts, kgo.Dialer(victim.Dial))
				o.ShutdownTimeout = 2 * time.Second
			})
			kafkatest.Eventually(t, time.Minute, "w0 ready", func() bool { return allReady(first) })
			a.produceWindows(t, 0, 5)
			kafkatest.Eventually(t, time.Minute, "the first windows' final results", func() bool {
				return len(a.results(t)) >= len(a.keys)
			})
			a.produceWindows(t, 5, 8) // in flight when w0 dies
			victim.Cut()
			first.cancel()

			second := a.start(t, "w1", g, nil)
			kafkatest.Eventually(t, 2*time.Minute, "w1 ready", func() bool { return allReady(second) })
			a.produceWindows(t, 8, 10)
			a.close(t, 10) // the next window: with the minimum retention a jump further would hide the last windows, as in Kafka Streams
			want := a.want(10)
			if g != processor.ExactlyOnceV2 {
				// A replay counts some records twice: every window has a
				// final result, of at least its count.
				kafkatest.Eventually(t, 2*time.Minute, "every window's final result", func() bool {
					got := a.windows(t)
					for _, w := range want {
						if got[w] == 0 {
							return false
						}
					}
					return true
				})
				return
			}
			kafkatest.Eventually(t, 2*time.Minute, "every window's final result", func() bool {
				got := a.results(t)
				for _, w := range want {
					if got[w] == 0 {
						return false
					}
				}
				return true
			})
			got := a.results(t)
			for _, w := range want {
				if got[w] != 1 {
					t.Errorf("%s: %d times, want once", w, got[w])
				}
				delete(got, w)
			}
			for r, n := range got {
				t.Errorf("unexpected result %s (%d times)", r, n)
			}
		})
	}
}

// With the record cache on, every update of every window of one key is
// emitted under emit-on-update: windowed outputs are streams, which the
// cache does not merge.
func TestWindowedUpdatesGetPastTheRecordCacheWhole(t *testing.T) {
	c := kafkatest.New(t)
	a := newWindowApp(t, c, false)
	a.keys = a.keys[:1]
	in := a.start(t, "w0", processor.AtLeastOnce, func(o *processor.Options) { o.CommitInterval = time.Hour })
	kafkatest.Eventually(t, time.Minute, "w0 ready", func() bool { return allReady(in) })
	a.produceWindows(t, 0, 3)
	want := map[string]int{}
	for w := range 3 {
		for n := 1; n <= a.recordsPerWin; n++ {
			want[fmt.Sprintf("%s [%d,%d]=%d", a.keys[0], a.at(w), a.at(w+1), n)] = 1
		}
	}
	kafkatest.Eventually(t, time.Minute, "every update of every window", func() bool {
		got := a.results(t)
		for w := range want {
			if got[w] == 0 {
				return false
			}
		}
		return true
	})
	// A record for the first window, closed by now: dropped, counted,
	// dead-lettered.
	a.produce(t, []*kgo.Record{{Key: []byte(a.keys[0]), Value: []byte("x"), Timestamp: time.UnixMilli(a.at(0) + 1)}})
	kafkatest.Eventually(t, time.Minute, "the late record counted", func() bool {
		return counterValue(t, in.reg, "rackstream_window_late_records_total") == 1
	})
	var dl []*kgo.Record
	kafkatest.Eventually(t, time.Minute, "the late record dead-lettered", func() bool {
		dl = c.ConsumeAll(a.appID + "-dlq")
		return len(dl) > 0
	})
	if len(dl) != 1 || headerOf(dl[0], processor.HeaderDLQStage) != processor.StageLate {
		t.Errorf("dead letters %v, want the late record with stage late", dl)
	}
	if p := c.TopicConfig(a.appID+"-counts-changelog", "cleanup.policy"); p != "compact,delete" {
		t.Errorf("window store changelog cleanup.policy=%s, want compact,delete", p)
	}
	if r := c.TopicConfig(a.appID+"-counts-changelog", "retention.ms"); r != strconv.FormatInt(a.windowSize+processor.DefaultChangelogAdditionalRetention.Milliseconds(), 10) {
		t.Errorf("window store changelog retention.ms=%s, want the window size plus a day", r)
	}
}

// A replica's window store views answer a key's windows in a time range,
// and every key's windows in a time range, read-only: the committed view
// once the task commits, the fresh view at once.
func TestReplicaReadsWindowsByKeyAndTimeRange(t *testing.T) {
	c := kafkatest.New(t)
	a := newWindowApp(t, c, false)
	a.retention = time.Hour
	in := a.start(t, "w0", processor.AtLeastOnce, nil)
	kafkatest.Eventually(t, time.Minute, "w0 ready", func() bool { return allReady(in) })
	a.produceWindows(t, 0, 4)
	key := a.keys[0]
	task := partition.Murmur2().Partition([]byte(key), a.parts)
	var ws []processor.StoredWindow
	for _, view := range []string{"fresh", "committed"} {
		kafkatest.Eventually(t, time.Minute, "the key's windows, "+view, func() bool {
			rep, ok := in.rt.Replica(task)
			if !ok {
				return false
			}
			read := rep.Store("counts").Windows
			if view == "fresh" {
				read = rep.Fresh("counts").Windows
			}
			var err error
			if ws, err = read([]byte(key), a.at(1), a.at(2)); err != nil {
				t.Fatal(err)
			}
			return len(ws) == 2 && string(ws[1].Value) == strconv.Itoa(a.recordsPerWin)
		})
	}
	if ws[0].Start != a.at(1) || ws[0].End != a.at(2) || ws[1].Start != a.at(2) || string(ws[0].Value) != strconv.Itoa(a.recordsPerWin) {
		t.Fatalf("windows of %s in windows [1, 2]: %+v", key, ws)
	}
	var onTask int
	for _, k := range a.keys {
		if partition.Murmur2().Partition([]byte(k), a.parts) == task {
			onTask++
		}
	}
	// The committed view holds window 3 of every key on the task once the
	// task has committed past the last of them; until then it may hold fewer.
	rep, _ := in.rt.Replica(task)
	var all []processor.StoredWindow
	kafkatest.Eventually(t, time.Minute, "every key's windows starting at window 3, committed", func() bool {
		var err error
		if all, err = rep.Store("counts").AllWindows(a.at(3), a.at(3)); err != nil {
			t.Fatal(err)
		}
		if len(all) > onTask {
			t.Fatalf("every key's windows starting at window 3 on task %d: %d, more than the %d keys there", task, len(all), onTask)
		}
		return len(all) == onTask
	})
	for i := 1; i < len(all); i++ {
		if string(all[i-1].Key) >= string(all[i].Key) {
			t.Fatalf("windows not in key order: %q before %q", all[i-1].Key, all[i].Key)
		}
	}
	if _, err := rep.Store("plain").Windows([]byte(key), 0, 1); err == nil {
		t.Fatal("a window read of a key-value store succeeded")
	}
	if info := topologyStore(a.topology(), "counts"); info.Windows != "time" {
		t.Fatalf("StoreInfo.Windows = %q, want time", info.Windows)
	}
}

func topologyStore(topo *processor.Topology, name string) processor.StoreInfo {
	for _, s := range topo.Stores() {
		if s.Name == name {
			return s
		}
	}
	return processor.StoreInfo{}
}
