package processor_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/internal/cutdial"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/state"
)

func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func TestRuntimeStopsAndIsNotReadyWhenAPartitionCountChanges(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 4)
	o := a.options(t, "solo", "a")
	processor.SetTopologyCheckInterval(&o, 100*time.Millisecond)
	in := a.start(t, "solo", o)
	a.produce(t, 400, 20, 0)
	a.waitCommitted(t, time.Minute)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Admin().CreatePartitions(ctx, 2, a.input)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("add partitions to %s: %v", a.input, err)
	}
	var reason string
	kafkatest.Eventually(t, time.Minute, "not ready after the input grew", func() bool {
		var ok bool
		ok, reason = in.rt.Ready()
		return !ok && strings.Contains(reason, "partition counts differ")
	})
	for _, want := range []string{a.input + "=6", a.appID + "-counts-changelog=4"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q does not name %q", reason, want)
		}
	}
	kafkatest.Eventually(t, time.Minute, "every task stopped", func() bool {
		for task := int32(0); task < 4; task++ {
			if r, ok := in.rt.Replica(task); ok && r.Role == processor.RoleActive {
				return false
			}
		}
		return true
	})
}

func TestRuntimeErrorPolicyFailStopsTheTaskAndReportsNotReady(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 1)
	o := a.options(t, "solo", "a")
	o.ErrorPolicy = processor.PolicyFail
	in := a.start(t, "solo", o)
	a.produce(t, 10, 2, 5) // records 4 and 9 are poison
	var reason string
	kafkatest.Eventually(t, time.Minute, "not ready after a poison record", func() bool {
		var ok bool
		ok, reason = in.rt.Ready()
		return !ok && strings.Contains(reason, "poison record")
	})
	if !strings.Contains(reason, a.input+"/0@4 (decode-value)") {
		t.Errorf("reason %q does not say which record", reason)
	}
	if n := counterValue(t, in.reg, "rackstream_task_failures_total"); n != 1 {
		t.Errorf("task failures %v, want 1", n)
	}
	// Nothing past the poison record was processed, and its offset was
	// not committed.
	if missing, _ := a.missing(); missing != 4 {
		t.Errorf("%d valid records unhandled, want the 4 after the poison record", missing)
	}
}

// A produce that fails for good ends the client's session: the runtime
// rebuilds the client with backoff and reprocesses from the last commit,
// losing nothing. Here the output topic refuses every batch (its
// max.message.bytes is 1) until the test restores the limit.
func TestRuntimeRebuildsTheClientAfterAFatalProduceErrorAndLosesNothing(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	setMaxMessageBytes := func(v *string) {
		t.Helper()
		op := kadm.SetConfig
		if v == nil {
			op = kadm.DeleteConfig
		}
		resps, err := c.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: "max.message.bytes", Value: v}}, a.output)
		if err == nil {
			_, err = resps.On(a.output, nil)
		}
		if err != nil {
			t.Fatalf("alter max.message.bytes of %s: %v", a.output, err)
		}
	}
	one := "1"
	setMaxMessageBytes(&one)

	o := a.options(t, "solo", "a")
	processor.SetRebuildBackoff(&o, 50*time.Millisecond, 200*time.Millisecond)
	in := a.start(t, "solo", o)
	a.produce(t, 3000, 30, 0)
	kafkatest.Eventually(t, time.Minute, "the client rebuilt after the refused produce", func() bool {
		return counterValue(t, in.reg, "rackstream_client_rebuilds_total") >= 1
	})
	setMaxMessageBytes(nil)
	a.waitCommitted(t, 2*time.Minute)
	kafkatest.Eventually(t, time.Minute, "ready again", func() bool { ok, _ := in.rt.Ready(); return ok })
	in.stop(t)
	a.checkCounts(t, false)
}

// An unreachable broker (every connection of the instance cut for longer
// than its session) stalls processing; when the broker is back, the
// instance rejoins, restores from its checkpoints and goes on: nothing lost.
func TestRuntimeStallsWhileTheBrokerIsUnreachableAndResumesLosingNothing(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 3)
	d := new(cutdial.Dialer)
	o := a.options(t, "solo", "a")
	o.ClientOpts = append(o.ClientOpts, kgo.Dialer(d.Dial))
	processor.SetRebuildBackoff(&o, 50*time.Millisecond, 0)
	in := a.start(t, "solo", o)
	a.produce(t, 3000, 30, 0)
	a.waitCommitted(t, 2*time.Minute)

	d.Cut()
	a.produce(t, 3000, 30, 0)
	kafkatest.Eventually(t, time.Minute, "not ready while the broker is unreachable", func() bool {
		ok, _ := in.rt.Ready()
		return !ok
	})
	// Down for a while: long enough for the group to expire the member.
	adm := c.Admin()
	kafkatest.Eventually(t, time.Minute, "the broker expired the unreachable member", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		gs, err := adm.DescribeGroups(ctx, a.appID)
		if err != nil {
			return false
		}
		g, ok := gs[a.appID]
		return ok && g.Err == nil && len(g.Members) == 0
	})
	if missing, _ := a.missing(); missing == 0 {
		t.Fatal("records produced while the broker was unreachable were processed")
	}
	d.Heal()
	a.waitCommitted(t, 2*time.Minute)
	kafkatest.Eventually(t, time.Minute, "ready again", func() bool { ok, _ := in.rt.Ready(); return ok })
	in.stop(t)
	a.checkCounts(t, false)
}

// Settings no rebuild can cure end Run at once with the reason, instead of
// a loop of client rebuilds.
func TestRunFailsAtOnceOnSettingsARebuildCannotCure(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 2)
	topo, _ := a.topology()
	o := a.options(t, "solo", "a")
	o.Placement.RackAwareAssignmentTags = append(o.Placement.RackAwareAssignmentTags, "cluster") // not one of the instance's tags
	rt, err := processor.NewRuntime(topo, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = rt.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), `rack.aware.assignment.tags names "cluster"`) {
		t.Fatalf("Run: %v; want the bad setting named", err)
	}
	if ok, reason := rt.Ready(); ok || !strings.Contains(reason, "cluster") {
		t.Errorf("Ready() = %v, %q", ok, reason)
	}
	if err := rt.Run(ctx); err == nil || !strings.Contains(err.Error(), "Run called twice") {
		t.Errorf("second Run: %v", err)
	}
}

func TestRunFailsAtStartWhenAnOutputTopicIsMissing(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 2)
	a.output = c.Name("never-created")
	topo, _ := a.topology()
	rt, err := processor.NewRuntime(topo, a.options(t, "solo", "a"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = rt.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "output topics "+a.output+" do not exist") {
		t.Fatalf("Run: %v; want the missing output named", err)
	}
}

// An instance cut off from the brokers mid-stream (as in a network
// partition) loses its partitions while a commit is stuck flushing to the
// unreachable brokers with its tasks locked. Dropping the lost tasks must
// not wait for that commit: the poll loop waits for the drop, and the
// shutdown for the poll loop. Run returns within its shutdown timeout,
// and nothing is lost once another instance takes over.
func TestShutdownIsBoundedWhenCutOffWhileACommitIsFlushing(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 4)
	d := new(cutdial.Dialer)
	o := a.options(t, "cut", "a")
	o.ClientOpts = append(o.ClientOpts, kgo.Dialer(d.Dial))
	o.ShutdownTimeout = 2 * time.Second
	in := a.start(t, "cut", o)
	kafkatest.Eventually(t, time.Minute, "ready", func() bool { return allReady(in) })
	a.produce(t, 40000, 1000, 0)
	kafkatest.Eventually(t, time.Minute, "some records handled", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.seen) > 0
	})
	d.Cut()
	kafkatest.Eventually(t, time.Minute, "the cut instance noticed it lost the group", func() bool {
		_, reason := in.rt.Ready()
		return strings.Contains(reason, "joining the group") || strings.Contains(reason, "rebuilding")
	})
	in.stop(t) // fails after 60s with a goroutine dump, where the hang was

	other := a.start(t, "other", a.options(t, "other", "b"))
	a.waitCommitted(t, 3*time.Minute)
	other.stop(t)
	a.checkCounts(t, false)
}

// syncBuffer is a bytes.Buffer for a logger written by many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A handler that ignores its context cannot hold the shutdown beyond
// shutdown.timeout.ms: Run gives up and logs what it was waiting for,
// closes the stores under the handler anyway (releasing the state
// directory: a new instance opens it at once, with no lock to retry), and
// returns an error naming the task; the handler's later store reads fail
// with ErrTaskClosed.
func TestShutdownGivesUpAfterItsTimeoutNamingWhatItWaitsFor(t *testing.T) {
	c := kafkatest.New(t)
	input := c.Name("stuck-in")
	c.CreateTopic(input, 1, nil)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	released := sync.OnceFunc(func() { close(release) })
	t.Cleanup(released)
	after := make(chan error, 1) // the handler's store read after its release
	topo := processor.New(c.Name("stuck"))
	store := processor.NewStore(topo, "unused", codec.String(), codec.String())
	processor.NewInput(topo, input, codec.String(), codec.String(), func(ctx *processor.Context, k, _ string) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release // ignores its context
		_, _, err := store.Get(ctx, k)
		after <- err
		return nil
	})
	var logs syncBuffer
	o := processor.DefaultOptions()
	dir := t.TempDir()
	o.Brokers, o.StateDir, o.CacheMaxBytes = c.Brokers, dir, processor.Zero
	o.SessionTimeout = 3 * time.Second
	processor.SetHeartbeatInterval(&o, 200*time.Millisecond)
	o.ShutdownTimeout = time.Second
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	rt, err := processor.NewRuntime(topo, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	cl := c.Client(kgo.DefaultProduceTopic(input))
	pctx, pcancel := context.WithTimeout(context.Background(), time.Minute)
	defer pcancel()
	if err := cl.ProduceSync(pctx, &kgo.Record{Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatalf("the handler was not called within a minute; logs:\n%s", logs.String())
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "tasks [0]") || !strings.Contains(err.Error(), "ErrTaskClosed") {
			t.Errorf("Run = %v; want an error naming task 0, whose handler was still running", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return within 60s of the cancel")
	}
	// The state directory is free: no lock to retry.
	so := state.DefaultOptions()
	so.Dir, so.ApplicationID = dir, topo.ApplicationID()
	m, err := state.Open(so)
	if err != nil {
		t.Fatalf("opening the state directory after Run returned: %v", err)
	}
	m.Close()
	released()
	if err := <-after; !errors.Is(err, processor.ErrTaskClosed) || !errors.Is(err, state.ErrTaskClosed) {
		t.Errorf("the handler's store read after the shutdown = %v; want ErrTaskClosed", err)
	}
	out := logs.String()
	i := strings.Index(out, "shutdown did not finish within shutdown.timeout.ms")
	if i < 0 {
		t.Fatalf("no log line says the shutdown gave up; logs:\n%s", out)
	}
	line := out[i:]
	line = line[:strings.IndexByte(line, '\n')]
	if !strings.Contains(line, "waiting_for=") || strings.Contains(line, "nothing known") {
		t.Errorf("the give-up line does not say what it waited for: %s", line)
	}
	t.Log(line)
	if ok, reason := rt.Ready(); ok {
		t.Errorf("ready after Run returned (%s)", reason)
	}
}
