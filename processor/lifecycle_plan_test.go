package processor

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// The lifecycle's rules (lifecycle_plan.go), with no tasks, stores or
// broker: each case is a holding and an event, and the plan it gets.

// set returns the ids as a set.
func set(ids ...int32) map[int32]bool {
	m := make(map[int32]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// idle is a holding with nothing here yet, for a topology of one store per
// task.
func idle() holding { return holding{opening: -1, stores: 1} }

func TestPlanAssign(t *testing.T) {
	cases := []struct {
		name            string
		h               func(h *holding)
		tasks, replicas []int32
		want            assignPlan
	}{
		{
			name:  "the first tasks start cold: their stores open and restore, and they are not moved",
			tasks: []int32{0, 1}, replicas: []int32{2},
			want: assignPlan{waitFor: -1, pause: []int32{0, 1},
				start: []taskStart{{id: 0}, {id: 1}},
				want:  set(2), openReplicas: []int32{2},
				expectStores: 3, startedAny: true},
		},
		{
			name:  "a task that moves here later starts cold and is marked moved",
			h:     func(h *holding) { h.startedAny = true; h.active = set(0) },
			tasks: []int32{1},
			want: assignPlan{waitFor: -1, pause: []int32{1},
				start:        []taskStart{{id: 1, moved: true}},
				want:         set(),
				expectStores: 2, startedAny: true},
		},
		{
			name:  "a caught-up standby held here is promoted, not reopened",
			h:     func(h *holding) { h.startedAny = true; h.standby = set(3) },
			tasks: []int32{3},
			want: assignPlan{waitFor: -1, pause: []int32{3},
				start:        []taskStart{{id: 3, promote: true, moved: true}},
				want:         set(),
				expectStores: 1, startedAny: true},
		},
		{
			name:  "a warmup held here is promoted like a standby, even as the instance's first task",
			h:     func(h *holding) { h.standby = set(4) },
			tasks: []int32{4}, replicas: []int32{5},
			want: assignPlan{waitFor: -1, pause: []int32{4},
				start: []taskStart{{id: 4, promote: true, moved: true}},
				want:  set(5), openReplicas: []int32{5},
				expectStores: 2, startedAny: true},
		},
		{
			name:  "a task revoked and reassigned in one generation is promoted from the standby its revoke kept",
			h:     func(h *holding) { h.startedAny = true; h.active = set(0); h.standby = set(1) },
			tasks: []int32{1}, replicas: []int32{2},
			want: assignPlan{waitFor: -1, pause: []int32{1},
				start: []taskStart{{id: 1, promote: true, moved: true}},
				want:  set(2), openReplicas: []int32{2},
				expectStores: 3, startedAny: true},
		},
		{
			name:     "standbys move: the one taken away closes in the callback, the one given opens after it",
			h:        func(h *holding) { h.standby = set(1, 2); h.want = set(1, 2) },
			replicas: []int32{2, 3},
			want: assignPlan{waitFor: -1,
				want:          set(2, 3),
				closeReplicas: []int32{1}, openReplicas: []int32{3},
				expectStores: 2},
		},
		{
			name:     "standbys and warmups alike: every replica the placement gives opens",
			replicas: []int32{6, 2, 4},
			want: assignPlan{waitFor: -1,
				want: set(2, 4, 6), openReplicas: []int32{2, 4, 6},
				expectStores: 3},
		},
		{
			name: "an assignment without replicas closes every standby held",
			h:    func(h *holding) { h.standby = set(2, 1) },
			want: assignPlan{waitFor: -1, want: set(), closeReplicas: []int32{1, 2}},
		},
		{
			name:  "a replica named for a task that is active here is not opened",
			h:     func(h *holding) { h.active = set(0); h.startedAny = true },
			tasks: []int32{1}, replicas: []int32{0, 1},
			want: assignPlan{waitFor: -1, pause: []int32{1},
				start:        []taskStart{{id: 1, moved: true}},
				want:         set(),
				expectStores: 2, startedAny: true},
		},
		{
			name:  "a task already active does not start again, but its partitions are paused with the rest",
			h:     func(h *holding) { h.active = set(0); h.startedAny = true },
			tasks: []int32{0, 1},
			want: assignPlan{waitFor: -1, pause: []int32{0, 1},
				start:        []taskStart{{id: 1, moved: true}},
				want:         set(),
				expectStores: 2, startedAny: true},
		},
		{
			name:  "with a broken topology no task starts and the partitions stay paused",
			h:     func(h *holding) { h.topologyBroken = true; h.standby = set(0) },
			tasks: []int32{0}, replicas: []int32{1},
			want: assignPlan{waitFor: -1, pause: []int32{0},
				want: set(1), closeReplicas: []int32{0}, openReplicas: []int32{1},
				expectStores: 1},
		},
		{
			name:  "a stateless topology holds no replicas",
			h:     func(h *holding) { h.stores = 0 },
			tasks: []int32{0}, replicas: []int32{1},
			want: assignPlan{waitFor: -1, pause: []int32{0},
				start: []taskStart{{id: 0}},
				want:  set(), startedAny: true},
		},
		{
			name:  "a task whose replica is opening waits for that open, and nothing else is planned",
			h:     func(h *holding) { h.opening = 2; h.want = set(2) },
			tasks: []int32{1, 2},
			want:  assignPlan{waitFor: 2},
		},
		{
			name:  "an assignment of other tasks does not wait for a replica opening",
			h:     func(h *holding) { h.opening = 2; h.want = set(2); h.startedAny = true },
			tasks: []int32{1}, replicas: []int32{2},
			want: assignPlan{waitFor: -1, pause: []int32{1},
				start: []taskStart{{id: 1, moved: true}},
				want:  set(2), openReplicas: []int32{2},
				expectStores: 2, startedAny: true},
		},
		{
			name: "an empty assignment pauses nothing and starts nothing",
			want: assignPlan{waitFor: -1, want: set()},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := idle()
			if c.h != nil {
				c.h(&h)
			}
			before := clone(h)
			got := planAssign(h, c.tasks, c.replicas)
			if err := sameAssignPlan(got, c.want); err != nil {
				t.Errorf("planAssign(%+v, %v, %v): %v\ngot  %+v\nwant %+v", h, c.tasks, c.replicas, err, got, c.want)
			}
			if !sameHolding(h, before) {
				t.Errorf("planAssign changed its holding: %+v, was %+v", h, before)
			}
		})
	}
}

// sameAssignPlan reports how got differs from want, nil when it does not.
func sameAssignPlan(got, want assignPlan) error {
	switch {
	case got.waitFor != want.waitFor:
		return fmt.Errorf("waitFor %d, want %d", got.waitFor, want.waitFor)
	case !slices.Equal(got.pause, want.pause):
		return fmt.Errorf("pause %v, want %v", got.pause, want.pause)
	case !slices.Equal(got.start, want.start):
		return fmt.Errorf("start %+v, want %+v", got.start, want.start)
	case !maps.Equal(got.want, want.want):
		return fmt.Errorf("want %v, want %v", got.want, want.want)
	case !slices.Equal(got.closeReplicas, want.closeReplicas):
		return fmt.Errorf("closeReplicas %v, want %v", got.closeReplicas, want.closeReplicas)
	case !slices.Equal(got.openReplicas, want.openReplicas):
		return fmt.Errorf("openReplicas %v, want %v", got.openReplicas, want.openReplicas)
	case got.expectStores != want.expectStores:
		return fmt.Errorf("expectStores %d, want %d", got.expectStores, want.expectStores)
	case got.startedAny != want.startedAny:
		return fmt.Errorf("startedAny %v, want %v", got.startedAny, want.startedAny)
	}
	return nil
}

func clone(h holding) holding {
	h.active, h.standby = maps.Clone(h.active), maps.Clone(h.standby)
	h.want, h.rewinding = maps.Clone(h.want), maps.Clone(h.rewinding)
	return h
}

func sameHolding(a, b holding) bool {
	return maps.Equal(a.active, b.active) && maps.Equal(a.standby, b.standby) &&
		maps.Equal(a.want, b.want) && maps.Equal(a.rewinding, b.rewinding) &&
		a.opening == b.opening && a.stores == b.stores && a.topologyBroken == b.topologyBroken &&
		a.startedAny == b.startedAny && a.broken == b.broken && a.closing == b.closing
}

func TestPlanRevoke(t *testing.T) {
	cases := []struct {
		name  string
		h     func(h *holding)
		tasks []int32
		want  revokePlan
	}{
		{
			name:  "revoked tasks stop, commit once, and stay here as standbys",
			h:     func(h *holding) { h.active = set(0, 1, 2) },
			tasks: []int32{2, 0},
			want:  revokePlan{stop: []int32{2, 0}, commit: true, keep: true},
		},
		{
			name:  "tasks not active here are not stopped",
			h:     func(h *holding) { h.active = set(0); h.standby = set(7) },
			tasks: []int32{0, 7},
			want:  revokePlan{stop: []int32{0}, commit: true, keep: true},
		},
		{
			name:  "on a graceful shutdown they commit and close",
			h:     func(h *holding) { h.active = set(0); h.closing = true },
			tasks: []int32{0},
			want:  revokePlan{stop: []int32{0}, commit: true},
		},
		{
			name:  "in a broken session they drop uncommitted",
			h:     func(h *holding) { h.active = set(0); h.broken = true },
			tasks: []int32{0},
			want:  revokePlan{stop: []int32{0}, keep: true},
		},
		{
			name:  "a task stopped for a restart is forgotten, not restarted",
			h:     func(h *holding) { h.active = set(0); h.rewinding = set(3) },
			tasks: []int32{0, 3},
			want:  revokePlan{stop: []int32{0}, forget: []int32{3}, commit: true, keep: true},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := idle()
			if c.h != nil {
				c.h(&h)
			}
			got := planRevoke(h, c.tasks)
			if !slices.Equal(got.stop, c.want.stop) || !slices.Equal(got.forget, c.want.forget) ||
				got.commit != c.want.commit || got.keep != c.want.keep {
				t.Errorf("planRevoke(%+v, %v) = %+v, want %+v", h, c.tasks, got, c.want)
			}
		})
	}
}

func TestARevokedTaskIsKeptOnlyWhenItsStoresWereActiveAndHealthy(t *testing.T) {
	healthy := revokedTask{activated: true, stateful: true}
	cases := []struct {
		name  string
		plan  revokePlan
		task  revokedTask
		keeps bool
	}{
		{"a committed, healthy task is kept as a standby", revokePlan{commit: true, keep: true}, healthy, true},
		{"a task revoked while restoring closes: its stores never became active", revokePlan{commit: true, keep: true}, revokedTask{stateful: true}, false},
		{"a failed task closes", revokePlan{commit: true, keep: true}, revokedTask{activated: true, failed: true, stateful: true}, false},
		{"a stateless task has no stores to keep", revokePlan{commit: true, keep: true}, revokedTask{activated: true}, false},
		{"nothing is kept on shutdown", revokePlan{commit: true}, healthy, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.plan.keeps(c.task); got != c.keeps {
				t.Errorf("keeps(%+v) = %v, want %v", c.task, got, c.keeps)
			}
		})
	}
}

func TestOnlyARefusedOffsetCommitOnRevokeLeavesTheSessionRunning(t *testing.T) {
	p := planRevoke(idle(), nil)
	refused := &offsetCommitError{errors.New("REBALANCE_IN_PROGRESS")}
	if p.endsSession(fmt.Errorf("revoke: %w", refused)) {
		t.Error("a refused offset commit ends the session; the next owner only processes the records again")
	}
	if !p.endsSession(errors.New("flush: broker unreachable")) {
		t.Error("a failed flush on revoke leaves the session running; the next commit would not cure it")
	}
}

func TestPlanLost(t *testing.T) {
	cases := []struct {
		name  string
		h     func(h *holding)
		tasks []int32
		want  lostPlan
	}{
		{
			name:  "lost tasks drop uncommitted, aborting the commit in progress and the open transaction",
			h:     func(h *holding) { h.active = set(0, 1) },
			tasks: []int32{1},
			want:  lostPlan{drop: []int32{1}, abort: true},
		},
		{
			name:  "lost while committing: the same plan, the commit is aborted and never waited for",
			h:     func(h *holding) { h.active = set(0, 1); h.closing = true },
			tasks: []int32{0, 1},
			want:  lostPlan{drop: []int32{0, 1}, abort: true},
		},
		{
			name:  "losing tasks not held here aborts nothing",
			h:     func(h *holding) { h.standby = set(2) },
			tasks: []int32{2, 5},
			want:  lostPlan{},
		},
		{
			name:  "a task stopped for a restart is forgotten, not restarted",
			h:     func(h *holding) { h.rewinding = set(4) },
			tasks: []int32{4},
			want:  lostPlan{forget: []int32{4}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := idle()
			if c.h != nil {
				c.h(&h)
			}
			got := planLost(h, c.tasks)
			if !slices.Equal(got.drop, c.want.drop) || !slices.Equal(got.forget, c.want.forget) || got.abort != c.want.abort {
				t.Errorf("planLost(%+v, %v) = %+v, want %+v", h, c.tasks, got, c.want)
			}
		})
	}
}

func TestAReplicaOpenedIsKeptOnlyWhileTheLatestAssignmentWantsIt(t *testing.T) {
	cases := []struct {
		name           string
		h              func(h *holding)
		failed, opened bool
		want           replicaFate
	}{
		{"a replica still wanted is kept", func(h *holding) { h.want = set(3) }, false, true, replicaKept},
		{"a replica the plan moved away while it opened is closed", func(h *holding) { h.want = set(4) }, false, true, replicaClosed},
		{"a replica whose task became active meanwhile is closed", func(h *holding) { h.want = set(3); h.active = set(3) }, false, true, replicaClosed},
		{"stores the state manager holds for another use are neither kept nor closed", func(h *holding) { h.want = set(3) }, false, false, replicaNotOurs},
		{"a failed open holds nothing", func(h *holding) { h.want = set(3) }, true, false, replicaFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := idle()
			c.h(&h)
			if got := replicaOpened(h, 3, c.failed, c.opened); got != c.want {
				t.Errorf("replicaOpened(%+v, 3, failed %v, opened %v) = %v, want %v", h, c.failed, c.opened, got, c.want)
			}
		})
	}
}

func TestAReconcileOpensOnlyAWantedReplicaNotActiveOrHeld(t *testing.T) {
	h := idle()
	h.want, h.active, h.standby = set(1, 2, 3), set(2), set(3)
	for id, want := range map[int32]bool{1: true, 2: false, 3: false, 4: false} {
		if got := h.wantsReplica(id); got != want {
			t.Errorf("wantsReplica(%d) = %v, want %v (want %v, active %v, held %v)", id, got, want, h.want, h.active, h.standby)
		}
	}
}

// TestPlanAssignInvariants checks, over random holdings and assignments,
// what every assignment plan keeps true: a task starts at most once and
// only if not active; it is promoted exactly when its replica is held;
// every replica held is either promoted, kept or closed; every wanted
// replica is held or opened; none is both; and the plan waits exactly when
// a task's replica is opening.
func TestPlanAssignInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	subset := func(n int32) []int32 {
		var out []int32
		for id := range n {
			if r.IntN(3) == 0 {
				out = append(out, id)
			}
		}
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	for i := range 2000 {
		const n = 8
		h := holding{
			active: set(subset(n)...), standby: set(subset(n)...), want: set(subset(n)...),
			opening: int32(r.IntN(n+3)) - 3, stores: r.IntN(3),
			topologyBroken: r.IntN(8) == 0, startedAny: r.IntN(2) == 0,
		}
		for id := range h.active {
			delete(h.standby, id) // a task is active or held, never both
		}
		if h.opening >= 0 {
			delete(h.standby, h.opening)
			delete(h.active, h.opening)
		}
		tasks, replicas := subset(n), subset(n)
		p := planAssign(h, tasks, replicas)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("case %d: holding %+v, tasks %v, replicas %v: plan %+v: %s", i, h, tasks, replicas, p, fmt.Sprintf(format, args...))
		}
		if waits := h.opening >= 0 && slices.Contains(tasks, h.opening); waits != (p.waitFor >= 0) {
			fail("waitFor %d; a task's replica opening: %v", p.waitFor, waits)
		}
		if p.waitFor >= 0 {
			continue
		}
		started := make(map[int32]bool)
		for _, s := range p.start {
			if started[s.id] || h.active[s.id] || h.topologyBroken || !slices.Contains(tasks, s.id) {
				fail("task %d started wrongly", s.id)
			}
			started[s.id] = true
			if s.promote != h.standby[s.id] {
				fail("task %d promote %v, held %v", s.id, s.promote, h.standby[s.id])
			}
		}
		for id := range h.standby {
			closed := slices.Contains(p.closeReplicas, id)
			if started[id] == (p.want[id] || closed) || (p.want[id] && closed) {
				fail("held replica %d: promoted %v, kept %v, closed %v", id, started[id], p.want[id], closed)
			}
		}
		for id := range p.want {
			opened := slices.Contains(p.openReplicas, id)
			if h.standby[id] == opened || started[id] || h.active[id] || h.stores == 0 {
				fail("wanted replica %d: held %v, opened %v", id, h.standby[id], opened)
			}
		}
		if want := (len(h.active) + len(started) + len(p.want)) * h.stores; p.expectStores != want {
			fail("expectStores %d, want %d", p.expectStores, want)
		}
	}
}
