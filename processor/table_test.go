package processor_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

// shopApp joins orders (key: item, value: order id) with a co-partitioned
// table of prices (key: item), inner and left, emitting by order id.
type shopApp struct {
	c                                  *kafkatest.Cluster
	appID, orders, prices, inner, left string
}

func newShopApp(c *kafkatest.Cluster) *shopApp {
	a := &shopApp{c: c, appID: c.Name("shop"), orders: c.Name("orders"), prices: c.Name("prices"),
		inner: c.Name("inner"), left: c.Name("left")}
	c.CreateTopic(a.orders, 4, nil)
	c.CreateTopic(a.prices, 4, map[string]*string{"cleanup.policy": new("compact")})
	c.CreateTopic(a.inner, 4, nil)
	c.CreateTopic(a.left, 4, nil)
	return a
}

func (a *shopApp) start(t *testing.T, name string, opts processor.Options) *instance {
	t.Helper()
	topo := processor.New(a.appID)
	prices := processor.NewTable(topo, a.prices, codec.String(), codec.String())
	inner := processor.NewOutput(topo, a.inner, codec.String(), codec.String())
	left := processor.NewOutput(topo, a.left, codec.String(), codec.String())
	innerJoin := processor.InnerJoin(prices, func(ctx *processor.Context, item, order, price string) error {
		return inner.Emit(ctx, order, item+"="+price)
	})
	leftJoin := processor.LeftJoin(prices, func(ctx *processor.Context, item, order, price string, found bool) error {
		if !found {
			price = "none"
		}
		return left.Emit(ctx, order, item+"="+price)
	})
	processor.NewInput(topo, a.orders, codec.String(), codec.String(), func(ctx *processor.Context, item, order string) error {
		if err := innerJoin(ctx, item, order); err != nil {
			return err
		}
		return leftJoin(ctx, item, order)
	})
	return runTopology(t, name, topo, opts)
}

// runTopology runs topo in a runtime with opts until the test ends.
func runTopology(t *testing.T, name string, topo *processor.Topology, opts processor.Options) *instance {
	t.Helper()
	rt, err := processor.NewRuntime(topo, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{rt: rt, cancel: cancel, done: make(chan error, 1), name: name}
	go func() { in.done <- rt.Run(ctx) }()
	t.Cleanup(func() { in.stop(t) })
	return in
}

// setPrices writes item-from..item-(to-1) at "<version>-<i>"; a version of
// "" writes tombstones.
func (a *shopApp) setPrices(from, to int, version string) {
	a.c.Produce(versioned(a.prices, "item-", from, to, version)...)
}

// versioned returns records of topic for keys <prefix>from..<prefix>(to-1)
// with values "<version>-<i>", or tombstones when version is "".
func versioned(topic, prefix string, from, to int, version string) []*kgo.Record {
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		r := &kgo.Record{Topic: topic, Key: []byte(prefix + strconv.Itoa(i))}
		if version != "" {
			r.Value = []byte(version + "-" + strconv.Itoa(i))
		}
		recs = append(recs, r)
	}
	return recs
}

// order writes orders first..first+n-1, order i for item i%items.
func (a *shopApp) order(first, n, items int) {
	var recs []*kgo.Record
	for i := first; i < first+n; i++ {
		recs = append(recs, &kgo.Record{Topic: a.orders, Key: []byte("item-" + strconv.Itoa(i%items)),
			Value: []byte("order-" + strconv.Itoa(i))})
	}
	a.c.Produce(recs...)
}

// tableHas reports whether in's active tasks' committed tables have every
// item in [from, to) at version ("": deleted).
func (a *shopApp) tableHas(in *instance, from, to int, version string) bool {
	for i := from; i < to; i++ {
		key := []byte("item-" + strconv.Itoa(i))
		found := false
		var v []byte
		for task := range in.rt.Tasks() {
			rep, ok := in.rt.Replica(task)
			if !ok || rep.Role != processor.RoleActive || rep.Store(a.prices) == nil {
				continue
			}
			val, ok, err := rep.Store(a.prices).Get(key)
			if err != nil {
				return false
			}
			if ok {
				found, v = true, val
			}
		}
		if found != (version != "") || (found && string(v) != version+"-"+strconv.Itoa(i)) {
			return false
		}
	}
	return true
}

// committedValues returns the last committed value of each key of topic
// (it reads past transaction markers).
func committedValues(c *kafkatest.Cluster, topic string) map[string]string {
	last := map[string]string{}
	for _, r := range c.ConsumeAll(topic, kgo.FetchIsolationLevel(kgo.ReadCommitted())) {
		last[string(r.Key)] = string(r.Value)
	}
	return last
}

// expect waits for orders [first, first+n) in both outputs and checks them:
// order i's item is i%items, priced at price(item) ("": the table does not
// have it).
func (a *shopApp) expect(t *testing.T, first, n, items int, price func(item int) string) {
	t.Helper()
	var inner, left map[string]string
	kafkatest.Eventually(t, 2*time.Minute, fmt.Sprintf("orders %d..%d joined", first, first+n-1), func() bool {
		left = committedValues(a.c, a.left)
		for i := first; i < first+n; i++ {
			if _, ok := left["order-"+strconv.Itoa(i)]; !ok {
				return false
			}
		}
		return true
	})
	inner = committedValues(a.c, a.inner) // written in the same commits as left
	for i := first; i < first+n; i++ {
		order, item := "order-"+strconv.Itoa(i), "item-"+strconv.Itoa(i%items)
		p := price(i % items)
		wantLeft, wantInner := item+"=none", ""
		if p != "" {
			wantLeft, wantInner = item+"="+p, item+"="+p
		}
		if left[order] != wantLeft {
			t.Errorf("left join: %s = %q, want %q", order, left[order], wantLeft)
		}
		if inner[order] != wantInner {
			t.Errorf("inner join: %s = %q, want %q (\"\": no output)", order, inner[order], wantInner)
		}
	}
}

// TestTableJoinRestoresBeforeProcessingFollowsUpdatesAndTombstones: a
// stream joined with a co-partitioned table, inner and left. The table is
// restored before the task processes anything (orders see every price
// written before the start); updates and tombstones written while the
// stream runs are applied by the task, and orders written after the task
// applied them see them (the documented rule: tables as of what was
// fetched, never going back); after a restart the table is restored from
// its topic again, and orders see it whole.
// Run under at-least-once and exactly-once (the table's records and
// offsets in the transaction).
func TestTableJoinRestoresBeforeProcessingFollowsUpdatesAndTombstones(t *testing.T) {
	for _, g := range []processor.Guarantee{processor.AtLeastOnce, processor.ExactlyOnceV2} {
		t.Run(string(g), func(t *testing.T) { testTableJoin(t, g) })
	}
}

func testTableJoin(t *testing.T, g processor.Guarantee) {
	c := kafkatest.New(t)
	a := newShopApp(c)
	const items = 20
	a.setPrices(0, 15, "v1") // items 15..19 have no price
	opts := testOptions(t, c.Brokers, "shop")
	opts.Guarantee = g
	opts.SessionTimeout = 6 * time.Second
	processor.SetHeartbeatInterval(&opts, 200*time.Millisecond)
	in := a.start(t, "a", opts)
	kafkatest.Eventually(t, 2*time.Minute, "instance ready", func() bool { return allReady(in) })
	if !a.tableHas(in, 0, 15, "v1") || !a.tableHas(in, 15, items, "") {
		t.Fatal("ready without the prices restored in the tasks' tables")
	}
	a.order(0, 3*items, items)
	a.expect(t, 0, 3*items, items, func(i int) string {
		if i < 15 {
			return "v1-" + strconv.Itoa(i)
		}
		return ""
	})

	// While the stream runs: new prices for 0..4, tombstones for 5..9, and
	// a first price for 15..17.
	a.setPrices(0, 5, "v2")
	a.setPrices(5, 10, "")
	a.setPrices(15, 18, "v2")
	kafkatest.Eventually(t, time.Minute, "the task applied the updates", func() bool {
		return a.tableHas(in, 0, 5, "v2") && a.tableHas(in, 5, 10, "") && a.tableHas(in, 15, 18, "v2")
	})
	v2 := func(i int) string {
		switch {
		case i < 5 || (i >= 15 && i < 18):
			return "v2-" + strconv.Itoa(i)
		case i < 10 || i >= 18:
			return ""
		}
		return "v1-" + strconv.Itoa(i)
	}
	a.order(1000, 3*items, items)
	a.expect(t, 1000, 3*items, items, v2)

	// Restarted on its state directory: restored (only what it missed),
	// including an update written while it was down.
	in.stop(t)
	a.setPrices(10, 12, "v3")
	in2 := a.start(t, "a2", opts)
	kafkatest.Eventually(t, 2*time.Minute, "restarted instance ready", func() bool { return allReady(in2) })
	if !a.tableHas(in2, 10, 12, "v3") || !a.tableHas(in2, 5, 10, "") {
		t.Fatal("restarted instance ready without the table restored")
	}
	a.order(2000, 3*items, items)
	a.expect(t, 2000, 3*items, items, func(i int) string {
		if i == 10 || i == 11 {
			return "v3-" + strconv.Itoa(i)
		}
		return v2(i)
	})
}

// TestTableWithAnotherPartitionCountFailsRunNamingTopicsAndCounts: the
// startup check covers tables.
func TestTableWithAnotherPartitionCountFailsRunNamingTopicsAndCounts(t *testing.T) {
	c := kafkatest.New(t)
	in, tbl := c.Name("tp-in"), c.Name("tp-table")
	c.CreateTopic(in, 4, nil)
	c.CreateTopic(tbl, 2, map[string]*string{"cleanup.policy": new("compact")})
	topo := processor.New(c.Name("tp"))
	processor.NewTable(topo, tbl, codec.String(), codec.String())
	processor.NewInput(topo, in, codec.String(), codec.String(), noop[string, string])
	rt, err := processor.NewRuntime(topo, testOptions(t, c.Brokers, "tp"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = rt.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), in+"=4") || !strings.Contains(err.Error(), "tables "+tbl+"=2") {
		t.Errorf("Run() = %v, want an error naming %s=4 and table %s=2", err, in, tbl)
	}
}

// TestTableJoinIsTimestampAligned: with max.task.idle.ms, an order stamped
// before a price update sees the old price even when both arrive together,
// and an order stamped after it sees the new one.
func TestTableJoinIsTimestampAligned(t *testing.T) {
	c := kafkatest.New(t)
	a := newShopApp(c)
	a.setPrices(0, 1, "v1")
	opts := testOptions(t, c.Brokers, "aligned")
	// Long enough that the order, produced with the update, is fetched
	// within it whichever partition the fetches bring first.
	opts.MaxTaskIdle = 30 * time.Second
	in := a.start(t, "aligned", opts)
	kafkatest.Eventually(t, 2*time.Minute, "instance ready", func() bool { return allReady(in) })
	update := versioned(a.prices, "item-", 0, 1, "v2")[0]
	update.Timestamp = time.Now()
	late := &kgo.Record{Topic: a.orders, Key: []byte("item-0"), Value: []byte("order-0"), Timestamp: update.Timestamp.Add(-time.Hour)}
	c.Produce(update, late)
	a.expect(t, 0, 1, 1, func(int) string { return "v1-0" })
	// With a later update of the same key written too, the task need not
	// idle for the table: the order sees v2 and not v3, stamped after it.
	next := versioned(a.prices, "item-", 0, 1, "v3")[0]
	next.Timestamp = update.Timestamp.Add(2 * time.Second)
	c.Produce(&kgo.Record{Topic: a.orders, Key: []byte("item-0"), Value: []byte("order-1"), Timestamp: update.Timestamp.Add(time.Second)}, next)
	a.expect(t, 1, 1, 1, func(int) string { return "v2-0" })
}

// TestTableIsKeptWarmByStandbys: a table's partitions are stores, so the
// standby replicas of a task hold its table partition and follow it.
func TestTableIsKeptWarmByStandbys(t *testing.T) {
	c := kafkatest.New(t)
	a := newShopApp(c)
	const items = 20
	a.setPrices(0, items, "v1")
	var ins []*instance
	for _, name := range []string{"a", "b"} {
		o := testOptions(t, c.Brokers, name)
		o.Placement.NumStandbyReplicas = 1
		o.SessionTimeout = 6 * time.Second
		processor.SetHeartbeatInterval(&o, 200*time.Millisecond)
		ins = append(ins, a.start(t, name, o))
	}
	// standbysHave reports whether the standby replicas, together, hold
	// every item at version, and cover all 4 tasks.
	standbysHave := func(version string) bool {
		seen, tasks := map[string]bool{}, map[int32]bool{}
		for _, in := range ins {
			for task := range int32(4) {
				rep, ok := in.rt.Replica(task)
				if !ok || rep.Role != processor.RoleStandby || rep.Store(a.prices) == nil {
					continue
				}
				tasks[task] = true
				for i := range items {
					key := "item-" + strconv.Itoa(i)
					if v, found, err := rep.Store(a.prices).Get([]byte(key)); err == nil && found && string(v) == version+"-"+strconv.Itoa(i) {
						seen[key] = true
					}
				}
			}
		}
		return len(tasks) == 4 && len(seen) == items
	}
	kafkatest.Eventually(t, 2*time.Minute, "both ready, every task's table on a standby", func() bool {
		return allReady(ins...) && standbysHave("v1")
	})
	a.setPrices(0, items, "v2")
	kafkatest.Eventually(t, time.Minute, "the standbys follow the table", func() bool { return standbysHave("v2") })
}

// TestTableJoinWithASmallTaskQueueProcessesEverything: orders and table
// updates interleaved, with a task queue far smaller than either, so that
// the tasks' partitions are paused and resumed while records wait for the
// tables: every order is joined (nothing waits forever), each with a price
// its item had.
func TestTableJoinWithASmallTaskQueueProcessesEverything(t *testing.T) {
	c := kafkatest.New(t)
	a := newShopApp(c)
	const items, rounds = 10, 40
	a.setPrices(0, items, "v0")
	opts := testOptions(t, c.Brokers, "small")
	processor.SetQueues(&opts, 8, 8)
	in := a.start(t, "small", opts)
	kafkatest.Eventually(t, 2*time.Minute, "instance ready", func() bool { return allReady(in) })
	for r := range rounds {
		recs := versioned(a.prices, "item-", 0, items, "v"+strconv.Itoa(r+1))
		for i := range 2 * items {
			recs = append(recs, &kgo.Record{Topic: a.orders, Key: []byte("item-" + strconv.Itoa(i%items)),
				Value: []byte("order-" + strconv.Itoa(r*2*items+i))})
		}
		a.c.Produce(recs...)
	}
	n := rounds * 2 * items
	var left map[string]string
	kafkatest.Eventually(t, 2*time.Minute, "every order joined", func() bool {
		left = committedValues(a.c, a.left)
		return len(left) == n
	})
	for order, v := range left {
		item, price, ok := strings.Cut(v, "=")
		if !ok || !strings.HasPrefix(item, "item-") || !strings.HasPrefix(price, "v") || !strings.HasSuffix(price, "-"+strings.TrimPrefix(item, "item-")) {
			t.Errorf("%s = %q, want item-i=v<round>-i", order, v)
		}
	}
}
