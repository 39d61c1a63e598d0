package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/internal/boundedread"
	"github.com/rackstream/rackstream/internal/textsafe"
)

const assignUsage = `Usage: rackstream assign [--format json|table] [--lose KEY=VALUE|ID]... [FILE|-]

Computes a placement from a scenario and prints it. The scenario is JSON, read
from FILE or stdin:

  {"num_standby_replicas": 2, "rack_aware_assignment_tags": ["zone","cluster"],
   "tasks": 12, "acceptable_recovery_lag": 10000, "max_warmup_replicas": 2,
   "clients": [{"id": "n1", "tags": {"zone": "eu-central-1a", "cluster": "k1"},
                "capacity": 1, "previous_active": [0], "previous_standby": [3],
                "previous_warmup": [], "lags": {"0": 0, "3": 120}}]}

An optional "rack_awareness" object says where each task's partitions are
and what they carry, for rack-aware placement (rack.aware.assignment.*):

  "rack_awareness": {"strategy": "min_traffic", "traffic_cost": 10,
    "non_overlap_cost": 1, "client_rack_tag": "zone",
    "tasks": [{"task": 0,
               "rates": {"input": 2e6, "changelog": 4e5, "output": 1e6},
               "partitions": [{"topic": "orders", "partition": 0,
                               "role": "input", "replicas": ["eu-1a", "eu-1b"],
                               "leader": "eu-1a"}]}]}

strategy is none (the default here), min_traffic or balance_subtopology;
client_rack_tag names the client tag holding each client's rack. Each
partition has a role (input: a topic or table the active fetches;
changelog: produced by the active, fetched by standbys; output: produced by
the active), the racks of its replicas' brokers ("" for a broker without
broker.rack) and its leader's rack. rates are the task's bytes per second
per role, split evenly over its partitions of that role; a task without
rates weighs the mean of the others, and with no rates at all every
partition flow weighs 1. The plan then has "cross_zone": each task's
expected cross-zone bytes per second (fetch and produce), whether its
active and standbys sit with a replica, the total, and what had no rack.
The table adds a CROSS-ZONE column and the total.

A /v1/metadata document of a running group is accepted too: its placement is
the previous plan, its status lags the lags, its settings (those the
group's leader planned with) the settings and its cross_zone's
rack_awareness (the leader's partition racks and rates) the rack awareness,
so a live cluster's placement can be replayed and the plan after a loss
reports its cross-zone traffic. With --lose, a metadata document's own placement (the live
one) is the plan printed and what-if'd, not the replay.

--lose KEY=VALUE (every client with that tag value) or --lose ID (one
client), repeatable (the losses add up), also prints the tasks left without
any replica, where each task whose active is lost fails over (to a standby,
or restoring from the changelog), and the plan after the loss: recomputed
for the survivors, with their roles in the plan as previous roles (actives
and standbys caught up). It is assignor.WhatIf, as /v1/whatif serves it. As
JSON:

  {"plan": {...}, "loss": {"lose": [{"tag": "zone", "value": "..."}],
   "clients_lost": [...], "tasks_without_replica": [...],
   "failover": [{"task": 0, "from": "n2", "to": "n3", "restore": false}],
   "plan_after": {...}}}

The table names each client for people: a metadata document's clients by
their endpoint (application.server), shortened while the names stay
unique (rackstream-0.rackstream.prod.svc:8080 reads rackstream-0), with a
list of names and process ids at the end; others by their id. --lose ID
and the JSON take process ids.

The input may be at most 64 MiB (a FIFO or device is read with the same
bound; a directory is refused), and the read ends on SIGINT or SIGTERM.

Exit status: 0 plan printed, 1 input unreadable (missing, too large,
interrupted), 2 bad usage or scenario.

Flags:
`

// loseFlag collects --lose selectors (assignor.ParseSelector).
type loseFlag []assignor.Selector

func (l *loseFlag) String() string {
	s := make([]string, len(*l))
	for i, sel := range *l {
		s[i] = sel.String()
	}
	return strings.Join(s, " ")
}

func (l *loseFlag) Set(v string) error {
	sel, err := assignor.ParseSelector(v)
	if err != nil {
		return err
	}
	*l = append(*l, sel)
	return nil
}

// lossReport is the JSON output of assign --lose.
type lossReport struct {
	Plan *assignor.Plan         `json:"plan"`
	Loss *assignor.WhatIfResult `json:"loss"`
}

// runAssign is `rackstream assign`.
func runAssign(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("assign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "json", "output format: json or table")
	var lose loseFlag
	fs.Var(&lose, "lose", "also show the loss of every client with tag KEY=VALUE, or of the client ID (repeatable)")
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
		failf(stderr, "one scenario at a time, got %q", files)
		return 2
	}
	if *format != "json" && *format != "table" {
		failf(stderr, "--format: want json or table, got %q", *format)
		return 2
	}

	name := "stdin"
	var data []byte
	var err error
	if len(files) == 1 && files[0] != "-" {
		name = files[0]
		data, err = boundedread.ReadFile(ctx, name, boundedread.PlacementDocument)
	} else {
		data, err = boundedread.ReadAll(ctx, stdin, name, boundedread.PlacementDocument)
	}
	if err != nil {
		failf(stderr, "%v", err)
		return 1
	}
	if len(lose) == 0 {
		in, err := assignor.DecodeInput(data) // for a metadata document, the replay
		if err != nil {
			failf(stderr, "%s: %v", name, err)
			return 2
		}
		plan, err := assignor.Assign(in)
		if err != nil {
			failf(stderr, "%s: %v", name, err)
			return 2
		}
		if *format == "table" {
			names := planNames(data, plan)
			printPlanTable(stdout, in, plan, names)
			printInstances(stdout, plan, names)
			return 0
		}
		return writeJSON(stdout, stderr, plan)
	}

	// The same computation as the placement page's /v1/whatif.
	in, plan, res, err := assignor.LossOfDocument(data, lose)
	var selErr *assignor.SelectorError
	if errors.As(err, &selErr) {
		failf(stderr, "--%v", err)
		return 2
	} else if err != nil {
		failf(stderr, "%s: %v", name, err)
		return 2
	}
	if *format == "json" {
		return writeJSON(stdout, stderr, lossReport{Plan: plan, Loss: res})
	}
	names := planNames(data, plan)
	printPlanTable(stdout, in, plan, names)
	printWhatIf(stdout, in, res, names)
	printInstances(stdout, plan, names)
	return 0
}

// planNames names the plan's clients for people (displayNames), by the
// endpoints of data when it is a /v1/metadata document; a scenario's
// clients have none, and keep their ids.
func planNames(data []byte, p *assignor.Plan) map[string]string {
	var doc struct {
		Clients []struct {
			ID       string `json:"id"`
			Endpoint string `json:"endpoint"`
		} `json:"clients"`
	}
	json.Unmarshal(data, &doc) // a scenario without endpoints names by id
	endpoints := make(map[string]string, len(doc.Clients))
	for _, c := range doc.Clients {
		endpoints[c.ID] = c.Endpoint
	}
	members := make([]instance, len(p.Clients))
	for i, c := range p.Clients {
		members[i] = instance{id: c.ID, endpoint: endpoints[c.ID]}
	}
	return displayNames(members)
}

// printInstances lists each client's name beside its process id, unless
// every name is the id.
func printInstances(w io.Writer, p *assignor.Plan, names map[string]string) {
	same := true
	for _, c := range p.Clients {
		same = same && names[c.ID] == c.ID
	}
	if same {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tPROCESS ID")
	for _, c := range p.Clients {
		fmt.Fprintf(tw, "%s\t%s\n", textsafe.Short(names[c.ID]), textsafe.Short(c.ID))
	}
	tw.Flush()
}

// nameOf returns id's name for people, escaped and shortened (textsafe).
func nameOf(names map[string]string, id string) string {
	if n, ok := names[id]; ok {
		return textsafe.Short(n)
	}
	return textsafe.Short(id)
}

// printWhatIf prints a what-if result under the plan's table.
func printWhatIf(w io.Writer, in assignor.Input, res *assignor.WhatIfResult, names map[string]string) {
	what := make([]string, len(res.Lose))
	for i, sel := range res.Lose {
		what[i] = textsafe.Short(sel.String())
	}
	lost := make([]string, len(res.ClientsLost))
	for i, id := range res.ClientsLost {
		lost[i] = nameOf(names, id)
	}
	fmt.Fprintf(w, "\nLosing %s: clients %s\n", strings.Join(what, " and "), strings.Join(lost, ", "))
	if ts := res.TasksWithoutReplica; len(ts) == 0 {
		fmt.Fprintln(w, "Tasks left without any replica: none")
	} else {
		fmt.Fprintf(w, "Tasks left without any replica: %s\n", joinInts(ts))
	}
	for _, f := range res.Failover {
		how := "caught up"
		switch {
		case f.To == "":
			how = "no client left"
		case f.Restore:
			how = "restores from the changelog"
		}
		to := "-"
		if f.To != "" {
			to = nameOf(names, f.To)
		}
		fmt.Fprintf(w, "Task %d fails over: %s -> %s (%s)\n", f.Task, nameOf(names, f.From), to, how)
	}
	if res.PlanAfter == nil {
		fmt.Fprintln(w, "\nNo client survives: no plan after the loss.")
		return
	}
	fmt.Fprintln(w, "\nPlan after the loss:")
	printPlanTable(w, in, res.PlanAfter, names)
}

// failf prints an error of `rackstream assign`, each line escaped: messages
// quote ids, tags and names from the scenario, which may hold terminal
// escape sequences.
func failf(stderr io.Writer, format string, args ...any) {
	fmt.Fprintln(stderr, "rackstream assign: "+textsafe.Lines(fmt.Sprintf(format, args...)))
}

func writeJSON(stdout, stderr io.Writer, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		failf(stderr, "encode: %v", err)
		return 1
	}
	b = append(textsafe.JSON(b), '\n')
	if _, err := stdout.Write(b); err != nil {
		failf(stderr, "write: %v", err)
		return 1
	}
	return 0
}

// printPlanTable prints task -> active and standbys, named by names with
// their tags, then the plan's quality.
func printPlanTable(w io.Writer, in assignor.Input, p *assignor.Plan, names map[string]string) {
	tags := make(map[string]string, len(p.Clients))
	for _, cp := range p.Clients {
		tags[cp.ID] = formatTags(cp.Tags, in.RackAwareAssignmentTags)
	}
	who := func(id string) string {
		if t := tags[id]; t != "" {
			return nameOf(names, id) + " (" + t + ")"
		}
		return nameOf(names, id)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tACTIVE\tSTANDBYS\tWARMUPS"+crossZoneHeader(p))
	for _, tp := range p.Tasks {
		sb := make([]string, len(tp.Standby))
		for i, id := range tp.Standby {
			sb[i] = who(id)
		}
		warm := make([]string, len(tp.Warmup))
		for i, id := range tp.Warmup {
			warm[i] = nameOf(names, id)
		}
		warmups := strings.Join(warm, ", ")
		if warmups == "" {
			warmups = "-"
		}
		standbys := strings.Join(sb, ", ")
		if standbys == "" {
			standbys = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s%s\n", tp.Task, who(tp.Active), standbys, warmups, crossZoneCell(p, tp.Task))
	}
	tw.Flush()

	q := p.Quality
	fmt.Fprintln(w)
	for _, d := range q.Dimensions {
		fmt.Fprintf(w, "spread  %s: %d values, %d tasks repeating a value\n", textsafe.Short(d.Tag), d.Values, d.TasksRepeating)
	}
	fmt.Fprintf(w, "standby shortfall: %d\n", q.StandbyShortfall)
	fmt.Fprintf(w, "load per unit of capacity: actives %g..%g, replicas %g..%g\n", q.ActiveLoad.Min, q.ActiveLoad.Max, q.ReplicaLoad.Min, q.ReplicaLoad.Max)
	exposed := 0
	for _, e := range q.Exposure {
		if len(e.TasksWithoutReplica) > 0 {
			fmt.Fprintf(w, "exposure: losing %s=%s leaves tasks %s without a replica\n", textsafe.Short(e.Tag), textsafe.Short(e.Value), joinInts(e.TasksWithoutReplica))
			exposed++
		}
	}
	if exposed == 0 {
		fmt.Fprintln(w, "exposure: losing any one tag value leaves every task a replica")
	}
	printCrossZone(w, p.CrossZone)
	if p.ProbingRebalanceNeeded {
		fmt.Fprintln(w, "probing rebalance needed: balance waits for warmups to catch up")
	}
}

// formatTags renders tags as k=v, the rack-aware keys first in priority
// order, then the others by name, escaped and shortened (textsafe).
func formatTags(tags map[string]string, first []string) string {
	var parts []string
	seen := make(map[string]bool, len(first))
	for _, k := range first {
		if v, ok := tags[k]; ok {
			parts = append(parts, textsafe.Short(k)+"="+textsafe.Short(v))
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
		parts = append(parts, textsafe.Short(k)+"="+textsafe.Short(tags[k]))
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
