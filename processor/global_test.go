package processor_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/state"
)

// enrichApp joins a stream of orders (key: order id, value: user id) with
// a global table of user names, by the user id the handler takes from the
// record's value: the orders are not partitioned by user.
type enrichApp struct {
	c                    *kafkatest.Cluster
	appID, users, orders string
	output               string

	mu   sync.Mutex
	seen map[string]map[string]bool // instance -> user ids it looked up and found
}

func newEnrichApp(t *testing.T, c *kafkatest.Cluster) *enrichApp {
	a := &enrichApp{c: c, appID: c.Name("enrich"), users: c.Name("users"), orders: c.Name("orders"),
		output: c.Name("enriched"), seen: map[string]map[string]bool{}}
	c.CreateTopic(a.users, 3, map[string]*string{"cleanup.policy": new("compact")})
	c.CreateTopic(a.orders, 4, nil)
	c.CreateTopic(a.output, 4, nil)
	return a
}

func (a *enrichApp) start(t *testing.T, name string, opts processor.Options) *instance {
	t.Helper()
	topo := processor.New(a.appID)
	users := processor.NewGlobalTable(topo, a.users, codec.String(), codec.String())
	out := processor.NewOutput(topo, a.output, codec.String(), codec.String())
	processor.NewInput(topo, a.orders, codec.String(), codec.String(), func(ctx *processor.Context, order, user string) error {
		userName, found, err := users.Get(ctx, user)
		if err != nil {
			return err
		}
		if !found {
			userName = "unknown"
		} else {
			a.mu.Lock()
			if a.seen[name] == nil {
				a.seen[name] = map[string]bool{}
			}
			a.seen[name][user] = true
			a.mu.Unlock()
		}
		return out.Emit(ctx, order, user+"="+userName)
	})
	return runTopology(t, name, topo, opts)
}

// setUsers writes user-0..user-(n-1) with name "<version>-<i>"; a version
// of "" writes tombstones.
func (a *enrichApp) setUsers(from, to int, version string) {
	a.c.Produce(versioned(a.users, "user-", from, to, version)...)
}

// order writes orders first..first+n-1, order i for user i%users.
func (a *enrichApp) order(first, n, users int) {
	var recs []*kgo.Record
	for i := first; i < first+n; i++ {
		recs = append(recs, &kgo.Record{Topic: a.orders, Key: []byte("order-" + strconv.Itoa(i)),
			Value: []byte("user-" + strconv.Itoa(i%users))})
	}
	a.c.Produce(recs...)
}

// tableHas reports whether in's copy of the table has every user in
// [from, to) at version ("": deleted).
func (a *enrichApp) tableHas(in *instance, from, to int, version string) bool {
	rd := in.rt.GlobalTable(a.users)
	if rd == nil {
		return false
	}
	for i := from; i < to; i++ {
		v, found, err := rd.Get([]byte("user-" + strconv.Itoa(i)))
		if err != nil || found != (version != "") || (found && string(v) != version+"-"+strconv.Itoa(i)) {
			return false
		}
	}
	return true
}

// outputs waits until the output has every order in [first, first+n) and
// returns the enriched values by order.
func (a *enrichApp) outputs(t *testing.T, first, n int) map[string]string {
	t.Helper()
	var got map[string]string
	kafkatest.Eventually(t, 2*time.Minute, fmt.Sprintf("orders %d..%d enriched", first, first+n-1), func() bool {
		got = lastValues(t, a.c, a.output)
		for i := first; i < first+n; i++ {
			if _, ok := got["order-"+strconv.Itoa(i)]; !ok {
				return false
			}
		}
		return true
	})
	return got
}

func TestGlobalTableIsReadByEveryInstanceKeptCurrentAndRestoredAfterARestart(t *testing.T) {
	c := kafkatest.New(t)
	a := newEnrichApp(t, c)
	const users = 30
	a.setUsers(0, users, "v1")

	optsA := testOptions(t, c.Brokers, "a")
	optsB := testOptions(t, c.Brokers, "b")
	for _, o := range []*processor.Options{&optsA, &optsB} {
		o.SessionTimeout = 6 * time.Second
		processor.SetHeartbeatInterval(o, 200*time.Millisecond)
	}
	ia, ib := a.start(t, "a", optsA), a.start(t, "b", optsB)
	kafkatest.Eventually(t, 2*time.Minute, "both instances ready", func() bool { return allReady(ia, ib) })
	// Restored before processing: both hold every key already.
	for _, in := range []*instance{ia, ib} {
		if !a.tableHas(in, 0, users, "v1") {
			t.Fatalf("instance %s: ready without every user at v1 in its global table", in.name)
		}
	}

	// Every order is enriched, on whichever instance its partition is.
	a.order(0, 4*users, users)
	got := a.outputs(t, 0, 4*users)
	for i := range 4 * users {
		u := "user-" + strconv.Itoa(i%users)
		if want := u + "=v1-" + strconv.Itoa(i%users); got["order-"+strconv.Itoa(i)] != want {
			t.Errorf("order-%d = %q, want %q", i, got["order-"+strconv.Itoa(i)], want)
		}
	}
	// Each instance's handler looked users up (the partitions are split
	// between them; each partition has orders of many users).
	a.mu.Lock()
	if len(a.seen["a"]) == 0 || len(a.seen["b"]) == 0 {
		t.Errorf("users found by the handlers, by instance: %v; want both instances", a.seen)
	}
	a.mu.Unlock()

	// Updated while the stream runs: eventually visible on both, and to
	// every order written after that.
	a.setUsers(0, users, "v2")
	kafkatest.Eventually(t, time.Minute, "both instances see v2", func() bool {
		return a.tableHas(ia, 0, users, "v2") && a.tableHas(ib, 0, users, "v2")
	})
	a.order(1000, 2*users, users)
	got = a.outputs(t, 1000, 2*users)
	for i := 1000; i < 1000+2*users; i++ {
		if want := "user-" + strconv.Itoa(i%users) + "=v2-" + strconv.Itoa(i%users); got["order-"+strconv.Itoa(i)] != want {
			t.Errorf("order-%d = %q, want %q", i, got["order-"+strconv.Itoa(i)], want)
		}
	}

	// b stops; its copy stays on disk at the offsets it had applied.
	ib.stop(t)
	kept, err := state.ScanCheckpoints(processor.GlobalDir(optsB.StateDir, a.appID), "table-"+a.users)
	if err != nil {
		t.Fatal(err)
	}
	var keptTotal int64
	for _, stores := range kept {
		keptTotal += stores[a.users]
	}
	if len(kept) != 3 || keptTotal != 2*users {
		t.Fatalf("b's global table on disk after stop: %v (sum %d), want 3 partitions at %d records in all", kept, keptTotal, 2*users)
	}
	// What b misses: new names for half the users, the other half deleted.
	a.setUsers(0, users/2, "v3")
	a.setUsers(users/2, users, "")
	ib2 := a.start(t, "b2", optsB)
	kafkatest.Eventually(t, 2*time.Minute, "b restarted and ready", func() bool { return allReady(ia, ib2) })
	if !a.tableHas(ib2, 0, users/2, "v3") || !a.tableHas(ib2, users/2, users, "") {
		t.Fatal("restarted instance b is ready without what it missed in its global table")
	}
	kafkatest.Eventually(t, time.Minute, "a sees v3 and the deletes", func() bool {
		return a.tableHas(ia, 0, users/2, "v3") && a.tableHas(ia, users/2, users, "")
	})
	a.order(2000, 2*users, users)
	got = a.outputs(t, 2000, 2*users)
	for i := 2000; i < 2000+2*users; i++ {
		u := i % users
		want := "user-" + strconv.Itoa(u) + "=unknown"
		if u < users/2 {
			want = "user-" + strconv.Itoa(u) + "=v3-" + strconv.Itoa(u)
		}
		if got["order-"+strconv.Itoa(i)] != want {
			t.Errorf("order-%d = %q, want %q", i, got["order-"+strconv.Itoa(i)], want)
		}
	}
}

func TestGlobalTableDeclarationErrors(t *testing.T) {
	topo := processor.New("app")
	processor.NewInput(topo, "in", codec.String(), codec.String(), func(*processor.Context, string, string) error { return nil })
	processor.NewOutput(topo, "out", codec.String(), codec.String())
	processor.NewGlobalTable(topo, "in", codec.String(), codec.String())
	processor.NewGlobalTable(topo, "out", codec.String(), codec.String())
	processor.NewGlobalTable(topo, "t", codec.String(), codec.String())
	processor.NewGlobalTable(topo, "t", codec.String(), codec.String())
	processor.NewGlobalTable[string, string](topo, "u", codec.String(), nil)
	processor.NewGlobalTable(topo, "bad name", codec.String(), codec.String())
	err := topo.Validate()
	for _, want := range []string{`"in" is also an input`, `"out" is also an output`, `"t" declared twice`, `"u": key and value codecs`, `"bad name"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want an error with %s", err, want)
		}
	}
	if got := topo.GlobalTables(); len(got) != 3 {
		t.Errorf("GlobalTables() = %v, want the 3 declared (in, out, t)", got)
	}
}

// TestGlobalTableOnAMissingTopicKeepsTheInstanceNotReadyAndFailsRun: the
// instance is not ready while it restores its global tables (it has not
// joined its group), and a table topic that does not exist fails Run with
// an error naming it (global tables are never created).
func TestGlobalTableOnAMissingTopicKeepsTheInstanceNotReadyAndFailsRun(t *testing.T) {
	c := kafkatest.New(t)
	in, missing := c.Name("gm-in"), c.Name("gm-missing")
	c.CreateTopic(in, 1, nil)
	topo := processor.New(c.Name("gm"))
	processor.NewGlobalTable(topo, missing, codec.String(), codec.String())
	processor.NewInput(topo, in, codec.String(), codec.String(), func(*processor.Context, string, string) error { return nil })
	rt, err := processor.NewRuntime(topo, testOptions(t, c.Brokers, "gm"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rt.Run(t.Context()) }()
	var reason string
	var ended error
	kafkatest.Eventually(t, time.Minute, "not ready while restoring the global table, then Run failed", func() bool {
		if _, why := rt.Ready(); strings.Contains(why, "restoring global table "+missing) {
			reason = why
		}
		select {
		case ended = <-done:
			return true
		default:
			return false
		}
	})
	if reason == "" {
		t.Errorf("Ready() never said it was restoring global table %s", missing)
	}
	if ended == nil || !strings.Contains(ended.Error(), missing) {
		t.Errorf("Run() = %v, want an error naming %s", ended, missing)
	}
	if ok, _ := rt.Ready(); ok {
		t.Error("ready after Run failed")
	}
}

// TestGlobalTableInTheTestDriver: PipeGlobalRecord writes a global table
// (nil deletes) and handlers piped after it read it.
func TestGlobalTableInTheTestDriver(t *testing.T) {
	topo := processor.New("enrich")
	users := processor.NewGlobalTable(topo, "users", codec.String(), codec.String())
	out := processor.NewOutput(topo, "enriched", codec.String(), codec.String())
	orders := processor.NewInput(topo, "orders", codec.String(), codec.String(), func(ctx *processor.Context, order, user string) error {
		name, found, err := users.Get(ctx, user)
		if err != nil {
			return err
		}
		if !found {
			name = "unknown"
		}
		return out.Emit(ctx, order, name)
	})
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	pipe := func(order, user string) {
		if err := processor.Pipe(d, orders, order, user); err != nil {
			t.Fatal(err)
		}
	}
	pipe("o1", "u1")
	if err := d.PipeGlobalRecord(&kgo.Record{Topic: "users", Key: []byte("u1"), Value: []byte("ann")}); err != nil {
		t.Fatal(err)
	}
	pipe("o2", "u1")
	if err := d.PipeGlobalRecord(&kgo.Record{Topic: "users", Key: []byte("u1")}); err != nil {
		t.Fatal(err)
	}
	pipe("o3", "u1")
	if err := d.PipeGlobalRecord(&kgo.Record{Topic: "orders", Key: []byte("u1")}); err == nil {
		t.Error("PipeGlobalRecord to an input topic: no error")
	}
	got, err := processor.ReadOutput(d, out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"o1=unknown", "o2=ann", "o3=unknown"}
	if len(got) != len(want) {
		t.Fatalf("output %v, want %v", got, want)
	}
	for i, kv := range got {
		if kv.Key+"="+kv.Value != want[i] {
			t.Errorf("output %d = %s=%s, want %s", i, kv.Key, kv.Value, want[i])
		}
	}
}
