package processor

import "github.com/rackstream/rackstream/state"

// Replica reconcile. The standby and warmup replicas an assignment gives
// are opened after the group callback that brought it has returned. Those
// it takes away close inside the callback, since a later close could close
// stores a later assignment made active. The Kafka client fetches newly
// assigned partitions' committed offsets only once OnPartitionsAssigned
// returns. So opening replicas inside it would delay the first fetch and
// commit of the tasks that moved here, the failover time users see.
//
// What keeps it safe:
//   - Reconciles run one at a time, in any order (member.reconcileTurn).
//     Each open checks under mu, before and after, that the latest
//     assignment still wants that replica and that the task is neither
//     active nor held here. A replica opened for a plan that moved on is
//     closed again.
//   - An assignment that makes active the task whose replica is opening
//     (member.opening) waits for that open and promotes the replica. So a
//     task never opens its stores beside its own replica. Any other
//     assignment goes ahead at once.
//   - closeAll waits for every reconcile, so no replica opens after the
//     stores close.
//   - A revoke only turns active tasks into replicas, and a reconcile only
//     opens stores the state manager does not hold (openReplica). The two
//     never touch the same stores, even while a revoke's commit runs.

// reconcileReplicas opens the replicas the plan wants here, in task order
// (assign closed those it moved away). Whether it opens one, and keeps it
// once open, is the holding's to say (lifecycle_plan.go).
func (m *member) reconcileReplicas(open []int32) {
	for _, id := range open {
		m.mu.Lock()
		if !m.holding().wantsReplica(id) {
			m.mu.Unlock()
			continue
		}
		m.opening = id
		m.mu.Unlock()

		st, err := m.openReplica(id)

		m.mu.Lock()
		fate := replicaOpened(m.holding(), id, err != nil, st != nil)
		if fate == replicaKept {
			m.standby[id] = st
		}
		m.mu.Unlock()
		switch fate {
		case replicaFailed:
			m.log.Error("opening a standby", "task", id, "err", err)
		case replicaNotOurs:
			m.log.Debug("not opening a standby: the state manager holds the task's stores for another use (a revoke keeping them as a standby, a task closing)", "task", id)
		case replicaClosed:
			// st is the reconcile's own, and it closes while the task is
			// still marked opening. So an assignment making the task
			// active waits for the close instead of taking the stores it
			// is about to lose.
			if err := st.Close(); err != nil {
				m.log.Warn("closing a standby the plan moved away", "task", id, "err", err)
			}
		}
		m.mu.Lock()
		m.opening = -1
		m.openDone.Broadcast()
		m.mu.Unlock()
	}
}

// openReplica opens task id's stores and starts them tailing their
// changelogs. It returns nil, and nothing to close, when the state manager
// holds the task's stores already. Those belong to whatever opened them: a
// revoke that keeps its task as a standby registers them once its commit is
// done, and a dropped task closes them. A reconcile closes only what it
// opened. Closing the stores a revoke keeps would close them under the
// standby the next assignment promotes.
func (m *member) openReplica(id int32) (*state.Task, error) {
	if m.openReplicaHook != nil {
		return m.openReplicaHook(id)
	}
	return m.openReplicaDefault(id)
}

func (m *member) openReplicaDefault(id int32) (*state.Task, error) {
	if m.mgr.Task(id) != nil {
		return nil, nil
	}
	st, err := m.mgr.OpenTask(id, m.specs)
	if err != nil {
		return nil, err
	}
	if err := st.StartStandby(); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}
