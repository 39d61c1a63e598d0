package processor

import (
	"slices"
	"time"

	"github.com/rackstream/rackstream/state"
	"github.com/rackstream/rackstream/table"
)

// Role is what this instance does for a task it holds a replica of. Its
// values are the words the query API reports.
type Role string

const (
	// RoleIdle: the replica's stores are open but neither restoring,
	// tailing nor running.
	RoleIdle Role = "idle"
	// RoleRestoring: catching up on the task's changelogs before it runs
	// or tails them.
	RoleRestoring Role = "restoring"
	// RoleStandby: tailing the changelogs of a task active elsewhere
	// (standby and warmup replicas).
	RoleStandby Role = "standby"
	// RoleActive: running the task.
	RoleActive Role = "active"
	// RoleClosed: closed since the replica was handed out.
	RoleClosed Role = "closed"
)

// roleOf is the Role of a task's stores.
func roleOf(r state.Role) Role {
	switch r {
	case state.RoleIdle:
		return RoleIdle
	case state.RoleRestoring:
		return RoleRestoring
	case state.RoleStandby:
		return RoleStandby
	case state.RoleActive:
		return RoleActive
	}
	return RoleClosed
}

// Replica is this instance's copy of one task's state, for queries. It
// hands out read-only views: writes reach a store only through a handler
// of the running task, which produces them to the store's changelog.
type Replica struct {
	Task int32
	// Role is the task's role here when the replica was handed out.
	Role Role
	// StreamTime is the active task's stream time; the zero Time when the
	// task is not active here or has seen no record yet.
	StreamTime time.Time

	stores map[string]*state.DB
	// cache is the active task's record cache, nil when the task is not
	// active here or runs without one; targets maps a store's name to
	// its index in the cache (its place in the topology).
	cache   *recordCache
	targets map[string]int
	// topo is the running topology: which stores are window stores.
	topo *Topology
	// eos: the runtime runs exactly-once, where the latest writes belong
	// to an open transaction and Fresh offers no view of them.
	eos bool
}

// Replica returns this instance's replica of task, if it has one.
func (r *Runtime) Replica(task int32) (Replica, bool) {
	r.mu.Lock()
	mgr, sess := r.mgr, r.sess
	r.mu.Unlock()
	if mgr == nil {
		return Replica{}, false
	}
	st := mgr.Task(task)
	if st == nil {
		return Replica{}, false
	}
	rep := Replica{Task: task, Role: roleOf(st.Role()), stores: make(map[string]*state.DB), eos: r.opts.Guarantee == ExactlyOnceV2, topo: r.topo}
	for _, s := range st.Stores() {
		rep.stores[s.Name()] = s
	}
	if sess != nil && rep.Role == RoleActive {
		if t := sess.m.task(task); t != nil {
			if ms := t.proc.tt.pub.Load(); ms >= 0 {
				rep.StreamTime = time.UnixMilli(ms).UTC()
			}
		}
		if c, ok := sess.m.env.caches.Load(task); ok {
			rep.cache = c.(*recordCache)
			rep.targets = make(map[string]int, len(r.topo.stores))
			for i, s := range r.topo.stores {
				rep.targets[s.name] = i
			}
		}
	}
	return rep, true
}

// Stores returns the names of the replica's stores, sorted.
func (rep Replica) Stores() []string {
	names := make([]string, 0, len(rep.stores))
	for name := range rep.stores {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Store returns a read-only view of store's committed state, nil when the
// replica has no such store.
func (rep Replica) Store(store string) *StoreView {
	s := rep.stores[store]
	if s == nil {
		return nil
	}
	w, j := rep.layoutOf(store)
	return &StoreView{db: s, window: w, join: j}
}

// Fresh returns a read-only view of store's latest processed state, nil
// when the replica has no such store or the runtime runs exactly-once.
func (rep Replica) Fresh(store string) *FreshView {
	s := rep.stores[store]
	if s == nil || rep.eos {
		return nil
	}
	w, j := rep.layoutOf(store)
	v := &FreshView{db: s, window: w, join: j}
	if i, ok := rep.targets[store]; ok {
		v.cache, v.target = rep.cache, i
	}
	return v
}

// StoreView reads one store of a task at its committed state: what the
// task's last commit wrote, or, on a standby, what it has applied of the
// changelog. It is what isolation=committed reads, and every read under
// exactly-once. It is safe for concurrent use and never blocks the task.
// Once the replica's stores close (its task moved away), reads fail: ask
// Runtime.Replica again.
//
// It has no write method: a store changes only through its task.
type StoreView struct {
	db     *state.DB
	window *windowStore // a window or session store's layout, else nil
	join   *joinStore   // a stream-stream join's store's, else nil
}

// Name returns the store's name.
func (v *StoreView) Name() string { return v.db.Name() }

// Task returns the id (partition slot) of the store's task.
func (v *StoreView) Task() int32 { return v.db.Task() }

// Checkpoint returns the next changelog offset the store will apply: the
// last offset its committed state covers + 1. A reader takes it before the
// data, so what it reads next is at least that new.
func (v *StoreView) Checkpoint() int64 { return v.db.Checkpoint() }

// Lag returns how many changelog offsets the store is behind the end
// offset last seen for its partition, or -1 before one has been seen.
func (v *StoreView) Lag() int64 { return v.db.Lag() }

// Err returns the error that failed the store's task, nil while it is
// healthy. A failed store's data may be stale: check Err before trusting a
// read.
func (v *StoreView) Err() error { return v.db.Err() }

// Get returns the committed value of key.
func (v *StoreView) Get(key []byte) (value []byte, found bool, err error) {
	return v.db.View().Get(key)
}

// Scan calls fn for each committed key in [start, end) in key order (nil
// bounds are open) until fn returns false. It reads one snapshot; the
// slices are valid only during the call.
func (v *StoreView) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	return v.db.View().Scan(start, end, fn)
}

// FreshView reads one store of a task at its latest processed state, as
// Kafka Streams' interactive queries do: the task's writes since its last
// commit over its committed state. It is what isolation=latest reads under
// at-least-once. On a standby (or a restoring replica) it reads what the
// replica has applied.
//
// It is safe for concurrent use and never blocks the task's record loop.
// A read never misses a write that was there when it began. A value read
// here may not be durable yet: after a crash, the writes since the last
// commit are gone until their records are processed again. Take the
// position a query reports from StoreView.Checkpoint before the read: the
// value is at least that new. Once the replica's stores close, reads fail.
//
// It has no write method: a store changes only through its task.
type FreshView struct {
	// A read looks in the task's record cache (writes merged since the
	// last commit), then in the store's write buffer (written through
	// since), then in LevelDB: the order a write moves in, an entry
	// leaving one layer only once the next has it. The cache's lock is
	// held for one lookup or one chunk of a scan.
	db     *state.DB
	cache  *recordCache // nil: none
	target int
	window *windowStore // a window or session store's layout, else nil
	join   *joinStore   // a stream-stream join's store's, else nil
}

// Get returns the latest value of key.
func (v *FreshView) Get(key []byte) (value []byte, found bool, err error) {
	if v.cache != nil {
		value, found, err := v.cache.lookup(v.target, key)
		if err != nil || found {
			return value, value != nil, err
		}
	}
	return v.db.Latest().Get(key)
}

// Scan calls fn for each key in [start, end) in key order (nil bounds are
// open) at the latest state until fn returns false. Each value is one its key had while the scan ran, not one snapshot
// across keys. The slices are valid only during the call.
func (v *FreshView) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	var over []state.Entry
	if v.cache != nil {
		var err error
		if over, err = v.cache.collect(v.target, start, end); err != nil {
			return err
		}
	}
	return v.db.Latest().ScanOver(start, end, over, fn)
}

// GlobalView reads this instance's copy of a global table: every partition
// of its topic, as the runtime's handlers see it. It is safe for concurrent
// use. It has no method that writes or closes the table: the runtime owns
// it, and only the table's topic changes it.
type GlobalView struct {
	m *table.Mirror
}

// Topic returns the table's topic.
func (v *GlobalView) Topic() string { return v.m.Topic() }

// Get returns key's value as of the last applied offset of its partition;
// found is false for a key absent or deleted.
func (v *GlobalView) Get(key []byte) (value []byte, found bool, err error) { return v.m.Get(key) }

// Scan calls fn for each key in [start, end) in key order across all
// partitions (nil bounds are open) until fn returns false. Each partition
// is read from a snapshot of its own. The slices are valid only during the
// call.
func (v *GlobalView) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	return v.m.Scan(start, end, fn)
}

// Lag returns the offsets the table is behind the end offsets last seen,
// summed over partitions, or -1 while some partition's end is not known.
func (v *GlobalView) Lag() int64 { return v.m.Lag() }

// Lags returns each partition's lag, by partition (-1: not known yet).
func (v *GlobalView) Lags() []int64 { return v.m.Lags() }

// Positions returns each partition's checkpoint, by partition: the next
// offset it will apply. A reader takes them before the data.
func (v *GlobalView) Positions() []int64 { return v.m.Positions() }

// Err returns why a partition stopped following the topic, nil while every
// partition follows it. Reads still answer from what was applied.
func (v *GlobalView) Err() error { return v.m.Err() }
