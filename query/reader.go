package query

import (
	"github.com/rackstream/rackstream/assignor/balancer"
)

// Reader is everything the query server reads, and all it may do: look up
// and scan local replicas at a read isolation, learn their position and
// status, the placement and the instance's readiness. It has no method
// that writes, and the server depends on nothing else of the runtime (this
// package imports neither package state nor package processor): the one
// implementation, in package service, adapts the runtime and its
// stores and checks a store's health on every read.
//
// The server calls these methods from many goroutines at once; each must be
// safe for concurrent use and cheap (they run on every request).
type Reader interface {
	// Self returns this instance's process id (the id it has in the
	// placement's members).
	Self() string
	// Placement returns the placement of the current generation, nil before
	// the instance first joined the group. The server never modifies it.
	Placement() *balancer.Placement
	// Replica returns this instance's local replica of store for task, or
	// nil when the instance holds none (including an unknown store).
	Replica(store string, task int32) ReplicaView
	// Global returns this instance's local copy of a global store (one
	// every instance holds whole, ServedStore.Global), nil when it holds none.
	// A replica of a windowed store (ServedStore.Windowed) is also a
	// WindowView.
	// The server reads a global store only here, never from a peer.
	Global(store string) ReplicaView
	// Replicas returns the status of every local replica (every store of
	// every task this instance holds), for /v1/status and /v1/metadata.
	Replicas() []ReplicaStatus
	// Ready returns nil when the instance is ready (joined the group and
	// every active task restored), else why not: a *NotReady, whose
	// condition clients see on /readyz, /v1/status and /v1/metadata. Any
	// other error is logged and shown to clients only as "not ready".
	Ready() error
}

// Isolation is what a read may see of a task's writes: the `isolation`
// query parameter (docs/design.md §7).
type Isolation string

const (
	// IsolationLatest reads the task's latest processed state: its writes
	// since the last commit (the write buffer, the record cache) over its
	// committed state, as Kafka Streams' interactive queries do. It is the
	// default under at-least-once and refused under exactly-once, where
	// those writes belong to an open transaction that may still abort.
	//
	// What an implementation returns for it is its own to document: the
	// runtime's (service) reads the task's record cache over its
	// write buffer over its committed state, without blocking the task; on
	// a standby, what the standby has applied.
	IsolationLatest Isolation = "latest"
	// IsolationCommitted reads the committed state only: what the last
	// commit wrote to the store (and, for a standby, what it has applied of
	// the changelog). The default under exactly-once.
	IsolationCommitted Isolation = "committed"
)

// GlobalTask is the task a global store's answers name: a global store
// is not partitioned into tasks.
const GlobalTask int32 = -1

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

// ReplicaRole is what a local replica is doing, as far as queries care.
type ReplicaRole string

const (
	// RoleActive: the task is processed here and its state is caught up
	// (for a global store: restored and tailing its topic). Its reads are
	// authoritative.
	RoleActive ReplicaRole = "active"
	// RoleStandby: the replica tails the task's changelog. It may answer
	// reads that allow its lag (max_lag).
	RoleStandby ReplicaRole = "standby"
	// RoleRestoring: the replica is catching up before it becomes active
	// (or a warmup still restoring). It answers nothing.
	RoleRestoring ReplicaRole = "restoring"
	// RoleIdle: opened but neither active nor tailing, or closed or failed.
	// It answers nothing.
	RoleIdle ReplicaRole = "idle"
)

// ReplicaStatus describes one local replica of one store of one task.
type ReplicaStatus struct {
	Store string `json:"store"`
	// Task is the task, GlobalTask for a global store.
	Task int32       `json:"task"`
	Role ReplicaRole `json:"role"`
	// Lag is the changelog end offset minus Position, never negative; -1
	// when no end offset has been seen yet.
	Lag int64 `json:"lag"`
	// Position is the store's checkpoint: the next changelog offset to
	// read (the last applied offset + 1).
	Position int64 `json:"position"`
	// StreamTime is the task's stream time in epoch ms, on an active
	// replica of a task that has seen a record; absent otherwise.
	StreamTime *int64 `json:"stream_time,omitempty"`
	// Reason says why the replica does not serve reads, when it does not
	// (a restore in progress, a failed task), in words clients may see.
	Reason string `json:"reason,omitempty"`
}

// ReplicaView is one local replica of one store of one task, as queries read
// it: read-only. Implementations must be safe for concurrent use, and
// answer an error (never stale data) once the replica's store has failed.
type ReplicaView interface {
	// Status returns the replica's current role, lag and position.
	Status() ReplicaStatus
	// Get returns the value of key as iso sees it, and a position that the
	// value is at least as new as: a checkpoint read before the value.
	Get(key []byte, iso Isolation) (value []byte, found bool, position int64, err error)
	// Scan calls fn for each key in [start, end) as iso sees it, in key
	// order (nil bounds are open) until fn returns false; the slices are
	// valid only during the call. It returns a position the scanned data
	// is at least as new as.
	Scan(start, end []byte, iso Isolation, fn func(key, value []byte) bool) (position int64, err error)
}

// WindowView is a local replica of a window or session store, as window
// queries read it: read-only, safe for concurrent use, and answering an
// error once the replica's store has failed. Each read returns a position
// the windows are at least as new as, as ReplicaView's do. Windows whose
// retention has expired are not returned.
type WindowView interface {
	// Windows returns key's windows as iso sees them, oldest first: those
	// starting in [timeFrom, timeTo], or, in a session store, the sessions
	// that end at or after timeFrom and start at or before timeTo.
	Windows(key []byte, timeFrom, timeTo int64, iso Isolation) ([]StoredWindow, int64, error)
	// AllWindows returns every key's windows in the time range (as Windows
	// selects them), in any order.
	AllWindows(timeFrom, timeTo int64, iso Isolation) ([]StoredWindow, int64, error)
}

// StoredWindow is one window of a window or session store: its key, its
// bounds in epoch milliseconds (End exclusive for tumbling and hopping
// windows, inclusive for sliding windows and sessions) and its stored
// aggregate, which ServedStore.Render decodes. In a stream-stream join's
// store (ServedStore.Join) it is one buffered record: Side is "left" or
// "right", Start and End its timestamp, Offset its input offset, and Value
// its value, which ServedStore.RenderSide decodes.
type StoredWindow struct {
	Key        []byte
	Start, End int64
	Value      []byte
	Side       string
	Offset     int64
}

// ServedStore describes a store the server answers queries for.
type ServedStore struct {
	// Name is the store's name, as in the URL.
	Name string
	// Render decodes a stored value for display with the store's value
	// codec; the result is marshalled with encoding/json (a string as a
	// string, []byte as base64, a JSON codec's value as that JSON). Nil
	// renders raw bytes as base64. processor.StoreInfo.Render fits.
	Render func(value []byte) (any, error)
	// Global marks a store every instance holds whole (a global table):
	// its lookups and scans are answered from Reader.Global, locally, never
	// routed by task or forwarded; its answers name task GlobalTask, and a
	// scan of it takes no tasks parameter.
	Global bool
	// Windowed marks a window or session store (a windowed aggregation's):
	// it is read by time range, at /v1/stores/{store}/windows, through
	// WindowView, and only so.
	Windowed bool
	// Join marks a stream-stream join's store, Windowed too: its window
	// reads return both sides' buffered records, answered as records
	// (side, timestamp, offset, value) rather than windows.
	Join bool
	// RenderSide decodes a join record's value with its side's codec, as
	// Render does a value; nil renders raw bytes as base64.
	RenderSide func(side string, value []byte) (any, error)
}
