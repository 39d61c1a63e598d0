package gokabench

import (
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
)

// TestGokaLoopbackPortsAsAnOutputAndAnInputOnOneTopic is the porting
// guide's answer to goka.Loopback: goka re-keys a record by emitting it to
// its group's loop topic <group>-loop and handling it there with the
// group table of the new key. In Rackstream that is an Output and an Input
// on one topic (created with the inputs' partition count): the emit is
// partitioned like every input, so the loop handler runs in the task that
// owns the new key and reads and writes its stores. Here clicks keyed by
// user are re-keyed by page and counted per page. The record cache must be
// off (statestore.cache.max.bytes=0): it would merge a key's loop events.
func TestGokaLoopbackPortsAsAnOutputAndAnInputOnOneTopic(t *testing.T) {
	const users, pages, clicks = 7, 5, 140
	c := kafkatest.New(t)
	app := c.Name("goka-loop")
	input, loop := c.Name("goka-loop-clicks"), app+"-loop"
	createTopics(t, c, nil, input, loop)

	topo := processor.New(app)
	perPage := processor.NewStore(topo, "table", codec.String(), codec.Int64())
	toLoop := processor.NewOutput(topo, loop, codec.String(), codec.String())
	processor.NewInput(topo, input, codec.String(), codec.String(), func(ctx *processor.Context, user, page string) error {
		return toLoop.Emit(ctx, page, user) // goka: ctx.Loopback(page, user)
	})
	processor.NewInput(topo, loop, codec.String(), codec.String(), func(ctx *processor.Context, page, _ string) error {
		n, _, err := perPage.Get(ctx, page) // goka: ctx.Value() in the Loopback callback
		if err != nil {
			return err
		}
		return perPage.Put(ctx, page, n+1)
	})
	o := processor.DefaultOptions()
	o.Brokers, o.StateDir, o.Partitioner = c.Brokers, t.TempDir(), fnv1a
	o.CommitInterval, o.ReplicationFactor, o.Logger = 100*time.Millisecond, 1, slog.New(slog.DiscardHandler)
	// The record cache merges emits of one key within a commit interval:
	// right for table updates, wrong for a loop of events, each of which
	// must arrive. A loopback runs without it.
	o.CacheMaxBytes = processor.Zero
	rt, err := processor.NewRuntime(topo, o)
	if err != nil {
		t.Fatal(err)
	}
	running := run(rt.Run)
	defer func() {
		if err := running.stop(); err != nil {
			t.Errorf("runtime: %v", err)
		}
	}()

	want := map[string]int64{}
	var recs []*kgo.Record
	for i := range clicks {
		page := "page-" + strconv.Itoa(i%pages)
		recs = append(recs, &kgo.Record{Topic: input, Key: []byte("user-" + strconv.Itoa(i%users)), Value: []byte(page)})
		want[page]++
	}
	if err := c.Client(kgo.RecordPartitioner(partition.Kgo(fnv1a))).ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := c.Admin()
	kafkatest.Eventually(t, time.Minute, "both topics processed and committed", func() bool {
		return sum(c.EndOffsets(loop)) == clicks &&
			kafkatest.CommittedThrough(adm, app, input) && kafkatest.CommittedThrough(adm, app, loop)
	})
	for page, n := range want {
		task := fnv1a.Partition([]byte(page), partitions)
		rep, ok := rt.Replica(task)
		if !ok {
			t.Fatalf("no replica of task %d", task)
		}
		b, found, err := rep.Store("table").Get([]byte(page))
		if got, _ := strconv.ParseInt(string(b), 10, 64); err != nil || !found || got != n {
			t.Errorf("%s: %s (found %v, err %v), want %d", page, b, found, err, n)
		}
	}
}

func sum(m map[int32]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}
