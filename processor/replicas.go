package processor

import "github.com/rackstream/rackstream/state"

// Replica reconcile: the standby and warmup replicas an assignment gives
// or takes away are opened and closed after the group callback that
// brought the assignment has returned, not inside it. The Kafka client
// fetches the committed offsets of newly assigned partitions only once
// OnPartitionsAssigned returns, so every LevelDB open (tens of ms each,
// and an assignment after a failover opens several) would otherwise delay
// the first fetch, and so the first commit, of the tasks that moved here:
// the failover time users see (issue 17).
//
// What keeps it safe (member.reconciling): the next assignment waits for
// the reconcile in progress before it starts tasks, so a task never starts
// from a replica still opening (nor opens its own stores beside it);
// closeAll waits for it too, so that no replica opens after the stores
// close. A revoke only ever turns active tasks into replicas, and a
// reconcile only opens tasks that were not active: the two never touch the
// same task. Each open checks under mu that the latest assignment still
// wants it.

// reconcileReplicas closes the replicas the plan moved away and opens
// those it wants here, in task order.
func (m *member) reconcileReplicas(closeStandbys []*state.Task, open []int32) {
	for _, st := range closeStandbys {
		if err := st.Close(); err != nil {
			m.log.Warn("closing a standby the plan moved away", "task", st.ID(), "err", err)
		}
	}
	for _, id := range open {
		if !m.replicaWanted(id) {
			continue
		}
		st, err := m.openReplica(id)
		if err != nil {
			m.log.Error("opening a standby", "task", id, "err", err)
			continue
		}
		m.mu.Lock()
		m.standby[id] = st
		m.mu.Unlock()
	}
}

// replicaWanted reports whether the latest assignment still wants task id
// as a replica here, and it is neither active nor held already.
func (m *member) replicaWanted(id int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.wantReplicas[id] && m.active[id] == nil && m.standby[id] == nil
}

// openReplica opens task id's stores (or takes them as the state manager
// holds them) and starts them tailing their changelogs.
func (m *member) openReplica(id int32) (*state.Task, error) {
	if m.openReplicaHook != nil {
		return m.openReplicaHook(id)
	}
	return m.openReplicaDefault(id)
}

func (m *member) openReplicaDefault(id int32) (*state.Task, error) {
	st := m.mgr.Task(id)
	var err error
	if st == nil {
		st, err = m.mgr.OpenTask(id, m.specs)
	}
	if err == nil && st.Role() == state.RoleIdle {
		err = st.StartStandby()
	}
	return st, err
}
