package balancer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rackstream/rackstream/tags"
)

// The simulation runs the group protocol without a broker: every member's
// JoinGroupMetadata goes to the leader's MemberBalancer and Balance, and
// the leader's assignments come back through each member's
// ParseSyncAssignment, as kgo would pass them. Cooperative rules are
// kgo's: a member keeps the partitions it is assigned and revokes the rest.

const simInput = "in"
const simChangelog = "in-store-changelog"

// offsets is a test's offset source: per process, the checkpoints of the
// state it holds, and the changelog end offsets.
type offsets struct {
	mu   sync.Mutex
	cps  map[string]map[int32]int64 // process -> task -> checkpoint
	ends map[int32]int64            // task -> end offset
	fail bool                       // EndOffsets fails
}

func newOffsets() *offsets {
	return &offsets{cps: make(map[string]map[int32]int64), ends: make(map[int32]int64)}
}

func (o *offsets) set(pid string, task int32, off int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cps[pid] == nil {
		o.cps[pid] = make(map[int32]int64)
	}
	o.cps[pid][task] = off
}

func (o *offsets) setEnd(task int32, off int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ends[task] = off
}

func (o *offsets) setFail(fail bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fail = fail
}

func (o *offsets) checkpoints(pid string) func() map[int32]int64 {
	return func() map[int32]int64 {
		o.mu.Lock()
		defer o.mu.Unlock()
		return maps.Clone(o.cps[pid])
	}
}

func (o *offsets) endOffsets(_ context.Context, topics []string) (map[string]map[int32]int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fail {
		return nil, fmt.Errorf("test: end offsets unavailable")
	}
	out := make(map[string]map[int32]int64)
	for _, t := range topics {
		out[t] = maps.Clone(o.ends)
	}
	return out, nil
}

// zoneCluster returns the tags of member i of 6: 3 zones x 2 clusters.
func zoneCluster(i int) tags.Set {
	return tags.MustSet("zone", fmt.Sprintf("z%d", i%3), "cluster", fmt.Sprintf("k%d", i%2))
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// simSettings are one simulated member's settings.
func simSettings(pid string, tg tags.Set, o *offsets) Settings {
	s := DefaultSettings()
	s.ApplicationID, s.ProcessID, s.Endpoint, s.Tags = "sim", pid, pid+":8080", tg
	s.InputTopics, s.ChangelogTopics = []string{simInput}, []string{simChangelog}
	s.Placement.NumStandbyReplicas, s.Placement.RackAwareAssignmentTags = 2, tags.Keys{"zone", "cluster"}
	s.Checkpoints, s.EndOffsets, s.Logger = o.checkpoints(pid), o.endOffsets, quietLogger()
	return s
}

// simMember is one member of a simulated group.
type simMember struct {
	id    string // member id
	b     *Balancer
	raw   func(owned map[string][]int32, gen int32) []byte // overrides JoinGroupMetadata
	owned map[string][]int32
	last  Assignment
	err   error // last ParseSyncAssignment error
}

type sim struct {
	t          testing.TB
	tasks      int32
	members    []*simMember // in member-id order
	generation int32
	// syncs are the last round's raw assignments by member id.
	syncs map[string][]byte
}

func newSim(t testing.TB, tasks int32) *sim { return &sim{t: t, tasks: tasks} }

func (s *sim) add(id string, st Settings) *simMember {
	s.t.Helper()
	b, err := New(st)
	if err != nil {
		s.t.Fatal(err)
	}
	m := &simMember{id: id, b: b, owned: map[string][]int32{}}
	s.members = append(s.members, m)
	slices.SortFunc(s.members, func(a, b *simMember) int { return cmpString(a.id, b.id) })
	return m
}

func (s *sim) remove(id string) {
	s.members = slices.DeleteFunc(s.members, func(m *simMember) bool { return m.id == id })
}

func (s *sim) member(id string) *simMember {
	for _, m := range s.members {
		if m.id == id {
			return m
		}
	}
	return nil
}

// round runs one join and sync with the leader given by id and returns the
// partitions each member revoked.
func (s *sim) round(leaderID string) map[string][]int32 {
	s.t.Helper()
	s.generation++
	var joins []kmsg.JoinGroupResponseMember
	for _, m := range s.members {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		if m.raw != nil {
			jm.ProtocolMetadata = m.raw(m.owned, s.generation-1)
		} else {
			jm.ProtocolMetadata = m.b.JoinGroupMetadata([]string{simInput}, cloneAssigned(m.owned), s.generation-1)
		}
		joins = append(joins, jm)
	}
	leader := s.member(leaderID)
	gmb, topics, err := leader.b.MemberBalancer(joins)
	if err != nil {
		s.t.Fatalf("generation %d: MemberBalancer: %v", s.generation, err)
	}
	if _, ok := topics[simInput]; !ok {
		s.t.Fatalf("topics %v lack the input", topics)
	}
	gmb.(kgo.GroupMemberBalancerInfo).SetBalanceInfo(kgo.BalanceInfo{Generation: s.generation})
	into, err := gmb.(kgo.GroupMemberBalancerOrError).BalanceOrError(map[string]int32{simInput: s.tasks})
	if err != nil {
		s.t.Fatalf("generation %d: balance: %v", s.generation, err)
	}
	syncs := into.IntoSyncAssignment()
	byID := make(map[string][]byte)
	for _, a := range syncs {
		byID[a.MemberID] = a.MemberAssignment
	}
	s.syncs = byID
	if len(byID) != len(s.members) {
		s.t.Fatalf("generation %d: %d assignments for %d members", s.generation, len(byID), len(s.members))
	}
	revoked := make(map[string][]int32)
	for _, m := range s.members {
		if m.raw != nil {
			continue
		}
		assigned, err := m.b.ParseSyncAssignment(byID[m.id])
		m.err = err
		if err != nil {
			continue
		}
		for _, p := range m.owned[simInput] {
			if !slices.Contains(assigned[simInput], p) {
				revoked[m.id] = append(revoked[m.id], p)
			}
		}
		m.owned = assigned
		m.b.OnPartitionsAssigned(context.Background(), nil, assigned)
		m.last, _ = m.b.Assignment()
	}
	s.checkNoDoubleOwnership()
	return revoked
}

// settle runs rounds until one revokes nothing (at most n).
func (s *sim) settle(leaderID string, n int) {
	s.t.Helper()
	for range n {
		if len(s.round(leaderID)) == 0 {
			return
		}
	}
	s.t.Fatalf("no stable generation after %d rounds", n)
}

func (s *sim) checkNoDoubleOwnership() {
	s.t.Helper()
	owner := make(map[int32]string)
	for _, m := range s.members {
		for _, p := range m.owned[simInput] {
			if o, ok := owner[p]; ok {
				s.t.Fatalf("generation %d: partition %d owned by %s and %s", s.generation, p, o, m.id)
			}
			owner[p] = m.id
		}
	}
}

func cloneAssigned(m map[string][]int32) map[string][]int32 {
	out := make(map[string][]int32, len(m))
	for t, ps := range m {
		out[t] = slices.Clone(ps)
	}
	return out
}
