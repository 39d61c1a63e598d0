package query

import (
	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/state"
)

// Runtime is what the query server needs from the processor runtime. The
// server calls its methods from many goroutines at once; each must be safe
// for concurrent use and cheap (they run on every request).
type Runtime interface {
	// Self returns this instance's process id (the id it has in the
	// placement's members).
	Self() string
	// Placement returns the placement of the current generation, nil before
	// the instance first joined the group. The server never modifies it.
	Placement() *balancer.Placement
	// Replica returns this instance's local replica of store for task, or
	// nil when the instance holds none (including an unknown store).
	Replica(store string, task int32) Replica
	// Replicas returns the status of every local replica (every store of
	// every task this instance holds), for /v1/status and /v1/metadata.
	Replicas() []ReplicaStatus
	// Ready returns nil when the instance is ready (joined the group and
	// every active task restored), else why not: a *NotReady, whose
	// condition clients see on /readyz, /v1/status and /v1/metadata. Any
	// other error is logged and shown to clients only as "not ready".
	Ready() error
}

// NotReady says why an instance is not ready. Condition is for clients
// (/readyz is unauthenticated): words naming the condition, such as "task 3
// is restoring" or a topology change's topics and partition counts; never a
// raw error, a peer's URL or a secret. Cause, if any, is the detail for the
// log.
type NotReady struct {
	Condition string
	Cause     error
}

func (e *NotReady) Error() string {
	if e.Cause == nil {
		return e.Condition
	}
	return e.Condition + ": " + e.Cause.Error()
}

func (e *NotReady) Unwrap() error { return e.Cause }

// Role is what a local replica is doing, as far as queries care.
type Role string

const (
	// RoleActive: the task is processed here and its state is caught up.
	// Its reads are authoritative.
	RoleActive Role = "active"
	// RoleStandby: the replica tails the task's changelog. It may answer
	// reads that allow its lag (max_lag).
	RoleStandby Role = "standby"
	// RoleRestoring: the replica is catching up before it becomes active
	// (or a warmup still restoring). It answers nothing.
	RoleRestoring Role = "restoring"
	// RoleIdle: opened but neither active nor tailing, or closed or failed.
	// It answers nothing.
	RoleIdle Role = "idle"
)

// ReplicaStatus describes one local replica of one store of one task.
type ReplicaStatus struct {
	Store string `json:"store"`
	Task  int32  `json:"task"`
	Role  Role   `json:"role"`
	// Lag is the changelog end offset minus Position, never negative; -1
	// when no end offset has been seen yet.
	Lag int64 `json:"lag"`
	// Position is the store's checkpoint: the next changelog offset to
	// read (the last applied offset + 1).
	Position int64 `json:"position"`
	// Reason says why the replica does not serve reads, when it does not
	// (a restore in progress, a failed task), in words clients may see.
	Reason string `json:"reason,omitempty"`
}

// Replica is one local replica of one store of one task, as queries read
// it. Reads see committed state only (under exactly-once, never an open
// transaction's writes). Implementations must be safe for concurrent use.
type Replica interface {
	// Status returns the replica's current role, lag and position.
	Status() ReplicaStatus
	// Get returns the committed value of key and a position that the value
	// is at least as new as: a checkpoint read before the value.
	Get(key []byte) (value []byte, found bool, position int64, err error)
	// Scan calls fn for each committed key in [start, end) in key order
	// (nil bounds are open) until fn returns false; the slices are valid
	// only during the call. It returns a position the scanned data is at
	// least as new as.
	Scan(start, end []byte, fn func(key, value []byte) bool) (position int64, err error)
}

// Store describes a store the server answers queries for.
type Store struct {
	// Name is the store's name, as in the URL.
	Name string
	// Render decodes a stored value for display with the store's value
	// codec; the result is marshalled with encoding/json (a string as a
	// string, []byte as base64, a JSON codec's value as that JSON). Nil
	// renders raw bytes as base64. processor.StoreInfo.Render fits.
	Render func(value []byte) (any, error)
}

// StoreReplica adapts one store of a local task as a Replica, given the
// task's role as the runtime reports it (a snapshot taken when the request
// arrived). The runtime can implement Runtime.Replica with it.
func StoreReplica(role state.Role, s *state.Store) Replica {
	if s == nil {
		return nil
	}
	return stateReplica{role: role, s: s}
}

// StateReplica adapts the store named store of a state.Task as a Replica,
// or returns nil when t is nil or has no such store. A task with a storage
// error answers nothing.
//
//	func (r *runtime) Replica(store string, task int32) query.Replica {
//		return query.StateReplica(r.states.Task(task), store)
//	}
func StateReplica(t *state.Task, store string) Replica {
	if t == nil {
		return nil
	}
	s := t.Store(store)
	if s == nil {
		return nil
	}
	return stateReplica{role: t.Role(), s: s, t: t}
}

type stateReplica struct {
	role state.Role
	s    *state.Store
	t    *state.Task // when set, its error makes the replica idle
}

func (r stateReplica) Status() ReplicaStatus {
	st := ReplicaStatus{Store: r.s.Name(), Task: r.s.Task(), Lag: r.s.Lag(), Position: r.s.Checkpoint()}
	var err error
	if r.t != nil {
		err = r.t.Err()
	}
	switch {
	case err != nil:
		// The error itself is the runtime's to log; clients see words.
		st.Role, st.Reason = RoleIdle, "the task has failed"
	case r.role == state.RoleActive:
		st.Role = RoleActive
	case r.role == state.RoleStandby:
		st.Role = RoleStandby
	case r.role == state.RoleRestoring:
		st.Role, st.Reason = RoleRestoring, "restoring from the changelog"
	default:
		st.Role, st.Reason = RoleIdle, "task is "+r.role.String()
	}
	return st
}

// Get reads the checkpoint first: the checkpoint is published after the
// LevelDB batch it covers, so the value read next is at least that new.
func (r stateReplica) Get(key []byte) ([]byte, bool, int64, error) {
	pos := r.s.Checkpoint()
	v, found, err := r.s.View().Get(key)
	return v, found, pos, err
}

func (r stateReplica) Scan(start, end []byte, fn func(key, value []byte) bool) (int64, error) {
	pos := r.s.Checkpoint()
	return pos, r.s.View().Scan(start, end, fn)
}

// StateReplicas returns the status of every store of every open task of m
// among tasks [0, tasks): an implementation of Runtime.Replicas.
func StateReplicas(m *state.Manager, tasks int32) []ReplicaStatus {
	var out []ReplicaStatus
	for id := range tasks {
		t := m.Task(id)
		if t == nil {
			continue
		}
		for _, s := range t.Stores() {
			out = append(out, stateReplica{role: t.Role(), s: s, t: t}.Status())
		}
	}
	return out
}
