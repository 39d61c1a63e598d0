package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/rackstream/rackstream/assignor"
)

const assignUsage = `Usage: rackstream assign [--format json|table] [--lose KEY=VALUE]... [FILE|-]

Computes a placement from a scenario and prints it. The scenario is JSON, read
from FILE or stdin:

  {"num_standby_replicas": 2, "rack_aware_assignment_tags": ["zone","cluster"],
   "tasks": 12, "acceptable_recovery_lag": 10000, "max_warmup_replicas": 2,
   "clients": [{"id": "n1", "tags": {"zone": "eu-central-1a", "cluster": "k1"},
                "capacity": 1, "previous_active": [0], "previous_standby": [3],
                "previous_warmup": [], "lags": {"0": 0, "3": 120}}]}

A /v1/metadata document of a running group is accepted too: its placement is
the previous plan and its status lags the lags, so a live cluster's placement
can be replayed and what-if'd.

--lose KEY=VALUE (repeatable: the losses add up) also prints the tasks left
without any replica when every client with that tag is lost, and the plan
after the loss: recomputed for the survivors, with their roles in the plan as
previous roles (actives and standbys caught up). As JSON:

  {"plan": {...}, "loss": {"lose": [{"tag": "zone", "value": "..."}],
   "clients_lost": [...], "tasks_without_replica": [...], "plan_after": {...}}}

Exit status: 0 plan printed, 1 input unreadable, 2 bad usage or scenario.

Flags:
`

// loseFlag collects --lose KEY=VALUE.
type loseFlag []tagValue

type tagValue struct {
	Tag   string `json:"tag"`
	Value string `json:"value"`
}

func (l *loseFlag) String() string {
	s := make([]string, len(*l))
	for i, tv := range *l {
		s[i] = tv.Tag + "=" + tv.Value
	}
	return strings.Join(s, " ")
}

func (l *loseFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	*l = append(*l, tagValue{k, val})
	return nil
}

// lossReport is the JSON output of assign --lose.
type lossReport struct {
	Plan *assignor.Plan `json:"plan"`
	Loss struct {
		Lose                []tagValue     `json:"lose"`
		ClientsLost         []string       `json:"clients_lost"`
		TasksWithoutReplica []int          `json:"tasks_without_replica"`
		PlanAfter           *assignor.Plan `json:"plan_after"`
	} `json:"loss"`
}

// runAssign is `rackstream assign`.
func runAssign(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("assign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "json", "output format: json or table")
	var lose loseFlag
	fs.Var(&lose, "lose", "also show the loss of every client with tag KEY=VALUE (repeatable)")
	fs.Usage = func() {
		fmt.Fprint(stderr, assignUsage)
		fs.PrintDefaults()
	}
	// Flags may come before or after the file name.
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) > 1 {
		fmt.Fprintf(stderr, "rackstream assign: one scenario at a time, got %q\n", files)
		return 2
	}
	if *format != "json" && *format != "table" {
		fmt.Fprintf(stderr, "rackstream assign: --format: want json or table, got %q\n", *format)
		return 2
	}

	name, r := "stdin", stdin
	if len(files) == 1 && files[0] != "-" {
		f, err := os.Open(files[0])
		if err != nil {
			fmt.Fprintf(stderr, "rackstream assign: %v\n", err)
			return 1
		}
		defer f.Close()
		name, r = files[0], f
	}
	data, err := io.ReadAll(r)
	if err != nil {
		fmt.Fprintf(stderr, "rackstream assign: read %s: %v\n", name, err)
		return 1
	}
	in, err := assignor.DecodeInput(data)
	if err != nil {
		fmt.Fprintf(stderr, "rackstream assign: %s: %v\n", name, err)
		return 2
	}
	plan, err := assignor.Assign(in)
	if err != nil {
		fmt.Fprintf(stderr, "rackstream assign: %s: %v\n", name, err)
		return 2
	}
	if len(lose) == 0 {
		if *format == "table" {
			printPlanTable(stdout, in, plan)
			return 0
		}
		return writeJSON(stdout, stderr, plan)
	}

	var rep lossReport
	rep.Plan = plan
	rep.Loss.Lose = lose
	after, lost, err := afterLoss(in, plan, lose)
	if err != nil {
		fmt.Fprintf(stderr, "rackstream assign: %v\n", err)
		return 2
	}
	rep.Loss.ClientsLost = lost
	rep.Loss.TasksWithoutReplica = tasksWithoutReplica(plan, lost)
	if len(after.Clients) > 0 || after.Tasks == 0 {
		if rep.Loss.PlanAfter, err = assignor.Assign(after); err != nil {
			fmt.Fprintf(stderr, "rackstream assign: plan after the loss: %v\n", err)
			return 1
		}
	}
	if *format == "json" {
		return writeJSON(stdout, stderr, rep)
	}
	printPlanTable(stdout, in, plan)
	what := make([]string, len(lose))
	for i, tv := range lose {
		what[i] = tv.Tag + "=" + tv.Value
	}
	fmt.Fprintf(stdout, "\nLosing %s: clients %s\n", strings.Join(what, " and "), strings.Join(lost, ", "))
	if ts := rep.Loss.TasksWithoutReplica; len(ts) == 0 {
		fmt.Fprintln(stdout, "Tasks left without any replica: none")
	} else {
		fmt.Fprintf(stdout, "Tasks left without any replica: %s\n", joinInts(ts))
	}
	if rep.Loss.PlanAfter == nil {
		fmt.Fprintln(stdout, "\nNo client survives: no plan after the loss.")
		return 0
	}
	fmt.Fprintln(stdout, "\nPlan after the loss:")
	printPlanTable(stdout, after, rep.Loss.PlanAfter)
	return 0
}

func writeJSON(stdout, stderr io.Writer, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "rackstream assign: encode: %v\n", err)
		return 1
	}
	b = append(b, '\n')
	if _, err := stdout.Write(b); err != nil {
		fmt.Fprintf(stderr, "rackstream assign: write: %v\n", err)
		return 1
	}
	return 0
}

// afterLoss returns the scenario of the survivors of the loss, with their
// roles in plan as previous roles (lag 0 for their actives and standbys, the
// input's lags otherwise), and the ids of the clients lost, sorted.
func afterLoss(in assignor.Input, plan *assignor.Plan, lose loseFlag) (assignor.Input, []string, error) {
	matched := make([]bool, len(lose))
	var lost []string
	byID := make(map[string]assignor.ClientPlacement, len(plan.Clients))
	for _, cp := range plan.Clients {
		byID[cp.ID] = cp
	}
	after := in
	after.Clients = nil
	for _, c := range in.Clients {
		gone := false
		for i, tv := range lose {
			if v, ok := c.Tags[tv.Tag]; ok && v == tv.Value {
				gone, matched[i] = true, true
			}
		}
		if gone {
			lost = append(lost, c.ID)
			continue
		}
		cp := byID[c.ID]
		s := assignor.Client{ID: c.ID, Tags: c.Tags, Capacity: c.Capacity,
			PreviousActive: cp.Active, PreviousStandby: cp.Standby, PreviousWarmup: cp.Warmup,
			Lags: make(map[int]int64, len(c.Lags)+len(cp.Active)+len(cp.Standby))}
		for t, lag := range c.Lags {
			s.Lags[t] = lag
		}
		for _, l := range [][]int{cp.Active, cp.Standby} {
			for _, t := range l {
				s.Lags[t] = 0
			}
		}
		after.Clients = append(after.Clients, s)
	}
	for i, ok := range matched {
		if !ok {
			return after, nil, fmt.Errorf("--lose %s=%s: no client has this tag", lose[i].Tag, lose[i].Value)
		}
	}
	sort.Strings(lost)
	if lost == nil {
		lost = []string{}
	}
	return after, lost, nil
}

// tasksWithoutReplica lists the tasks whose active and standbys are all lost.
func tasksWithoutReplica(plan *assignor.Plan, lost []string) []int {
	gone := make(map[string]bool, len(lost))
	for _, id := range lost {
		gone[id] = true
	}
	out := []int{}
	for _, tp := range plan.Tasks {
		left := !gone[tp.Active]
		for _, s := range tp.Standby {
			left = left || !gone[s]
		}
		if !left {
			out = append(out, tp.Task)
		}
	}
	return out
}

// printPlanTable prints task -> active and standbys with their tags, then
// the plan's quality.
func printPlanTable(w io.Writer, in assignor.Input, p *assignor.Plan) {
	tags := make(map[string]string, len(p.Clients))
	for _, cp := range p.Clients {
		tags[cp.ID] = formatTags(cp.Tags, in.RackAwareAssignmentTags)
	}
	who := func(id string) string {
		if t := tags[id]; t != "" {
			return id + " (" + t + ")"
		}
		return id
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tACTIVE\tSTANDBYS\tWARMUPS")
	for _, tp := range p.Tasks {
		sb := make([]string, len(tp.Standby))
		for i, id := range tp.Standby {
			sb[i] = who(id)
		}
		warm := strings.Join(tp.Warmup, ", ")
		if warm == "" {
			warm = "-"
		}
		standbys := strings.Join(sb, ", ")
		if standbys == "" {
			standbys = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", tp.Task, who(tp.Active), standbys, warm)
	}
	tw.Flush()

	q := p.Quality
	fmt.Fprintln(w)
	for _, d := range q.Dimensions {
		fmt.Fprintf(w, "spread  %s: %d values, %d tasks repeating a value\n", d.Tag, d.Values, d.TasksRepeating)
	}
	fmt.Fprintf(w, "standby shortfall: %d\n", q.StandbyShortfall)
	fmt.Fprintf(w, "load per unit of capacity: actives %g..%g, replicas %g..%g\n", q.ActiveLoad.Min, q.ActiveLoad.Max, q.ReplicaLoad.Min, q.ReplicaLoad.Max)
	exposed := 0
	for _, e := range q.Exposure {
		if len(e.TasksWithoutReplica) > 0 {
			fmt.Fprintf(w, "exposure: losing %s=%s leaves tasks %s without a replica\n", e.Tag, e.Value, joinInts(e.TasksWithoutReplica))
			exposed++
		}
	}
	if exposed == 0 {
		fmt.Fprintln(w, "exposure: losing any one tag value leaves every task a replica")
	}
	if p.ProbingRebalanceNeeded {
		fmt.Fprintln(w, "probing rebalance needed: balance waits for warmups to catch up")
	}
}

// formatTags renders tags as k=v, the rack-aware keys first in priority
// order, then the others by name.
func formatTags(tags map[string]string, first []string) string {
	var parts []string
	seen := make(map[string]bool, len(first))
	for _, k := range first {
		if v, ok := tags[k]; ok {
			parts = append(parts, k+"="+v)
			seen[k] = true
		}
	}
	var rest []string
	for k := range tags {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, k+"="+tags[k])
	}
	return strings.Join(parts, ",")
}

func joinInts(ts []int) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = fmt.Sprint(t)
	}
	return strings.Join(s, ", ")
}
