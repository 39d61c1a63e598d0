package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rackstream/rackstream/state"
)

// The rebalance path: what an instance does with its tasks when the group
// hands it partitions (assign), takes them back in an orderly way (revoke)
// or tells it they are gone (lose), and when the session ends (closeAll).
//
// member holds the tasks and standbys one session runs and the rules for
// moving them. It holds no Kafka client. The session's group callbacks call
// it with the tasks kgo's partitions name. The unit tests in
// rebalance_test.go call it directly, with a fake producer and committer
// and real stores in a temporary directory.
type member struct {
	env     *taskEnv
	commits *commits
	mgr     *state.Manager
	specs   []state.StoreSpec
	log     *slog.Logger
	met     *metrics
	phase   func(what string)
	// fail ends the session: a commit on revoke failed in a way the next
	// commit would not cure.
	fail func(error)

	// mu guards the fields from active to opening: what the lifecycle's
	// decisions read (holding) and what they change. It is never held
	// across a commit, a task's stop or any I/O.
	mu          sync.Mutex
	active      map[int32]*task
	standby     map[int32]*state.Task // standby and warmup replicas
	assigned    bool                  // an assignment arrived (and no loss since)
	closing     bool                  // graceful shutdown: revoked tasks close
	broken      error                 // the session must end; revokes then drop
	topoErr     error                 // partition counts changed: tasks stopped, none started
	revokeStart time.Time
	abandoned   []*task // tasks stop gave up on; they drop themselves
	started     []*task // every task started whose stores may still be open

	// rewinding holds the tasks an aborted transaction stopped, until the
	// poll loop restarts them from their last commit (rewind.go): nil
	// while they stop, then their input offsets to rewind to. Made by the
	// first suspend.
	rewinding map[int32]map[string]int64

	// startedAny is set once an assignment has started tasks: those
	// started after it moved here (a failover, a scale-in) and commit
	// after their first record (task.moved).
	startedAny bool
	// wantReplicas are the standby and warmup tasks the latest assignment
	// gives this instance: the replica reconcile opens only those.
	wantReplicas map[int32]bool

	// opening is the replica a reconcile is opening (replicas.go), -1 for
	// none; openDone (on mu) is broadcast when it is done. An assignment
	// that makes that task active waits for it, and promotes it.
	opening  int32
	openDone *sync.Cond

	// reconciling counts the replica reconciles in progress; closeAll waits
	// for them, so that no replica opens after the stores close.
	reconciling sync.WaitGroup
	// reconcileTurn is held by the replica reconcile in progress, so that
	// reconciles run one at a time (in any order: each open checks the
	// latest assignment). It guards no field.
	reconcileTurn sync.Mutex
	// openReplicaHook, when set (by tests), replaces openReplica's opening.
	// Set before the member is used, then only read.
	openReplicaHook func(id int32) (*state.Task, error)
}

func newMember(env *taskEnv, c *commits, mgr *state.Manager, phase func(string), fail func(error)) *member {
	m := &member{
		env: env, commits: c, mgr: mgr, specs: env.topo.storeSpecs(),
		log: env.log, met: env.met, phase: phase, fail: fail,
		active:  make(map[int32]*task),
		standby: make(map[int32]*state.Task),
		opening: -1,
	}
	m.openDone = sync.NewCond(&m.mu)
	env.abandoned = func(t *task) {
		m.mu.Lock()
		m.abandoned = append(m.abandoned, t)
		m.mu.Unlock()
	}
	return m
}

// assign starts the tasks of newTasks not running yet. Each stays paused
// until its stores are restored, or promoted from a standby held here. It
// reconciles the standbys with replicas, the standby and warmup tasks the
// plan gives this instance. Those not wanted close before it returns. The
// missing ones open after it, in the background (replicas.go). What it
// does is planAssign's (lifecycle_plan.go).
func (m *member) assign(newTasks, replicas []int32) {
	m.mu.Lock()
	p := planAssign(m.holding(), newTasks, replicas)
	for p.waitFor >= 0 {
		m.openDone.Wait()
		p = planAssign(m.holding(), newTasks, replicas)
	}
	if !m.revokeStart.IsZero() {
		m.met.rebalanceTime.Observe(time.Since(m.revokeStart).Seconds())
		m.revokeStart = time.Time{}
	}
	m.assigned = true
	if len(p.pause) > 0 {
		m.env.fetch.PauseFetchPartitions(m.env.partitions(p.pause...))
	}
	m.started = slices.DeleteFunc(m.started, func(t *task) bool { return t.closed.Load() })
	started := make([]*task, 0, len(p.start))
	for _, s := range p.start {
		var held *state.Task
		if s.promote {
			held = m.standby[s.id]
			delete(m.standby, s.id)
		}
		t := newTask(m.env, s.id, held)
		t.moved = s.moved
		m.active[s.id] = t
		started = append(started, t)
		m.started = append(m.started, t)
	}
	m.startedAny = p.startedAny
	m.shareCache()
	// Under a memory budget, the stores opened from now on share it among
	// the tasks this assignment leaves here, active and replicas.
	m.mgr.ExpectStores(p.expectStores)
	closeStandbys := make([]*state.Task, 0, len(p.closeReplicas))
	for _, id := range p.closeReplicas {
		closeStandbys = append(closeStandbys, m.standby[id])
		delete(m.standby, id)
	}
	m.wantReplicas = p.want
	m.mu.Unlock()

	for _, t := range started {
		go t.run()
	}
	// The standbys the plan moved away close here, before the callback
	// returns. A later assignment that makes one of those tasks active
	// opens its stores, taking what the state manager holds (openStores).
	// A close still to come would close them under the active task.
	for _, st := range closeStandbys {
		if err := st.Close(); err != nil {
			m.log.Warn("closing a standby the plan moved away", "task", st.ID(), "err", err)
		}
	}
	if len(p.openReplicas) == 0 {
		return
	}
	// The replicas open after the group callback returns (replicas.go):
	// the client loads the new active tasks' offsets, and so fetches their
	// records, only then.
	m.reconciling.Add(1)
	go func() {
		defer m.reconciling.Done()
		m.reconcileTurn.Lock()
		defer m.reconcileTurn.Unlock()
		m.reconcileReplicas(p.openReplicas)
	}()
}

// holding copies what the lifecycle's decisions read of the member
// (lifecycle_plan.go). The caller holds mu.
func (m *member) holding() holding {
	h := holding{
		active:         make(map[int32]bool, len(m.active)),
		standby:        make(map[int32]bool, len(m.standby)),
		opening:        m.opening,
		want:           maps.Clone(m.wantReplicas),
		rewinding:      make(map[int32]bool, len(m.rewinding)),
		stores:         len(m.specs),
		topologyBroken: m.topoErr != nil,
		startedAny:     m.startedAny,
		broken:         m.broken != nil,
		closing:        m.closing,
	}
	for id := range m.active {
		h.active[id] = true
	}
	for id := range m.standby {
		h.standby[id] = true
	}
	for id := range m.rewinding {
		h.rewinding[id] = true
	}
	return h
}

// take removes the tasks active names from the active ones and returns
// them, and forgets the restarts of those rewinding names: they are not
// ours any more. The caller holds mu.
func (m *member) take(active, rewinding []int32) []*task {
	tasks := make([]*task, 0, len(active))
	for _, id := range active {
		tasks = append(tasks, m.active[id])
		delete(m.active, id)
	}
	for _, id := range rewinding {
		delete(m.rewinding, id)
	}
	if len(tasks) > 0 {
		m.shareCache()
	}
	return tasks
}

// shareCache divides the record cache budget (statestore.cache.max.bytes,
// per instance) among the active tasks here, at every change of them. The
// caller holds mu. A new task starts with a share of every task the inputs
// have (newTask). Without this, a member holding a fraction of the tasks
// would use that fraction of its budget, and a task's merged writes and
// clean entries would no longer fit (cache.go).
func (m *member) shareCache() {
	b := m.env.opts.CacheMaxBytes
	if b <= 0 || len(m.active) == 0 {
		return
	}
	share := max(1, b/int64(len(m.active)))
	for _, t := range m.active {
		if t.cache != nil {
			t.cache.setBudget(share)
		}
	}
}

// revoke stops the revoked tasks after their in-flight record and commits
// them once: flush, stores, offsets. It keeps their stores as standbys,
// closed on shutdown or by the next assignment if the plan has no standby
// here. A broken session, or a failed commit, drops them uncommitted
// instead, and the next owner processes their records again. What it does
// is planRevoke's (lifecycle_plan.go).
func (m *member) revoke(ctx context.Context, ids []int32) {
	m.mu.Lock()
	m.revokeStart = time.Now()
	began := m.revokeStart
	p := planRevoke(m.holding(), ids)
	broken := m.broken
	tasks := m.take(p.stop, p.forget)
	m.mu.Unlock()
	if len(tasks) == 0 {
		return
	}
	// The revoke commits these tasks itself, at once: a background commit
	// in progress would only make it wait (for as long as the brokers are
	// unreachable, holding the tasks' locks).
	m.commits.abort(false)
	m.phase(fmt.Sprintf("the revoke of tasks %v: their in-flight records", ids))
	tasks = stopAll(tasks, m.env.opts.ShutdownTimeout)
	stopped := time.Now()
	if !p.commit {
		m.log.Warn("dropping revoked tasks without commit: the session is broken", "tasks", ids, "err", broken)
		dropAll(tasks)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, m.env.opts.ShutdownTimeout)
	err := m.commits.commit(cctx, tasks)
	cancel()
	// The in-flight records' time and the commit's, which includes its
	// wait for a commit in progress: a slow revoke's line says which one
	// held up the hand-off.
	took := []any{"stop", stopped.Sub(began).Round(time.Millisecond), "commit", time.Since(stopped).Round(time.Millisecond)}
	if err != nil {
		m.log.Error("commit on revoke failed; dropping the revoked tasks", append([]any{"tasks", ids, "err", err}, took...)...)
		dropAll(tasks)
		if p.endsSession(err) {
			m.fail(fmt.Errorf("commit on revoke: %w", err))
		}
		return
	}
	for _, t := range tasks {
		if !p.keeps(revokedTask{activated: t.activated, failed: t.getErr() != nil, stateful: t.st != nil}) {
			t.drop()
			continue
		}
		if err := t.st.Demote(); err != nil {
			m.log.Warn("keeping a revoked task as standby", "task", t.id, "err", err)
			t.drop()
			continue
		}
		m.mu.Lock()
		m.standby[t.id] = t.st
		m.mu.Unlock()
	}
	m.log.Info("revoked", append([]any{"tasks", ids, "closing", !p.keep}, took...)...)
}

// lose drops the lost tasks without committing: another member may own
// their partitions already. What it does is planLost's
// (lifecycle_plan.go).
func (m *member) lose(ids []int32) {
	m.mu.Lock()
	m.revokeStart = time.Now()
	m.assigned = false // not ready until the next assignment
	p := planLost(m.holding(), ids)
	tasks := m.take(p.drop, p.forget)
	m.mu.Unlock()
	if !p.abort {
		return
	}
	// A commit in progress may hold these tasks' locks while it flushes to
	// brokers that are gone: abort it (its offsets would be refused now
	// anyway) instead of waiting for it.
	m.commits.abort(false)
	m.phase(fmt.Sprintf("dropping the lost tasks %v", ids))
	dropAll(stopAll(tasks, m.env.opts.ShutdownTimeout))
	m.log.Warn("partitions lost; tasks dropped without commit", "tasks", ids)
	// Under exactly-once their records are in the open transaction, which
	// the other tasks share: abort it (txn.go).
	if err := m.commits.abortOpen(m.live()); err != nil && !errorsAsOffsetCommit(err) {
		m.fail(err)
	}
}

// stopEvery stops every task for a broken topology (err says how): their
// work is committed, and no task starts any more.
func (m *member) stopEvery(err error) {
	m.mu.Lock()
	m.topoErr = err
	tasks := slices.Collect(maps.Values(m.active))
	clear(m.active)
	m.mu.Unlock()
	tasks = stopAll(tasks, m.env.opts.ShutdownTimeout)
	if cerr := m.commits.background(tasks, true); cerr != nil { // stopped: nothing to write ahead
		m.log.Error("commit before stopping for the topology", "err", cerr)
	}
	dropAll(tasks)
}

// closeAll stops whatever the client's revoke left: tasks (dropped without
// commit) and standbys.
func (m *member) closeAll() {
	m.reconciling.Wait()
	m.mu.Lock()
	tasks := slices.Collect(maps.Values(m.active))
	clear(m.active)
	standbys := slices.Collect(maps.Values(m.standby))
	clear(m.standby)
	m.mu.Unlock()
	m.phase(fmt.Sprintf("stopping the remaining tasks %v", ids(tasks)))
	dropAll(stopAll(tasks, m.env.opts.ShutdownTimeout))
	m.phase("closing the standbys")
	for _, st := range standbys {
		if err := st.Close(); err != nil {
			m.log.Warn("closing standby", "task", st.ID(), "err", err)
		}
	}
}

// waitAbandoned waits for the tasks stop abandoned to return from their
// records (and drop themselves), until bound fires (nil: no bound). It
// reports the first one still running then, nil when none is.
func (m *member) waitAbandoned(bound <-chan time.Time) *task {
	m.mu.Lock()
	abandoned := slices.Clone(m.abandoned)
	m.mu.Unlock()
	for _, t := range abandoned {
		m.phase(fmt.Sprintf("abandoned task %d to return from its record", t.id))
		select {
		case <-t.done:
		case <-bound:
			return t
		}
	}
	return nil
}

// forceClose closes the stores of every task this session started, under
// any handler still running, and returns the tasks still in a handler.
// Their store reads and writes fail with ErrTaskClosed from now on.
// Run calls it when the shutdown outlives its bound, so that the state
// directory is released whatever a handler does.
func (m *member) forceClose() (running []int32) {
	m.mu.Lock()
	tasks := slices.Clone(m.started)
	m.mu.Unlock()
	for _, t := range tasks {
		if t.forceClose() {
			running = append(running, t.id)
		}
	}
	slices.Sort(running)
	return running
}

// setBroken marks the session as ending with err (the first one wins):
// revokes drop from now on.
func (m *member) setBroken(err error) {
	if err == nil {
		err = errors.New("session ended")
	}
	m.mu.Lock()
	if m.broken == nil {
		m.broken = err
	}
	m.mu.Unlock()
}

func (m *member) setClosing() {
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
}

// task returns the active task id, nil when it is not active here.
func (m *member) task(id int32) *task {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.active[id]
}

// live returns the active tasks, in id order.
func (m *member) live() []*task {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*task, 0, len(m.active))
	for _, id := range slices.Sorted(maps.Keys(m.active)) {
		out = append(out, m.active[id])
	}
	return out
}

// readiness reports whether every active task is running, and why not.
func (m *member) readiness() (bool, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.broken != nil {
		return false, "rebuilding the Kafka client: " + m.broken.Error()
	}
	if m.topoErr != nil {
		return false, m.topoErr.Error()
	}
	if !m.assigned {
		return false, "joining the group"
	}
	for _, id := range slices.Sorted(maps.Keys(m.active)) {
		t := m.active[id]
		if err := t.getErr(); err != nil {
			return false, err.Error()
		}
		if !t.running.Load() {
			return false, fmt.Sprintf("task %d is restoring", id)
		}
	}
	return true, ""
}

func dropAll(tasks []*task) {
	for _, t := range tasks {
		t.drop()
	}
}
