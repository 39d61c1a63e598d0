package processor

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/state"
)

// The unit-test harness of the commit and rebalance paths: a member with
// its commits, fed by hand, over real stores in a temporary directory, a
// fake producer (fakeKafka, also the fetch control) and a fake committer.
// No broker, not even kfake: the state directory's own Kafka client dials
// nothing (noDial).

// produced is a record the fake producer took, copied (the stores recycle
// their changelog records once acknowledged).
type produced struct {
	topic     string
	partition int32
	key       string
	value     string
	offset    int64
}

type pendingProduce struct {
	r       *kgo.Record
	promise func(*kgo.Record, error)
}

// fakeKafka is the harness's producer and fetch control. It acknowledges
// what is pending as a broker would: in the background soon after it is
// produced (run), and at once on Flush. Within a partition in the order
// produced (franz-go's promise order, which the stores' checkpoints rely
// on), the partitions last-first (out of order on purpose: the commit must
// not depend on the order across partitions), failing the records of
// failTopic. With hang set, nothing is acknowledged until it closes, and
// Flush waits for it or its context.
type fakeKafka struct {
	mu        sync.Mutex
	next      map[string]int64 // per topic/partition: the next offset
	pending   []pendingProduce
	records   []produced
	failTopic string
	failErr   error
	hang      chan struct{}
	// held, until it closes (release), keeps the records produced to
	// heldTopic's partition heldPartition unacknowledged; the others are
	// acknowledged as usual.
	held          chan struct{}
	heldTopic     string
	heldPartition int32
	paused        map[int32]bool
	// wake (capacity 1) tells run that records are pending; deliverMu
	// makes the promises serial, as franz-go calls them.
	wake      chan struct{}
	deliverMu sync.Mutex
}

func (k *fakeKafka) Produce(_ context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	tp := r.Topic + "/" + strconv.Itoa(int(r.Partition))
	r.Offset = k.next[tp]
	k.next[tp]++
	k.records = append(k.records, produced{r.Topic, r.Partition, string(r.Key), string(r.Value), r.Offset})
	k.pending = append(k.pending, pendingProduce{r, promise})
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

func (k *fakeKafka) Flush(ctx context.Context) error {
	if err := k.waitHang(ctx); err != nil {
		return err
	}
	k.deliver()
	return nil
}

// run acknowledges records in the background until ctx ends.
func (k *fakeKafka) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.wake:
		}
		if k.waitHang(ctx) != nil {
			return
		}
		k.deliver()
	}
}

func (k *fakeKafka) waitHang(ctx context.Context) error {
	k.mu.Lock()
	hang := k.hang
	k.mu.Unlock()
	if hang == nil {
		return nil
	}
	select {
	case <-hang:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// deliver acknowledges what is pending (see fakeKafka).
func (k *fakeKafka) deliver() {
	k.deliverMu.Lock()
	defer k.deliverMu.Unlock()
	k.mu.Lock()
	pending := k.pending
	k.pending = nil
	if k.held != nil {
		select {
		case <-k.held:
			k.held = nil
		default:
			var rest []pendingProduce
			for _, p := range pending {
				if p.r.Topic == k.heldTopic && p.r.Partition == k.heldPartition {
					k.pending = append(k.pending, p)
				} else {
					rest = append(rest, p)
				}
			}
			pending = rest
		}
	}
	failTopic, failErr := k.failTopic, k.failErr
	k.mu.Unlock()
	var order []string
	byPartition := make(map[string][]pendingProduce)
	for _, p := range pending {
		tp := p.r.Topic + "/" + strconv.Itoa(int(p.r.Partition))
		if _, ok := byPartition[tp]; !ok {
			order = append(order, tp)
		}
		byPartition[tp] = append(byPartition[tp], p)
	}
	for i := len(order) - 1; i >= 0; i-- { // the last partition first
		for _, p := range byPartition[order[i]] {
			var err error
			if p.r.Topic == failTopic {
				err = failErr
			}
			p.promise(p.r, err)
		}
	}
}

// hold keeps the records of topic's partition p unacknowledged until
// release.
func (k *fakeKafka) hold(topic string, p int32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.held, k.heldTopic, k.heldPartition = make(chan struct{}), topic, p
}

// release acknowledges what hold kept back, and the rest as it comes.
func (k *fakeKafka) release() {
	k.mu.Lock()
	close(k.held)
	k.mu.Unlock()
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

func (k *fakeKafka) PauseFetchPartitions(m map[string][]int32) map[string][]int32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, ps := range m {
		for _, p := range ps {
			k.paused[p] = true
		}
	}
	return m
}

func (k *fakeKafka) ResumeFetchPartitions(m map[string][]int32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, ps := range m {
		for _, p := range ps {
			delete(k.paused, p)
		}
	}
}

// fakeCommitter records every offset commit. With block set, a commit
// waits for it to close (or its context); err fails every commit.
type fakeCommitter struct {
	mu      sync.Mutex
	calls   []map[string]map[int32]kgo.EpochOffset // the successful ones
	tries   int
	err     error
	block   chan struct{}
	entered chan struct{} // signalled (capacity 1) when a commit starts
}

func (c *fakeCommitter) CommitOffsets(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset) error {
	c.mu.Lock()
	c.tries++
	block, err := c.block, c.err
	c.mu.Unlock()
	select {
	case c.entered <- struct{}{}:
	default:
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, offsets)
	return nil
}

func (c *fakeCommitter) commits() []map[string]map[int32]kgo.EpochOffset {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// committed returns the last committed offset of input partition p, -1
// when none was.
func (c *fakeCommitter) committed(p int32) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.calls) - 1; i >= 0; i-- {
		if eo, ok := c.calls[i][harnessInput][p]; ok {
			return eo.Offset
		}
	}
	return -1
}

const (
	harnessApp    = "harness"
	harnessInput  = "in"
	harnessOutput = "out"
	harnessStore  = "counts"
)

// harness is a member under test with everything around it.
type harness struct {
	t       *testing.T
	topo    *Topology
	opts    Options
	kafka   *fakeKafka
	offsets *fakeCommitter
	mgr     *state.Manager
	env     *taskEnv
	c       *commits
	m       *member
	reg     *prometheus.Registry

	// gate, when set, holds the handler of a record whose value is
	// "block" until it is closed (ignoring its context: a stuck handler).
	gate     chan struct{}
	inGate   chan struct{} // signalled when a handler waits at gate
	mu       sync.Mutex
	failErr  error   // what the member's fail was called with
	promoted []int32 // tasks started from a standby held here
	ctx      context.Context
}

// noDial refuses every connection: the harness's state directory has a
// Kafka client for standbys that must reach nothing.
func noDial(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("no broker in the unit tests of the commit and rebalance paths")
}

func newHarness(t *testing.T, tweak func(*Options)) *harness {
	t.Helper()
	return newHarnessStates(t, tweak, nil)
}

// newHarnessStates is newHarness with stateTweak, when set, changing the
// state directory's options last.
func newHarnessStates(t *testing.T, tweak func(*Options), stateTweak func(*state.Options)) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		kafka:   &fakeKafka{next: make(map[string]int64), paused: make(map[int32]bool), wake: make(chan struct{}, 1)},
		offsets: &fakeCommitter{entered: make(chan struct{}, 1)},
		reg:     prometheus.NewRegistry(),
		gate:    make(chan struct{}),
		inGate:  make(chan struct{}, 1),
		ctx:     t.Context(),
	}
	close(h.gate) // open unless a test makes a new one
	go h.kafka.run(h.ctx)
	topo := New(harnessApp)
	counts := NewStore(topo, harnessStore, codec.String(), codec.Int64())
	out := NewOutput(topo, harnessOutput, codec.String(), codec.Int64())
	NewInput(topo, harnessInput, codec.String(), codec.String(), func(ctx *Context, k, v string) error {
		if v == "block" {
			h.mu.Lock()
			gate := h.gate
			h.mu.Unlock()
			select {
			case h.inGate <- struct{}{}:
			default:
			}
			<-gate
		}
		n, _, err := counts.Get(ctx, k)
		if err != nil {
			return err
		}
		if err := counts.Put(ctx, k, n+1); err != nil {
			return err
		}
		return out.Emit(ctx, k, n+1)
	})
	h.topo = topo
	h.opts = DefaultOptions()
	h.opts.Brokers, h.opts.StateDir = []string{"unused:1"}, t.TempDir()
	h.opts.CacheMaxBytes = 0
	h.opts.ShutdownTimeout = 10 * time.Second
	h.opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if tweak != nil {
		tweak(&h.opts)
	}
	if err := h.opts.check(harnessApp); err != nil {
		t.Fatal(err)
	}
	so := state.DefaultOptions()
	so.Dir, so.ApplicationID, so.CleanupInterval = h.opts.StateDir, harnessApp, 0
	so.MemoryBytes = h.opts.MemoryBytes
	so.ClientOpts = []kgo.Opt{kgo.SeedBrokers("unused:1"), kgo.Dialer(noDial)}
	so.Logger = h.opts.Logger
	if stateTweak != nil {
		stateTweak(&so)
	}
	mgr, err := state.Open(so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close() })
	h.mgr = mgr
	met := newMetrics(h.reg, func() []*task { return h.m.live() })
	h.c = newCommits(h.ctx, h.kafka, h.offsets, h.opts.Logger, met, func(string) {})
	h.env = &taskEnv{
		topo: topo, opts: &h.opts, log: h.opts.Logger, met: met, tasks: 4, ctx: h.ctx,
		prod: h.kafka, promise: h.c.promise, fetch: h.kafka,
		openStores: func(_ context.Context, id int32, held *state.Task) (*state.Task, error) {
			// Fresh stores, nothing to restore (that needs a changelog):
			// opened from their directory and made active. A standby
			// held here would be promoted (catching up from its
			// changelog): the harness records it and reopens it instead.
			st := held
			if held != nil && held.Role() == state.RoleStandby {
				h.mu.Lock()
				h.promoted = append(h.promoted, id)
				h.mu.Unlock()
				held.Close()
				st = nil
			}
			if st == nil {
				var err error
				if st, err = mgr.OpenTask(id, topo.storeSpecs()); err != nil {
					return nil, err
				}
			}
			return st, st.Activate(h.kafka)
		},
		now:    time.Now,
		taken:  func(int) {},
		worked: func(*task, bool) {},
	}
	h.m = newMember(h.env, h.c, mgr, func(string) {}, func(err error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.failErr == nil {
			h.failErr = err
		}
	})
	t.Cleanup(func() {
		h.m.setClosing()
		h.m.closeAll()
	})
	return h
}

// start assigns tasks and waits until they run.
func (h *harness) start(tasks ...int32) {
	h.t.Helper()
	h.m.assign(tasks, nil)
	eventually(h.t, "tasks running", func() bool {
		for _, id := range tasks {
			if t := h.m.task(id); t == nil || !t.running.Load() {
				return false
			}
		}
		return true
	})
}

// feed hands task id a batch of records of key k with values vs, at the
// next offsets of its partition, and returns the task.
func (h *harness) feed(id int32, from int64, k string, vs ...string) *task {
	h.t.Helper()
	t := h.m.task(id)
	if t == nil {
		h.t.Fatalf("task %d is not active", id)
	}
	p := kgo.FetchTopicPartition{Topic: harnessInput, FetchPartition: kgo.FetchPartition{Partition: id}}
	for i, v := range vs {
		p.Records = append(p.Records, &kgo.Record{Topic: harnessInput, Partition: id, Offset: from + int64(i), Key: []byte(k), Value: []byte(v),
			Timestamp: time.UnixMilli(from + int64(i))})
	}
	if !t.push(p) {
		h.t.Fatalf("task %d took no more records", id)
	}
	return t
}

// processed returns the offset after task t's last processed record.
func processed(t *task) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.next[harnessInput].Offset
}

// waitProcessed waits until t has processed up to offset next.
func (h *harness) waitProcessed(t *task, next int64) {
	h.t.Helper()
	eventually(h.t, "records processed up to offset "+strconv.Itoa(int(next)), func() bool { return processed(t) >= next })
}

// block makes records valued "block" wait in their handler until the
// returned release is called.
func (h *harness) block() (release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := make(chan struct{})
	h.gate = g
	var once sync.Once
	return func() { once.Do(func() { close(g) }) }
}

func (h *harness) failed() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failErr
}

// count reads key's committed count from task id's stores on disk (a
// fresh open after the task closed, or the live task's committed view).
func (h *harness) count(id int32, key string) int64 {
	h.t.Helper()
	st := h.mgr.Task(id)
	if st == nil {
		var err error
		if st, err = h.mgr.OpenTask(id, h.topo.storeSpecs()); err != nil {
			h.t.Fatal(err)
		}
		defer st.Close()
	}
	v, ok, err := st.Store(harnessStore).View().Get([]byte(key))
	if err != nil {
		h.t.Fatal(err)
	}
	if !ok {
		return 0
	}
	n, err := codec.Int64().Decode(v)
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// eventually polls cond until it holds, failing the test after a generous
// deadline (a poll, not a timed assertion).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 20s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
