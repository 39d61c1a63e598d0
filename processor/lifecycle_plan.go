package processor

import (
	"maps"
	"slices"
)

// The lifecycle's decisions: what an assignment, a revoke and a loss do
// with the tasks and replicas held here, and whether a replica just opened
// is kept. Each is a plain function of a holding, a copy of the member's
// state, and returns a plan. The member carries the plan out
// (rebalance.go, replicas.go). Nothing here touches a task, a store or a
// client, so lifecycle_plan_test.go states the rules with no broker and no
// stores.
//
// What waits on what:
//   - An assignment that makes active the task whose replica is opening
//     waits for that open (assignPlan.waitFor) and is planned again, so the
//     task is promoted from the replica, never opened beside it.
//   - An assignment starts its tasks and closes the replicas it moved away
//     before its callback returns. The replicas it adds open after, one
//     reconcile at a time.
//   - A revoke stops its tasks after their in-flight records, then commits
//     them once, then keeps or drops each (revokePlan.keeps).
//   - A loss stops its tasks and drops them uncommitted, then aborts the
//     open transaction their records are in.

// holding is what the decisions read of the member. It is a copy: a plan
// made from it never changes the member.
type holding struct {
	active  map[int32]bool // tasks active here
	standby map[int32]bool // standby and warmup replicas held here
	// opening is the replica a reconcile is opening, -1 for none.
	opening int32
	// want are the replicas the latest assignment gives this instance.
	want map[int32]bool
	// rewinding are the tasks stopped for a restart from their last
	// commit (rewind.go), not active until the poll loop restarts them.
	rewinding map[int32]bool
	// stores is the store count of a task; 0 for a stateless topology,
	// which holds no replicas.
	stores int
	// topologyBroken: the partition counts changed; no task starts.
	topologyBroken bool
	// startedAny: an assignment of this session has started tasks.
	startedAny bool
	// broken: the session is ending; revoked tasks drop uncommitted.
	broken bool
	// closing: a graceful shutdown; revoked tasks close once committed.
	closing bool
}

// taskStart is a task an assignment starts.
type taskStart struct {
	id int32
	// promote: the replica held here becomes the active task, catching up
	// only its lag; otherwise the stores open and restore.
	promote bool
	// moved: the task moved here after the session's first tasks started,
	// or is promoted; it asks for a commit after its first record.
	moved bool
}

// assignPlan is what an assignment does.
type assignPlan struct {
	// waitFor is the replica being opened that a task of the assignment
	// would start from, -1 for none. When set the plan holds nothing else:
	// the member waits for the open to end and plans again.
	waitFor int32
	// pause are the assignment's tasks, whose partitions stay paused until
	// each task has started. Those that do not start stay paused.
	pause []int32
	// start are the tasks to start, in the assignment's order.
	start []taskStart
	// want are the replicas the assignment leaves here: the replica
	// reconciles open only these.
	want map[int32]bool
	// closeReplicas are held replicas the assignment moved away, sorted.
	// They close before the callback returns, since a later close could
	// close stores a later assignment made active.
	closeReplicas []int32
	// openReplicas are wanted replicas not held yet, sorted. They open
	// after the callback returns.
	openReplicas []int32
	// expectStores is how many stores are held once the plan is carried
	// out, for the state manager's memory budget.
	expectStores int
	// startedAny is the holding's startedAny after the plan.
	startedAny bool
}

// planAssign plans an assignment of tasks (active here from now on) and
// replicas (the standby and warmup tasks the placement gives this
// instance).
func planAssign(h holding, tasks, replicas []int32) assignPlan {
	if h.opening >= 0 && slices.Contains(tasks, h.opening) {
		return assignPlan{waitFor: h.opening}
	}
	p := assignPlan{waitFor: -1, want: make(map[int32]bool)}
	if len(tasks) > 0 {
		p.pause = slices.Clone(tasks)
	}
	active := maps.Clone(h.active)
	if active == nil {
		active = make(map[int32]bool)
	}
	promoted := make(map[int32]bool)
	for _, id := range tasks {
		if active[id] || h.topologyBroken {
			continue
		}
		held := h.standby[id]
		p.start = append(p.start, taskStart{id: id, promote: held, moved: held || h.startedAny})
		active[id] = true
		promoted[id] = held
	}
	p.startedAny = h.startedAny || len(p.start) > 0
	for _, id := range replicas {
		if !active[id] && h.stores > 0 {
			p.want[id] = true
		}
	}
	for id := range h.standby {
		if !promoted[id] && !p.want[id] {
			p.closeReplicas = append(p.closeReplicas, id)
		}
	}
	slices.Sort(p.closeReplicas)
	for id := range p.want {
		if !h.standby[id] {
			p.openReplicas = append(p.openReplicas, id)
		}
	}
	slices.Sort(p.openReplicas)
	p.expectStores = (len(active) + len(p.want)) * h.stores
	return p
}

// revokePlan is what an orderly revoke does.
type revokePlan struct {
	// stop are the revoked tasks active here, in the revoke's order. They
	// stop after their in-flight records, all within one bound.
	stop []int32
	// forget are revoked tasks stopped for a restart: not restarted.
	forget []int32
	// commit: the stopped tasks commit once. Otherwise the session is
	// broken, and they drop uncommitted; the next owner processes their
	// records again.
	commit bool
	// keep: the committed tasks' stores stay here as standbys, promoted
	// if the task comes back, closed by the next assignment otherwise.
	// Not on shutdown.
	keep bool
}

// planRevoke plans the revoke of tasks.
func planRevoke(h holding, tasks []int32) revokePlan {
	p := revokePlan{commit: !h.broken, keep: !h.closing}
	p.stop, p.forget = taken(h, tasks)
	return p
}

// revokedTask is what the revoke knows of a task once it stopped and
// committed.
type revokedTask struct {
	activated bool // its stores were restored and active
	failed    bool // it stopped with an error
	stateful  bool // it has stores
}

// keeps reports whether the revoke keeps task t's stores as a standby
// after a successful commit. A task revoked while it restored, a failed
// task and a stateless one have nothing to keep: they drop.
func (p revokePlan) keeps(t revokedTask) bool {
	return p.keep && t.activated && !t.failed && t.stateful
}

// endsSession reports whether a revoke whose commit failed with err ends
// the session. Its tasks drop either way. A refused offset commit (a
// rebalance in progress, a fenced generation) only means the next owner
// processes their records again; anything else the next commit would not
// cure.
func (p revokePlan) endsSession(err error) bool {
	return !errorsAsOffsetCommit(err)
}

// lostPlan is what a loss does: another member may own the partitions
// already, so nothing of the lost tasks commits.
type lostPlan struct {
	// drop are the lost tasks active here: stopped and dropped, their
	// uncommitted writes discarded.
	drop []int32
	// forget are lost tasks stopped for a restart: not restarted.
	forget []int32
	// abort: the background commit in progress is cancelled, not waited
	// for, and under exactly-once the open transaction, which holds the
	// lost tasks' records, is aborted. The tasks left restart from their
	// last commit.
	abort bool
}

// planLost plans the loss of tasks.
func planLost(h holding, tasks []int32) lostPlan {
	var p lostPlan
	p.drop, p.forget = taken(h, tasks)
	p.abort = len(p.drop) > 0
	return p
}

// taken returns, of tasks, those active here and those stopped for a
// restart.
func taken(h holding, tasks []int32) (active, rewinding []int32) {
	for _, id := range tasks {
		if h.active[id] {
			active = append(active, id)
		}
		if h.rewinding[id] {
			rewinding = append(rewinding, id)
		}
	}
	return active, rewinding
}

// wantsReplica reports whether a reconcile opens task id's replica: the
// latest assignment wants it here, and the task is neither active nor
// held already.
func (h holding) wantsReplica(id int32) bool {
	return h.want[id] && !h.active[id] && !h.standby[id]
}

// replicaFate is what becomes of a replica a reconcile tried to open.
type replicaFate int

const (
	// replicaFailed: the open failed; nothing is held.
	replicaFailed replicaFate = iota
	// replicaNotOurs: the state manager holds the task's stores for
	// another use (a revoke keeping them as a standby, a task closing).
	// They are neither kept nor closed: their holder owns them.
	replicaNotOurs
	// replicaKept: still wanted; held as a standby from now on.
	replicaKept
	// replicaClosed: the plan moved on while it opened; the reconcile
	// closes what it opened before it lets a waiting assignment go on.
	replicaClosed
)

// replicaOpened decides the fate of task id's replica once its open
// returned: failed, opened (the reconcile's own stores) or neither.
func replicaOpened(h holding, id int32, failed, opened bool) replicaFate {
	switch {
	case failed:
		return replicaFailed
	case !opened:
		return replicaNotOurs
	case h.wantsReplica(id):
		return replicaKept
	}
	return replicaClosed
}
