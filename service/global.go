package service

import (
	"fmt"

	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/query"
)

// globalReplica is this instance's copy of a global table as the query
// server reads it (ServedStore.Global): every partition of the topic,
// answered locally. Both isolations read what the table has applied (a
// global table has no uncommitted writes: only its topic writes it).
//
// Its position and lag are sums over the topic's partitions: the position
// only grows as the table follows its topic, so min_position still means
// "at least as new as an answer that carried it", from this instance.
type globalReplica struct {
	name string
	rd   *processor.GlobalView
}

func (g globalReplica) Status() query.ReplicaStatus {
	st := query.ReplicaStatus{Store: g.name, Task: query.GlobalTask, Role: query.RoleActive, Lag: g.rd.Lag(), Position: g.position()}
	if g.rd.Err() != nil {
		// The error itself is in the runtime's log; clients see words.
		st.Role, st.Reason = query.RoleIdle, "the global table stopped following its topic"
	}
	return st
}

func (g globalReplica) position() int64 {
	var sum int64
	for _, p := range g.rd.Positions() {
		sum += p
	}
	return sum
}

func (g globalReplica) healthy() error {
	if err := g.rd.Err(); err != nil {
		return fmt.Errorf("global table %s: %w", g.name, err)
	}
	return nil
}

// Get reads the position first: each partition's checkpoint is published
// after the batch it covers, so the value read next is at least that new.
func (g globalReplica) Get(key []byte, _ query.Isolation) ([]byte, bool, int64, error) {
	if err := g.healthy(); err != nil {
		return nil, false, 0, err
	}
	pos := g.position()
	v, found, err := g.rd.Get(key)
	return v, found, pos, err
}

func (g globalReplica) Scan(start, end []byte, _ query.Isolation, fn func(key, value []byte) bool) (int64, error) {
	if err := g.healthy(); err != nil {
		return 0, err
	}
	pos := g.position()
	return pos, g.rd.Scan(start, end, fn)
}

// Global returns this instance's copy of the global table named store (its
// topic), nil before the runtime has restored it.
func (a runtimeAdapter) Global(store string) query.ReplicaView {
	rd := a.rt.GlobalTable(store)
	if rd == nil {
		return nil
	}
	return globalReplica{name: store, rd: rd}
}

// globalStatuses are the statuses of the global tables restored here.
func (a runtimeAdapter) globalStatuses() []query.ReplicaStatus {
	var out []query.ReplicaStatus
	for _, g := range a.rt.Topology().GlobalTables() {
		if rep := a.Global(g.Topic); rep != nil {
			out = append(out, rep.Status())
		}
	}
	return out
}
