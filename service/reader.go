package service

import (
	"fmt"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/query"
	"github.com/rackstream/rackstream/tags"
)

// What each read isolation returns, through this adapter:
//
//   - committed: the store's committed LevelDB state (processor.StoreView):
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
// Every read checks the store's health first (processor.StoreView.Err): a
// store whose task failed (a LevelDB error, a changelog produce error)
// answers an error, never its possibly stale data, and its status is idle.

// Replica returns this instance's replica of store for task, with the role
// the runtime reports for the task when the request arrived.
func (a runtimeAdapter) Replica(store string, task int32) query.ReplicaView {
	rep, ok := a.rt.Replica(task)
	if !ok {
		return nil
	}
	s := rep.Store(store)
	if s == nil {
		return nil
	}
	r := storeReplica{role: rep.Role, s: s}
	if f := rep.Fresh(store); f != nil {
		r.fresh = f
	}
	return r
}

func (a runtimeAdapter) Replicas() []query.ReplicaStatus {
	out := a.globalStatuses() // global.go
	for task := range a.rt.Tasks() {
		rep, ok := a.rt.Replica(task)
		if !ok {
			continue
		}
		for _, name := range rep.Stores() {
			st := storeReplica{role: rep.Role, s: rep.Store(name)}.Status()
			if !rep.StreamTime.IsZero() {
				ms := rep.StreamTime.UnixMilli()
				st.StreamTime = &ms
			}
			out = append(out, st)
		}
	}
	return out
}

// committedReader is what the adapter reads of one store at its committed
// state, with its health and position (processor.StoreView).
type committedReader interface {
	Name() string
	Task() int32
	Checkpoint() int64
	Lag() int64
	Err() error
	rangeReader
}

// rangeReader reads a store's keys (processor.StoreView at the committed
// state, processor.FreshView at the latest).
type rangeReader interface {
	Get(key []byte) (value []byte, found bool, err error)
	Scan(start, end []byte, fn func(key, value []byte) bool) error
}

// storeReplica is one store of a local task as the query server reads it:
// through its read-only views, after checking its health.
type storeReplica struct {
	role  processor.Role // the task's role when the request arrived
	s     committedReader
	fresh rangeReader // latest reads; nil: committed only
}

func (r storeReplica) Status() query.ReplicaStatus {
	st := query.ReplicaStatus{Store: r.s.Name(), Task: r.s.Task(), Lag: r.s.Lag(), Position: r.s.Checkpoint()}
	switch {
	case r.s.Err() != nil:
		// The error itself is the runtime's to log; clients see words.
		st.Role, st.Reason = query.RoleIdle, "the task has failed"
	case r.role == processor.RoleActive:
		st.Role = query.RoleActive
	case r.role == processor.RoleStandby:
		st.Role = query.RoleStandby
	case r.role == processor.RoleRestoring:
		st.Role, st.Reason = query.RoleRestoring, "restoring from the changelog"
	default:
		st.Role, st.Reason = query.RoleIdle, "task is "+string(r.role)
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
	v, found, err := r.s.Get(key)
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
	return pos, r.s.Scan(start, end, fn)
}

// assignmentSettings are the instance's own settings that shape a plan,
// for /v1/metadata: it shows the leader's, carried in the placement, and
// these only for a placement without them (a group speaking an older wire
// version), and their probing interval, which the assignment does not carry.
func assignmentSettings(cfg *config.Config) *assignor.MetadataSettings {
	st := &assignor.MetadataSettings{Settings: cfg.Placement, ProbingRebalanceIntervalMs: cfg.ProbingRebalanceInterval.Milliseconds()}
	st.RackAwareAssignmentTags = append(tags.Keys{}, cfg.Placement.RackAwareAssignmentTags...)
	return st
}
