package assignor

import (
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// churnEvents is the length of TestChurnAtScale: 500 in the normal run,
// 10,000 for the long form (go test ./assignor -run Churn -churn-events 10000).
var churnEvents = flag.Int("churn-events", 500, "events of TestChurnAtScale (10000 for the long form)")

// churnLag is the lag of a replica placed by the previous plan on a client
// that did not hold the task: more than acceptable.recovery.lag, so it is
// not caught up until the next event (a warmup catches up in one event).
const churnLag = 5 * DefaultAcceptableRecoveryLag

// churnClient is a client of the simulation, live or away.
type churnClient struct {
	id   string
	tags map[string]string
	// disk: the tasks whose state it holds (its roles when it was last
	// live), and how far behind each is.
	disk map[int]int64
}

// churnSim is a group of 1,000 clients x 10,000 tasks under churn.
type churnSim struct {
	r      *rand.Rand
	in     Input
	live   map[string]*churnClient
	away   map[string]*churnClient
	downZ  string // the zone that is down, "" when none
	nextID int
	plan   *Plan
}

// event names, for the report.
const (
	evLeave      = "leave"
	evJoin       = "join"
	evReturn     = "return"
	evZoneDown   = "zone-down"
	evZoneBack   = "zone-back"
	evRebalance  = "rebalance"
	churnClients = 1000
	churnTasks   = 10000
)

func newChurnSim(seed int64) *churnSim {
	s := &churnSim{r: rand.New(rand.NewSource(seed)), live: map[string]*churnClient{}, away: map[string]*churnClient{}}
	s.in = benchInput(layered)
	for _, c := range s.in.Clients {
		s.live[c.ID] = &churnClient{id: c.ID, tags: c.Tags, disk: map[int]int64{}}
	}
	s.nextID = len(s.in.Clients)
	return s
}

// newClient is a client that never was a member: tags of the layered
// layout, no state.
func (s *churnSim) newClient() *churnClient {
	i := s.nextID
	s.nextID++
	zone := fmt.Sprintf("eu-central-1%c", 'a'+s.r.Intn(3))
	if zone == s.downZ { // nothing starts in a lost zone
		zone = "eu-central-1" + string("abc"[(strings.IndexByte("abc", zone[len(zone)-1])+1)%3])
	}
	return &churnClient{id: fmt.Sprintf("n%05d", i), disk: map[int]int64{},
		tags: map[string]string{"zone": zone, "cluster": fmt.Sprintf("k%d", s.r.Intn(4)), "rack": fmt.Sprintf("r%d", s.r.Intn(10))}}
}

// sortedIDs returns m's keys in order (the simulation is deterministic).
func sortedIDs(m map[string]*churnClient) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// step applies one random event and returns its kind.
func (s *churnSim) step() string {
	n := len(s.live)
	x := s.r.Intn(100)
	switch {
	case x < 4 && s.downZ == "" && n > 700:
		s.downZ = fmt.Sprintf("eu-central-1%c", 'a'+s.r.Intn(3))
		for _, id := range sortedIDs(s.live) {
			if c := s.live[id]; c.tags["zone"] == s.downZ {
				delete(s.live, id)
				s.away[id] = c
			}
		}
		return evZoneDown
	case x < 8 && s.downZ != "":
		for _, id := range sortedIDs(s.away) {
			if c := s.away[id]; c.tags["zone"] == s.downZ {
				delete(s.away, id)
				s.live[id] = c
			}
		}
		s.downZ = ""
		return evZoneBack
	case x < 45 && n > 600:
		ids := sortedIDs(s.live)
		c := s.live[ids[s.r.Intn(len(ids))]]
		delete(s.live, c.id)
		s.away[c.id] = c
		return evLeave
	case x < 70 && n < 1100:
		c := s.newClient()
		s.live[c.id] = c
		return evJoin
	case x < 90 && len(s.away) > 0:
		var back []string
		for _, id := range sortedIDs(s.away) {
			if s.away[id].tags["zone"] != s.downZ {
				back = append(back, id)
			}
		}
		if len(back) == 0 {
			return evRebalance
		}
		c := s.away[back[s.r.Intn(len(back))]]
		delete(s.away, c.id)
		s.live[c.id] = c
		return evReturn
	}
	return evRebalance
}

// input is the next rebalance's input: every live client with its roles in
// the last plan (or, for one coming back, the state on its disk) and lags.
func (s *churnSim) input() Input {
	in := s.in
	in.Clients = nil
	prev := map[string]ClientPlacement{}
	if s.plan != nil {
		for _, cp := range s.plan.Clients {
			prev[cp.ID] = cp
		}
	}
	for _, id := range sortedIDs(s.live) {
		c := s.live[id]
		cl := Client{ID: id, Tags: c.tags, Capacity: 1, Lags: map[int]int64{}}
		if cp, ok := prev[id]; ok {
			cl.PreviousActive, cl.PreviousStandby, cl.PreviousWarmup = cp.Active, cp.Standby, cp.Warmup
		} else {
			for task := range c.disk {
				cl.PreviousStandby = append(cl.PreviousStandby, task)
			}
			slices.Sort(cl.PreviousStandby)
		}
		for task, lag := range c.disk {
			cl.Lags[task] = lag
		}
		in.Clients = append(in.Clients, cl)
	}
	return in
}

// apply records plan p: each live client's disk holds its replicas, a
// replica it held before caught up (lag 0), a new one churnLag behind; an
// away client's disk falls behind.
func (s *churnSim) apply(p *Plan) {
	for _, cp := range p.Clients {
		c := s.live[cp.ID]
		disk := map[int]int64{}
		for _, l := range [][]int{cp.Active, cp.Standby, cp.Warmup} {
			for _, task := range l {
				if _, held := c.disk[task]; held {
					disk[task] = 0
				} else {
					disk[task] = churnLag
				}
			}
		}
		c.disk = disk
	}
	for _, c := range s.away {
		for task, lag := range c.disk {
			c.disk[task] = lag + 1000
		}
	}
	s.plan = p
}

// liveSet returns the ids of the live clients.
func (s *churnSim) liveSet() map[string]bool {
	ids := make(map[string]bool, len(s.live))
	for id := range s.live {
		ids[id] = true
	}
	return ids
}

// symmetricDiff counts the ids in exactly one of before and now.
func symmetricDiff(before map[string]bool, now map[string]*churnClient) int {
	n := 0
	for id := range before {
		if now[id] == nil {
			n++
		}
	}
	for id := range now {
		if !before[id] {
			n++
		}
	}
	return n
}

// moves compares two plans: actives that changed client (orphaned: their
// client left; voluntary: it stayed), and replicas (standby or warmup)
// placed on a client that held no replica of the task before (state to
// copy).
func moves(before, after *Plan, live map[string]*churnClient) (orphaned, voluntary, newReplicas int) {
	for i, ta := range after.Tasks {
		tb := before.Tasks[i]
		if ta.Active != tb.Active {
			if live[tb.Active] == nil {
				orphaned++
			} else {
				voluntary++
			}
		}
		held := map[string]bool{tb.Active: true}
		for _, id := range append(slices.Clone(tb.Standby), tb.Warmup...) {
			held[id] = true
		}
		for _, id := range append(slices.Clone(ta.Standby), ta.Warmup...) {
			if !held[id] {
				newReplicas++
			}
		}
	}
	return
}

// TestChurnAtScale drives the assignor through churn at 1,000 members x
// 10,000 tasks x 2 standbys over zone, cluster and rack: single members
// leaving (a crash), joining with no state, coming back with their old
// (lagging) state, a whole zone failing and returning, rebalances that
// change nothing. Every plan must keep the invariants (checkInvariants),
// every orphaned task gets an active, an active moves off a live client
// only to a client caught up on it, no plan moves more actives voluntarily
// than twice the changed members' fair share plus the replicas that caught
// up over the last three plans plus the actives above the mean, and the
// distribution of moves per event kind is reported.
func TestChurnAtScale(t *testing.T) {
	events := *churnEvents
	if testing.Short() {
		events = min(events, 100)
	}
	s := newChurnSim(1)
	s.plan = nil
	first := s.input()
	p, err := Assign(first)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, first, p)
	s.apply(p)
	type stat struct{ orphaned, voluntary, replicas []int }
	stats := map[string]*stat{}
	var planTime time.Duration
	var recent [3]int // replicas the last three plans placed anew, by event mod 3
	for e := range events {
		before := len(s.live) + len(s.away)
		liveBefore := s.liveSet()
		kind := s.step()
		changed := symmetricDiff(liveBefore, s.live) + len(s.live) + len(s.away) - before
		in := s.input()
		start := time.Now()
		next, err := Assign(in)
		planTime += time.Since(start)
		if err != nil {
			t.Fatalf("event %d (%s): %v", e, kind, err)
		}
		checkInvariants(t, in, next)
		lags := map[string]map[int]int64{}
		for _, c := range in.Clients {
			lags[c.ID] = c.Lags
		}
		orphaned, voluntary, replicas := moves(s.plan, next, s.live)
		for i, ta := range next.Tasks {
			if tb := s.plan.Tasks[i]; ta.Active != tb.Active && s.live[tb.Active] != nil {
				lag, known := lags[ta.Active][i]
				if !known || lag > in.AcceptableRecoveryLag {
					t.Fatalf("event %d (%s): task %d moved from live %s to %s, which is not caught up (lag %d, known %v)",
						e, kind, i, tb.Active, ta.Active, lag, known)
				}
			}
		}
		// Moves scale with the change and the imbalance, not with the
		// group: an event that adds or removes m members moves at most
		// twice their fair share of actives off live clients, plus the
		// replicas the last three plans placed anew (caught up since: an
		// active may now go to them, as warmups complete and balance is
		// reached over rounds), plus the live clients' actives above the
		// mean.
		excess := activeExcess(s.plan, s.live)
		caughtUp := recent[0] + recent[1] + recent[2]
		if bound := 2*((churnTasks+len(s.live)-1)/len(s.live))*(changed+1) + caughtUp + excess; voluntary > bound {
			t.Fatalf("event %d (%s, %d members changed, %d replicas caught up since, excess %d): %d actives moved off live clients, more than %d",
				e, kind, changed, caughtUp, excess, voluntary, bound)
		}
		recent[e%3] = replicas
		st := stats[kind]
		if st == nil {
			st = &stat{}
			stats[kind] = st
		}
		st.orphaned = append(st.orphaned, orphaned)
		st.voluntary = append(st.voluntary, voluntary)
		st.replicas = append(st.replicas, replicas)
		s.apply(next)
	}
	t.Logf("%d events at %d members x %d tasks, %v planning (%v per plan); moves per event (p50/p90/p99/max):",
		events, churnClients, churnTasks, planTime.Round(time.Millisecond), (planTime / time.Duration(max(events, 1))).Round(time.Microsecond))
	kinds := make([]string, 0, len(stats))
	for k := range stats {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		st := stats[k]
		t.Logf("  %-10s %5d events: orphaned actives %s, actives moved off live clients %s, new replicas %s",
			k, len(st.orphaned), dist(st.orphaned), dist(st.voluntary), dist(st.replicas))
	}
}

// activeExcess is the number of actives the live clients hold in plan p
// above the mean over the live clients, rounded up: the moves balancing
// needs at most.
func activeExcess(p *Plan, live map[string]*churnClient) int {
	counts := map[string]int{}
	for _, tp := range p.Tasks {
		if live[tp.Active] != nil {
			counts[tp.Active]++
		}
	}
	mean := (len(p.Tasks) + len(live) - 1) / max(len(live), 1)
	excess := 0
	for _, n := range counts {
		excess += max(n-mean, 0)
	}
	return excess
}

// dist formats p50/p90/p99/max of v.
func dist(v []int) string {
	s := slices.Clone(v)
	slices.Sort(s)
	at := func(q float64) int { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return fmt.Sprintf("%d/%d/%d/%d", at(0.5), at(0.9), at(0.99), s[len(s)-1])
}
