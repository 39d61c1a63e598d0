package balancer

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/tags"
)

func TestProbeTriggersAreLaggingReplicasWhoseMoveWouldBalance(t *testing.T) {
	in := &assignor.Input{
		Settings: assignor.Settings{AcceptableRecoveryLag: 10},
		Clients: []assignor.Client{
			{ID: "a", Capacity: 1, Lags: map[int]int64{0: 0, 1: 0, 2: 0, 3: 900}},
			{ID: "b", Capacity: 1, Lags: map[int]int64{0: 500, 1: 5}},
			{ID: "c", Capacity: 1, Lags: map[int]int64{3: 0}},
		},
	}
	plan := &assignor.Plan{
		ProbingRebalanceNeeded: true,
		Tasks: []assignor.TaskPlacement{
			{Task: 0, Active: "a", Standby: []string{"b"}}, // b lags: a trigger
			{Task: 1, Active: "a", Standby: []string{"b"}}, // b caught up at plan time: no trigger
			{Task: 2, Active: "a", Warmup: []string{"c"}},  // unknown lag, c (1) relieves a (3): a trigger
			{Task: 3, Active: "c", Standby: []string{"a"}}, // a lags, but a is the heavier: no trigger
		},
	}
	want := map[string][]int32{"b": {0}, "c": {2}}
	if got := probeTriggers(plan, in); !reflect.DeepEqual(got, want) {
		t.Fatalf("probe triggers %v, want %v", got, want)
	}
	plan.ProbingRebalanceNeeded = false
	if got := probeTriggers(plan, in); got != nil {
		t.Fatalf("a plan that asks for no probing has triggers %v", got)
	}
	// Capacity counts: b of capacity 4 with 3 actives still relieves a
	// (3/1) by taking a fourth (4/4 < 3/1).
	in.Clients[1].Capacity = 4
	plan.ProbingRebalanceNeeded = true
	for i := range 3 {
		plan.Tasks = append(plan.Tasks, assignor.TaskPlacement{Task: 4 + i, Active: "b"})
	}
	if got := probeTriggers(plan, in); !slices.Equal(got["b"], []int32{0}) {
		t.Fatalf("probe triggers of b with capacity 4: %v, want [0]", got["b"])
	}
}

// twoMemberSettings are the settings of the convergence scenario: no tags,
// one standby, acceptable.recovery.lag 10.
func twoMemberSettings(pid string, o *offsets) Settings {
	s := simSettings(pid, tags.Set{}, o)
	s.Placement.NumStandbyReplicas = 1
	s.Placement.RackAwareAssignmentTags = nil
	s.Placement.AcceptableRecoveryLag = 10
	return s
}

func TestLaterMembersCaughtUpStandbysTriggerTheBalancingRebalance(t *testing.T) {
	o := newOffsets()
	for task := range int32(4) {
		o.setEnd(task, 1000)
		o.set("p0", task, 1000)
	}
	s := newSim(t, 4)
	first := s.add("m0", twoMemberSettings("p0", o))
	s.settle("m0", 3)
	later := s.add("m1", twoMemberSettings("p1", o))
	s.settle("m0", 3)

	// The later member holds a standby of every task, so the assignor can
	// place no warmup; the plan asks for probing and names the standbys as
	// the later member's triggers.
	a := later.last
	if len(a.Active) != 0 || !slices.Equal(a.Standby, []int32{0, 1, 2, 3}) || len(a.Warmup) != 0 {
		t.Fatalf("later member got active %v standby %v warmup %v, want only the 4 standbys", a.Active, a.Standby, a.Warmup)
	}
	if !slices.Equal(a.ProbeTriggers, []int32{0, 1, 2, 3}) || a.Placement.ProbingDeadline.IsZero() {
		t.Fatalf("later member's probe triggers %v, deadline %v; want all 4 standbys and a deadline", a.ProbeTriggers, a.Placement.ProbingDeadline)
	}
	if tr := first.last.ProbeTriggers; len(tr) != 0 {
		t.Fatalf("the loaded member has probe triggers %v", tr)
	}

	stop := make(chan struct{})
	defer close(stop)
	if why := later.b.probeReason(stop); why != "" {
		t.Fatalf("asked for a probing rebalance before catching up: %s", why)
	}
	// Two standbys catch up: one probe for both, and no second one.
	o.set("p1", 0, 995)
	o.set("p1", 1, 1000)
	if why := later.b.probeReason(stop); !strings.Contains(why, "[0 1]") {
		t.Fatalf("probe reason %q, want tasks [0 1] caught up", why)
	}
	o.set("p1", 2, 1000)
	o.set("p1", 3, 1000)
	if why := later.b.probeReason(stop); why != "" {
		t.Fatalf("asked again while the first probe is in flight: %s", why)
	}

	// The probing rebalance: a revoke, then the hand-off.
	s.settle("m0", 3)
	for _, m := range []*simMember{first, later} {
		if n := len(m.last.Active); n != 2 {
			t.Fatalf("%s has %d actives after the probe, want 2 (active %v)", m.id, n, m.last.Active)
		}
		if len(m.last.ProbeTriggers) != 0 || !m.b.Placement().ProbingDeadline.IsZero() {
			t.Fatalf("%s: the balanced plan still probes: triggers %v deadline %v", m.id, m.last.ProbeTriggers, m.b.Placement().ProbingDeadline)
		}
	}
	// The rebalance moved our tasks: no backoff.
	later.b.mu.Lock()
	backoff := later.b.probeBackoff
	later.b.mu.Unlock()
	if backoff != 0 {
		t.Fatalf("backoff %v after a probe that moved tasks", backoff)
	}
}

func TestProbeThatChangesNothingBacksOffInsteadOfRebalancingInALoop(t *testing.T) {
	o := newOffsets()
	o.setEnd(0, 1000)
	o.set("p1", 0, 1000)
	st := twoMemberSettings("p1", o)
	b, err := New(st)
	if err != nil {
		t.Fatal(err)
	}
	b.s.ProbingInterval = 3 * time.Second // below New's minimum: caps the backoff early
	stop := make(chan struct{})
	defer close(stop)
	// assign delivers an assignment of the given generation in which task 0
	// is a lagging standby and a probe trigger, as a leader whose figures
	// still show it lagging would send it.
	assign := func(gen int32, active []int32) {
		t.Helper()
		b.mu.Lock()
		b.pending = &AssignmentData{Generation: gen, Active: active, Standby: []int32{0}, ProbeTriggers: []int32{0}, ProbingDeadline: time.Now().Add(time.Hour).UnixMilli()}
		b.mu.Unlock()
		b.OnPartitionsAssigned(context.Background(), nil, nil)
	}
	backoff := func() (time.Duration, time.Time) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.probeBackoff, b.nextProbe
	}

	assign(1, nil)
	if why := b.probeReason(stop); why == "" {
		t.Fatal("a caught-up trigger asked for nothing")
	}
	if why := b.probeReason(stop); why != "" {
		t.Fatalf("the same trigger asked twice in one generation: %s", why)
	}
	// Each fruitless probe doubles the wait, up to the probing interval.
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
		assign(int32(2+i), nil) // the leader's plan did not change
		got, next := backoff()
		if got != want {
			t.Fatalf("after %d fruitless probes the backoff is %v, want %v", i+1, got, want)
		}
		if why := b.probeReason(stop); why != "" {
			t.Fatalf("asked again %v before the backoff ends: %s", time.Until(next), why)
		}
		b.mu.Lock()
		b.nextProbe = time.Now().Add(-time.Millisecond) // the wait is over
		b.mu.Unlock()
		if why := b.probeReason(stop); why == "" {
			t.Fatalf("no probe after the backoff of %v", got)
		}
	}
	// A probe whose rebalance moved our tasks resets the backoff.
	assign(10, []int32{3})
	if got, _ := backoff(); got != 0 {
		t.Fatalf("backoff %v after a probe that changed our tasks", got)
	}
	if why := b.probeReason(stop); why == "" {
		t.Fatal("no probe for a new generation's caught-up trigger after the reset")
	}
	if got := b.Stats().ProbingRebalances; got != 0 {
		t.Fatalf("probeReason alone counted %d rebalances (the loop counts)", got)
	}
}

func TestProbingDeadlineIsAskedForByTheFirstMemberWhenNoCatchUpIsAwaited(t *testing.T) {
	p := &Placement{
		Members:         []Member{{ProcessID: "p0", Capacity: 1}, {ProcessID: "p1", Capacity: 1}},
		ProbingDeadline: time.Now().Add(-time.Second),
	}
	stop := make(chan struct{})
	defer close(stop)
	for _, tc := range []struct {
		pid  string
		want bool
	}{{"p0", true}, {"p1", false}} {
		b, err := New(twoMemberSettings(tc.pid, newOffsets()))
		if err != nil {
			t.Fatal(err)
		}
		b.cur = Assignment{Generation: 3, Placement: p}
		why := b.probeReason(stop)
		if got := strings.Contains(why, "probing.rebalance.interval.ms"); got != tc.want {
			t.Fatalf("%s: probe reason %q at the deadline, want a probe: %v", tc.pid, why, tc.want)
		}
		if why := b.probeReason(stop); why != "" {
			t.Fatalf("%s asked twice for one deadline: %s", tc.pid, why)
		}
	}
}

// The convergence bug seen on the real broker: with 2 instances and 4 tasks
// the member that joined later held standbys of all 4 tasks (so the
// assignor could place no warmup) and no active until
// probing.rebalance.interval.ms, although its standbys had caught up.
func TestGroupLaterMembersCaughtUpStandbysBalanceWithoutWaitingForTheProbingInterval(t *testing.T) {
	g := newGroup(t, 4)
	for task := range int32(4) {
		g.o.setEnd(task, 1000)
		g.o.set("p0", task, 1000)
	}
	settings := func(pid string) Settings {
		s := g.settings(pid, tags.Set{})
		s.Placement.NumStandbyReplicas = 1
		s.Placement.RackAwareAssignmentTags = nil
		s.Placement.AcceptableRecoveryLag = 10
		s.WarmupCheckInterval = 100 * time.Millisecond
		return s
	}
	first := g.start(settings("p0"))
	g.waitStable("p0 alone owns every task")
	later := g.start(settings("p1"))
	var deadline time.Time
	kafkatest.Eventually(t, waitLong, "p1 gets a standby of every task and no active, and the plan asks for probing", func() bool {
		a, _ := later.b.Assignment()
		if a.Placement == nil || len(a.Active)+len(a.Pending) != 0 || !slices.Equal(a.Standby, []int32{0, 1, 2, 3}) {
			return false
		}
		deadline = a.Placement.ProbingDeadline
		return !deadline.IsZero() && slices.Equal(a.ProbeTriggers, a.Standby)
	})
	if time.Until(deadline) < DefaultProbingInterval/2 {
		t.Fatalf("probing deadline %v is too close for this test to tell a trigger from the interval", deadline)
	}
	// The test is the state engine: p1's standbys catch up, all at once.
	g.o.mu.Lock()
	g.o.cps["p1"] = map[int32]int64{0: 1000, 1: 1000, 2: 995, 3: 1000}
	g.o.mu.Unlock()
	kafkatest.Eventually(t, waitLong, "the group converges to 2 actives each", func() bool {
		p, ok := g.stable()
		if !ok {
			return false
		}
		n := 0
		for _, r := range p.Tasks {
			if r.Active == p.MemberIndex("p1") {
				n++
			}
		}
		return n == 2 && p.ProbingDeadline.IsZero()
	})
	if time.Now().After(deadline) {
		t.Fatal("converged only after the probing deadline")
	}
	if got := later.b.Stats().ProbingRebalances; got != 1 {
		t.Fatalf("p1 asked for %d probing rebalances, want exactly 1 for one catch-up", got)
	}
	if got := first.b.Stats().ProbingRebalances; got != 0 {
		t.Fatalf("p0, which awaited no catch-up, asked for %d probing rebalances", got)
	}
}
