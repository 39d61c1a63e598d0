package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// placed notes that an instance learned a new placement, for watch; it
// never blocks the runtime that calls it.
func (d *devCluster) placed() {
	select {
	case d.placements <- struct{}{}:
	default: // watch has a note pending already
	}
}

// watch prints the placement once every instance is ready, then again for
// every new generation. Placements come as events (placed); readiness has
// none (a restore ends quietly), so until the first announcement it is
// also checked every 200 ms.
func (d *devCluster) watch(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	tick := t.C
	announced := false
	var gen int32 = -1
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.placements:
		case <-tick:
		}
		p := d.placement()
		if !d.settled(p) {
			continue
		}
		if !announced {
			if !d.allReady() {
				continue
			}
			announced, tick = true, nil // from now on, placement events only
			t.Stop()
			gen = p.Generation
			fmt.Fprintf(d.out, "\nrackstream dev: all %d instances ready in %v\n", len(d.insts), time.Since(d.started).Round(10*time.Millisecond))
			d.printPlacement(p)
			d.printHelp()
			continue
		}
		if p.Generation != gen {
			gen = p.Generation
			fmt.Fprintf(d.out, "\nrackstream dev: new placement\n")
			d.printPlacement(p)
		}
	}
}

// settled reports whether p is a placement at rest: every running
// instance is a member and every task has an active (none in transit).
func (d *devCluster) settled(p *balancer.Placement) bool {
	if p == nil {
		return false
	}
	running := 0
	for _, in := range d.insts {
		if in.running() != nil {
			running++
		}
	}
	if len(p.Members) != running {
		return false
	}
	for _, t := range p.Tasks {
		if t.Active == balancer.NoMember {
			return false
		}
	}
	return true
}

func (d *devCluster) allReady() bool {
	for _, in := range d.insts {
		svc := in.running()
		if svc == nil {
			return false
		}
		if ok, _ := svc.Ready(); !ok {
			return false
		}
	}
	return true
}

// placement returns the newest placement any running instance knows.
func (d *devCluster) placement() *balancer.Placement {
	var best *balancer.Placement
	for _, in := range d.insts {
		if svc := in.running(); svc != nil {
			if p := svc.Runtime().Placement(); p != nil && (best == nil || p.Generation > best.Generation) {
				best = p
			}
		}
	}
	return best
}

// memberNames maps the process id of each member of p to its name: dev's own
// instances are i1, i2, ...; a member started elsewhere (a `rackstream run`
// joining the group) is named by its endpoint (displayNames). The status
// table gives each instance's process id.
func (d *devCluster) memberNames(p *balancer.Placement) map[string]string {
	members := make([]instance, len(p.Members))
	for i, m := range p.Members {
		members[i] = instance{id: m.ProcessID, endpoint: m.Endpoint}
	}
	names := displayNames(members)
	for _, in := range d.insts {
		if pid := in.processID(); pid != "" {
			names[pid] = in.name
		}
	}
	return names
}

func describe(names map[string]string, m balancer.Member) string {
	return fmt.Sprintf("%s (%s, %s)", names[m.ProcessID], m.Tags.Value(devZoneTag), m.Tags.Value(devClusterT))
}

func (d *devCluster) printPlacement(p *balancer.Placement) {
	if p == nil {
		fmt.Fprintln(d.out, "no placement yet")
		return
	}
	names := d.memberNames(p)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "TASK\tACTIVE\tSTANDBYS\n")
	for task := range p.Tasks {
		active := "-"
		if m, ok := p.Active(int32(task)); ok {
			active = describe(names, m)
		}
		var sb []string
		for _, m := range p.Standbys(int32(task)) {
			sb = append(sb, describe(names, m))
		}
		standbys := strings.Join(sb, ", ")
		if len(p.Tasks[task].Warmups) > 0 {
			var wu []string
			for _, i := range p.Tasks[task].Warmups {
				wu = append(wu, describe(names, p.Members[i]))
			}
			standbys += "  warmup: " + strings.Join(wu, ", ")
		}
		if standbys == "" {
			standbys = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", task, active, standbys)
	}
	tw.Flush()
	fmt.Fprintf(&b, "generation %d; quality:", p.Generation)
	for _, q := range p.Quality.Dimensions {
		fmt.Fprintf(&b, " %s %d values, %d tasks repeating;", q.Tag, q.Values, q.TasksRepeating)
	}
	fmt.Fprintf(&b, " standby shortfall %d\n\n", p.Quality.StandbyShortfall)
	d.writeStatus(&b)
	io.WriteString(d.out, b.String())
}

// writeStatus writes the instance table: name, HTTP address, tags, state.
func (d *devCluster) writeStatus(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "INSTANCE\tHTTP\tZONE\tCLUSTER\tPROCESS ID\tSTATE\n")
	for _, in := range d.insts {
		st := "stopped"
		in.mu.Lock()
		if in.err != nil {
			st = "stopped: " + in.err.Error()
		}
		in.mu.Unlock()
		if svc := in.running(); svc != nil {
			st = "ready"
			if ok, why := svc.Ready(); !ok {
				st = "not ready: " + why
			}
		}
		fmt.Fprintf(tw, "%s\thttp://%s\t%s\t%s\t%s\t%s\n", in.name, in.addr, in.zone, in.cluster, in.processID(), st)
	}
	tw.Flush()
}

func (d *devCluster) printHelp() {
	if len(d.insts) == 0 {
		return
	}
	a := d.insts[0].addr
	fmt.Fprintf(d.out, `
Try:
  curl http://%[1]s/v1/metadata
  curl http://%[1]s/v1/stores/count/keys/user-7
  curl -X POST http://%[1]s/v1/dev/instances/i2/kill
Console: kill <id>, stop <id>, start <id>, placement, status, help. Ctrl-C stops everything.
`, a)
}

// console reads commands from stdin until it ends or ctx is cancelled.
func (d *devCluster) console(ctx context.Context, stdin io.Reader) {
	if stdin == nil {
		return
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		close(lines)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case line, ok := <-lines:
			if !ok {
				return
			}
			if msg := d.command(strings.Fields(line)); msg != "" {
				fmt.Fprintln(d.out, msg)
			}
		}
	}
}

// command runs one console command and returns what to print.
func (d *devCluster) command(f []string) string {
	if len(f) == 0 {
		return ""
	}
	switch f[0] {
	case "help", "?":
		return "commands: kill <id> (crash), stop <id> (clean shutdown), start <id>, placement, status, help; ids: " + d.names()
	case "placement":
		d.printPlacement(d.placement())
		return ""
	case "status":
		var b strings.Builder
		d.writeStatus(&b)
		fmt.Fprintf(&b, "records produced: %d", d.produced.Load())
		return b.String()
	case "kill", "stop", "start":
		if len(f) != 2 {
			return "usage: " + f[0] + " <id> (ids: " + d.names() + ")"
		}
		if err := d.act(f[0], f[1]); err != nil {
			return err.Error()
		}
		return f[0] + " " + f[1] + ": done"
	}
	return fmt.Sprintf("unknown command %q: try help", f[0])
}

func (d *devCluster) names() string {
	var ns []string
	for _, in := range d.insts {
		ns = append(ns, in.name)
	}
	return strings.Join(ns, " ")
}

var errNoInstance = errors.New("no such instance")

func (d *devCluster) act(action, id string) error {
	in := d.instance(id)
	if in == nil {
		return fmt.Errorf("%w %q (ids: %s)", errNoInstance, id, d.names())
	}
	switch action {
	case "kill":
		return in.kill()
	case "stop":
		return in.stop()
	case "start":
		return in.start()
	}
	return fmt.Errorf("unknown action %q", action)
}
