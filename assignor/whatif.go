package assignor

import (
	"fmt"
	"slices"
	"strings"
)

// Selector names clients to lose in a what-if: either every client whose tag
// Tag has the value Value ("zone=b"), or the one client whose id is Client.
// Exactly one of the two forms is set. Its JSON is {"tag": "zone", "value":
// "b"} or {"client": "n3"}.
type Selector struct {
	Tag    string `json:"tag,omitempty"`
	Value  string `json:"value,omitempty"`
	Client string `json:"client,omitempty"`
}

// ParseSelector reads a selector as `rackstream assign --lose` and
// /v1/whatif?lose= spell it: "KEY=VALUE" selects a tag value (the value may
// be empty and may itself contain '='; the key may not be empty), anything
// without '=' is a client's id. An empty string is an error.
func ParseSelector(s string) (Selector, error) {
	if s == "" {
		return Selector{}, fmt.Errorf("empty selector: want KEY=VALUE (a tag value) or a client id")
	}
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return Selector{Client: s}, nil
	}
	if k == "" {
		return Selector{}, fmt.Errorf("selector %q: want KEY=VALUE with a non-empty KEY, or a client id", s)
	}
	return Selector{Tag: k, Value: v}, nil
}

// String returns the selector as ParseSelector reads it.
func (s Selector) String() string {
	if s.Tag == "" {
		return s.Client
	}
	return s.Tag + "=" + s.Value
}

// matches reports whether the client is selected.
func (s Selector) matches(c *Client) bool {
	if s.Tag == "" {
		return c.ID == s.Client
	}
	v, ok := c.Tags[s.Tag]
	return ok && v == s.Value
}

// SelectorError is a what-if selector that matches no client.
type SelectorError struct {
	Selector Selector
	Reason   string
}

func (e *SelectorError) Error() string { return "lose " + e.Selector.String() + ": " + e.Reason }

// WhatIfResult is what losing the selected clients would do to a plan. It
// is the "loss" object of `rackstream assign --lose` and the body of
// /v1/whatif; every list is non-nil (JSON [] rather than null) and sorted.
type WhatIfResult struct {
	// Lose are the selectors, in the order given; their losses add up.
	Lose []Selector `json:"lose"`
	// ClientsLost are the ids of the clients any selector matched.
	ClientsLost []string `json:"clients_lost"`
	// TasksWithoutReplica are the tasks whose active and standbys are all
	// lost: their state survives only in the changelog. Ascending.
	TasksWithoutReplica []int `json:"tasks_without_replica"`
	// Failover has one entry per task whose active is lost, in task order:
	// where the task's processing moves.
	Failover []Failover `json:"failover"`
	// PlanAfter is the plan for the survivors (see WhatIf); nil when no
	// client survives a loss of a plan with tasks.
	PlanAfter *Plan `json:"plan_after"`
}

// Failover is where one task whose active is lost goes.
type Failover struct {
	// Task is the task.
	Task int `json:"task"`
	// From is the lost active.
	From string `json:"from"`
	// To is the task's active in the plan after the loss; "" when no client
	// survives.
	To string `json:"to"`
	// Restore is set when To is not caught up on the task: it was neither
	// its standby nor a holder of its state within acceptable.recovery.lag
	// (a warmup that has caught up counts as caught up), so it restores the
	// state from the changelog before processing resumes. Unset, To takes
	// over at once from the state it keeps. Set when To is "".
	Restore bool `json:"restore"`
}

// WhatIf computes what losing every client lose selects would do to plan,
// a placement of in's tasks over in's clients (a plan Assign returned for
// in, or a live placement with in describing its clients and settings;
// plan.Tasks ascending, a task in a hand-off may have no active). It
// is pure and deterministic, and is the one implementation behind
// `rackstream assign --lose` and the placement page's what-if.
//
// The plan after the loss is Assign's answer for the survivors, each with
// its roles in plan as its previous roles, caught up (lag 0) on its actives
// and standbys and with in's lags elsewhere: the placement the group would
// converge to right after the loss. A selector that matches no client is a
// *SelectorError naming it (a typo must not read as "nothing lost"); a plan
// that names a client in does not have is an error too. For a /v1/metadata
// document, DecodeDocument returns in and the live placement as plan.
func WhatIf(in Input, plan *Plan, lose []Selector) (*WhatIfResult, error) {
	if len(lose) == 0 {
		return nil, fmt.Errorf("what-if: no selector: name a tag value (KEY=VALUE) or a client id to lose")
	}
	known := make(map[string]bool, len(in.Clients))
	for i := range in.Clients {
		known[in.Clients[i].ID] = true
	}
	for i, tp := range plan.Tasks {
		if tp.Task < 0 || tp.Task >= in.Tasks || i > 0 && tp.Task <= plan.Tasks[i-1].Task {
			return nil, fmt.Errorf("what-if: plan's tasks[%d] is task %d: want ascending tasks in [0, %d)", i, tp.Task, in.Tasks)
		}
		for _, id := range append(append([]string{tp.Active}, tp.Standby...), tp.Warmup...) {
			if id != "" && !known[id] {
				return nil, fmt.Errorf("what-if: plan's task %d names client %q, which the input does not have", tp.Task, id)
			}
		}
	}

	matched := make([]bool, len(lose))
	gone := make(map[string]bool)
	for i := range in.Clients {
		for j, s := range lose {
			if s.matches(&in.Clients[i]) {
				gone[in.Clients[i].ID], matched[j] = true, true
			}
		}
	}
	for j, ok := range matched {
		if !ok {
			what := "no client has this tag value"
			if lose[j].Tag == "" {
				what = "no client has this id"
			}
			return nil, &SelectorError{Selector: lose[j], Reason: what}
		}
	}

	res := &WhatIfResult{
		Lose:                slices.Clone(lose),
		ClientsLost:         make([]string, 0, len(gone)),
		TasksWithoutReplica: []int{},
		Failover:            []Failover{},
	}
	for id := range gone {
		res.ClientsLost = append(res.ClientsLost, id)
	}
	slices.Sort(res.ClientsLost)

	after := survivors(in, plan, gone)
	lags := make(map[string]map[int]int64, len(after.Clients))
	for _, c := range after.Clients {
		lags[c.ID] = c.Lags
	}
	if len(after.Clients) > 0 || after.Tasks == 0 {
		p, err := Assign(after)
		if err != nil {
			return nil, fmt.Errorf("what-if: plan after the loss: %w", err)
		}
		res.PlanAfter = p
	}

	for _, tp := range plan.Tasks {
		survives := tp.Active != "" && !gone[tp.Active]
		for _, s := range tp.Standby {
			survives = survives || !gone[s]
		}
		if !survives && (tp.Active != "" || len(tp.Standby) > 0) {
			res.TasksWithoutReplica = append(res.TasksWithoutReplica, tp.Task)
		}
		if tp.Active == "" || !gone[tp.Active] {
			continue
		}
		f := Failover{Task: tp.Task, From: tp.Active, Restore: true}
		if res.PlanAfter != nil && tp.Task < len(res.PlanAfter.Tasks) {
			f.To = res.PlanAfter.Tasks[tp.Task].Active
			lag, known := lags[f.To][tp.Task]
			f.Restore = !known || lag > after.AcceptableRecoveryLag
		}
		res.Failover = append(res.Failover, f)
	}
	return res, nil
}

// survivors returns in without the clients gone, each survivor with its
// roles in plan as previous roles: lag 0 for its actives and standbys, in's
// lags for the rest.
func survivors(in Input, plan *Plan, gone map[string]bool) Input {
	type roles struct{ active, standby, warmup []int }
	held := make(map[string]*roles, len(in.Clients))
	get := func(id string) *roles {
		r := held[id]
		if r == nil {
			r = &roles{}
			held[id] = r
		}
		return r
	}
	for _, tp := range plan.Tasks {
		if tp.Active != "" {
			get(tp.Active).active = append(get(tp.Active).active, tp.Task)
		}
		for _, id := range tp.Standby {
			get(id).standby = append(get(id).standby, tp.Task)
		}
		for _, id := range tp.Warmup {
			get(id).warmup = append(get(id).warmup, tp.Task)
		}
	}
	after := in
	after.Clients = make([]Client, 0, len(in.Clients))
	for _, c := range in.Clients {
		if gone[c.ID] {
			continue
		}
		r := get(c.ID)
		s := Client{ID: c.ID, Tags: c.Tags, Capacity: c.Capacity,
			PreviousActive: r.active, PreviousStandby: r.standby, PreviousWarmup: r.warmup,
			Lags: make(map[int]int64, len(c.Lags)+len(r.active)+len(r.standby))}
		for t, lag := range c.Lags {
			s.Lags[t] = lag
		}
		for _, l := range [][]int{r.active, r.standby} {
			for _, t := range l {
				s.Lags[t] = 0
			}
		}
		after.Clients = append(after.Clients, s)
	}
	return after
}

// LossOfDocument is the what-if of a saved document, the one computation
// behind both `rackstream assign --lose` and the placement page's
// /v1/whatif, so that the two can never disagree: for a /v1/metadata
// document the loss is applied to the document's own live placement (what
// is running now, even while a rebalance is pending), for a scenario
// document to the plan Assign makes of it. It returns the input and the
// plan the loss was applied to beside the result. A selector that matches
// no client is a *SelectorError; any other error is the document's.
func LossOfDocument(data []byte, lose []Selector) (Input, *Plan, *WhatIfResult, error) {
	in, plan, err := DecodeDocument(data)
	if err != nil {
		return Input{}, nil, nil, err
	}
	if plan == nil {
		if plan, err = Assign(in); err != nil {
			return Input{}, nil, nil, err
		}
	}
	res, err := WhatIf(in, plan, lose)
	if err != nil {
		return Input{}, nil, nil, err
	}
	return in, plan, res, nil
}
