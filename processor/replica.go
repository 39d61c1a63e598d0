package processor

import (
	"github.com/rackstream/rackstream/state"
)

// Replica is this instance's copy of one task's state, for queries.
type Replica struct {
	Task int32
	// Role is state.RoleActive for a running task; standby and warmup
	// replicas are state.RoleStandby (RoleRestoring while catching up).
	Role state.Role
	// Stores are the task's stores by name; read them through View
	// (committed state) or through Replica.Fresh (latest state).
	Stores map[string]*state.DB

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
	rep := Replica{Task: task, Role: st.Role(), Stores: make(map[string]*state.DB), eos: r.opts.Guarantee == ExactlyOnceV2, topo: r.topo}
	for _, s := range st.Stores() {
		rep.Stores[s.Name()] = s
	}
	if sess != nil && rep.Role == state.RoleActive {
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

// Fresh returns a read-only view of store's latest processed state, nil
// when the replica has no such store or the runtime runs exactly-once.
func (rep Replica) Fresh(store string) *FreshView {
	s := rep.Stores[store]
	if s == nil || rep.eos {
		return nil
	}
	v := &FreshView{db: s}
	if i, ok := rep.targets[store]; ok {
		v.cache, v.target = rep.cache, i
	}
	return v
}

// FreshView reads one store of a task at its latest processed state, as
// Kafka Streams' interactive queries do: the task's record cache (writes
// merged since the last commit, not yet written through), over the store's
// write buffer (written through since the last commit), over its committed
// LevelDB data. It is what isolation=latest reads under at-least-once. On
// a standby (or a restoring replica) it reads what the replica has applied.
//
// It is safe for concurrent use and never blocks the task's record loop:
// it holds the cache's lock for one lookup (a scan: one chunk of slots at
// a time, cache.go) and reads the write buffer through the store's
// LatestView (state/latest.go). It looks in the cache first, then in the
// buffer, then in LevelDB, the order a write moves in (an entry leaves
// one only once the next has it), so a read never misses a write that was
// there when it began.
//
// A value read here may not be durable yet: after a crash, the writes
// since the last commit are gone until their records are processed again
// (at-least-once). The position a query reports with it is the store's
// checkpoint, read before the value: the value is at least that new.
type FreshView struct {
	db     *state.DB
	cache  *recordCache // nil: none
	target int
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
// open) at the latest state until fn returns false: the cache's entries
// merged over the write buffer and LevelDB, its deletes hiding their keys.
// Each value is one its key had while the scan ran, not one snapshot
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
