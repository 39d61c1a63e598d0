package service

import (
	"fmt"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/query"
	"github.com/rackstream/rackstream/state"
)

// What each read isolation returns, through this adapter:
//
//   - committed: the store's committed LevelDB state (state.CommittedView):
//     what the task's last commit wrote, or, on a standby, what it has
//     applied of the changelog.
//   - latest (at-least-once): the task's latest processed state
//     (processor.FreshView): its record cache over its write buffer over
//     the committed state, so a lookup sees a processed record's writes at
//     once, not at the next commit. On a standby it is what the standby
//     has applied, the same as committed. Under exactly-once the query
//     server refuses latest; were it asked, this adapter would read
//     committed state (the runtime offers no view of an open transaction).
//
// Either way the position is the store's checkpoint, read before the
// data: the checkpoint is published after the LevelDB batch it covers, so
// the value read next is at least that new (a latest value may be newer,
// and is not durable until the next commit).
//
// Every read checks the store's health first (state.DB.Err): a store
// whose task failed (a LevelDB error, a changelog produce error) answers an
// error, never its possibly stale data, and its status is idle.

// Replica returns this instance's replica of store for task, with the role
// the runtime reports for the task when the request arrived.
func (a runtimeAdapter) Replica(store string, task int32) query.ReplicaView {
	rep, ok := a.rt.Replica(task)
	if !ok {
		return nil
	}
	s := rep.Stores[store]
	if s == nil {
		return nil
	}
	return storeReplica{role: rep.Role, s: s, fresh: rep.Fresh(store)}
}

func (a runtimeAdapter) Replicas() []query.ReplicaStatus {
	out := a.globalStatuses() // global.go
	for task := range a.rt.Tasks() {
		rep, ok := a.rt.Replica(task)
		if !ok {
			continue
		}
		for _, s := range rep.Stores {
			st := storeReplica{role: rep.Role, s: s}.Status()
			if !rep.StreamTime.IsZero() {
				ms := rep.StreamTime.UnixMilli()
				st.StreamTime = &ms
			}
			out = append(out, st)
		}
	}
	return out
}

// storeReplica is one store of a local task as the query server reads it:
// through its read-only View, after checking its health.
type storeReplica struct {
	role  state.Role // the task's role when the request arrived
	s     *state.DB
	fresh *processor.FreshView // latest reads; nil: committed only
}

func (r storeReplica) Status() query.ReplicaStatus {
	st := query.ReplicaStatus{Store: r.s.Name(), Task: r.s.Task(), Lag: r.s.Lag(), Position: r.s.Checkpoint()}
	switch {
	case r.s.Err() != nil:
		// The error itself is the runtime's to log; clients see words.
		st.Role, st.Reason = query.RoleIdle, "the task has failed"
	case r.role == state.RoleActive:
		st.Role = query.RoleActive
	case r.role == state.RoleStandby:
		st.Role = query.RoleStandby
	case r.role == state.RoleRestoring:
		st.Role, st.Reason = query.RoleRestoring, "restoring from the changelog"
	default:
		st.Role, st.Reason = query.RoleIdle, "task is "+r.role.String()
	}
	return st
}

// healthy returns the store's error, wrapped, once its task has failed.
func (r storeReplica) healthy() error {
	if err := r.s.Err(); err != nil {
		return fmt.Errorf("store %s of task %d has failed: %w", r.s.Name(), r.s.Task(), err)
	}
	return nil
}

// Get reads the checkpoint first, then the value at iso (see the top of
// this file).
func (r storeReplica) Get(key []byte, iso query.Isolation) ([]byte, bool, int64, error) {
	if err := r.healthy(); err != nil {
		return nil, false, 0, err
	}
	pos := r.s.Checkpoint()
	if iso == query.IsolationLatest && r.fresh != nil {
		v, found, err := r.fresh.Get(key)
		return v, found, pos, err
	}
	v, found, err := r.s.View().Get(key)
	return v, found, pos, err
}

func (r storeReplica) Scan(start, end []byte, iso query.Isolation, fn func(key, value []byte) bool) (int64, error) {
	if err := r.healthy(); err != nil {
		return 0, err
	}
	pos := r.s.Checkpoint()
	if iso == query.IsolationLatest && r.fresh != nil {
		return pos, r.fresh.Scan(start, end, fn)
	}
	return pos, r.s.View().Scan(start, end, fn)
}

// assignmentSettings are the instance's own settings that shape a plan,
// for /v1/metadata: it shows the leader's, carried in the placement, and
// these only for a placement without them (a group speaking an older wire
// version), and their probing interval, which the assignment does not carry.
func assignmentSettings(cfg *config.Config) *assignor.MetadataSettings {
	return &assignor.MetadataSettings{
		NumStandbyReplicas:         cfg.NumStandbyReplicas,
		AcceptableRecoveryLag:      cfg.AcceptableRecoveryLag,
		MaxWarmupReplicas:          cfg.MaxWarmupReplicas,
		RackAwareAssignmentTags:    append([]string{}, cfg.RackAwareAssignmentTags...),
		ProbingRebalanceIntervalMs: cfg.ProbingRebalanceInterval.Milliseconds(),
	}
}
