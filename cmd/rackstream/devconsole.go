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
	"github.com/rackstream/rackstream/internal/textsafe"
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

// settled reports whether p is a placement at rest (settledFor) for dev's
// instances as they are now.
func (d *devCluster) settled(p *balancer.Placement) bool {
	var running, stopped []string
	for _, in := range d.insts {
		switch pid := in.processID(); {
		case in.running() != nil:
			running = append(running, pid)
		case pid != "":
			stopped = append(stopped, pid)
		}
	}
	return settledFor(p, running, stopped)
}

// settledFor reports whether p is a placement at rest: every running dev
// instance (by process id) is a member, no stopped one still is, and every
// task has an active (none in transit). Members run elsewhere (a
// `rackstream run` joining the group) may come and go as they like.
func settledFor(p *balancer.Placement, running, stopped []string) bool {
	if p == nil {
		return false
	}
	member := make(map[string]bool, len(p.Members))
	for _, m := range p.Members {
		member[m.ProcessID] = true
	}
	for _, pid := range running {
		if !member[pid] {
			return false
		}
	}
	for _, pid := range stopped {
		if member[pid] {
			return false
		}
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

// describe names a member with its zone and cluster, escaped and
// shortened: a member run elsewhere may announce anything.
func describe(names map[string]string, m balancer.Member) string {
	return fmt.Sprintf("%s (%s, %s)", textsafe.Short(names[m.ProcessID]), textsafe.Short(m.Tags.Value(devZoneTag)), textsafe.Short(m.Tags.Value(devClusterT)))
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
		fmt.Fprintf(&b, " %s %d values, %d tasks repeating;", textsafe.Short(q.Tag), q.Values, q.TasksRepeating)
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
			st = "stopped: " + textsafe.Short(in.err.Error())
		}
		in.mu.Unlock()
		if svc := in.running(); svc != nil {
			st = "ready"
			if ok, why := svc.Ready(); !ok {
				st = "not ready: " + textsafe.Short(why)
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
  curl http://%[1]s/v1/stores/count-per-minute/windows/user-7
  curl -X POST http://%[1]s/v1/dev/instances/i2/kill
Console: kill <id>, stop <id>, start <id>, placement, status, help. Ctrl-C stops everything.
`, a)
}

// maxConsoleLine bounds one console command line: a longer line is
// reported, skipped and not kept in memory.
const maxConsoleLine = 64 << 10

// errLineTooLong is readLine's answer to a line over its bound.
var errLineTooLong = errors.New("line too long")

// consoleLine is one line of stdin, or the size of one too long to keep.
type consoleLine struct {
	text    string
	tooLong int
}

// console reads commands from stdin until it ends or ctx is cancelled. A
// line over maxConsoleLine bytes is reported and skipped; reading goes on.
func (d *devCluster) console(ctx context.Context, stdin io.Reader) {
	if stdin == nil {
		return
	}
	lines := make(chan consoleLine)
	go func() {
		defer close(lines)
		r := bufio.NewReader(stdin)
		for {
			text, size, err := readLine(r, maxConsoleLine)
			l := consoleLine{text: text}
			switch {
			case errors.Is(err, errLineTooLong):
				l = consoleLine{tooLong: size}
			case err != nil:
				return
			}
			select {
			case lines <- l:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case l, ok := <-lines:
			if !ok {
				return
			}
			if l.tooLong > 0 {
				fmt.Fprintf(d.out, "console: line too long (%d bytes, at most %d): ignored\n", l.tooLong, maxConsoleLine)
				continue
			}
			if msg := d.command(strings.Fields(l.text)); msg != "" {
				fmt.Fprintln(d.out, msg)
			}
		}
	}
}

// readLine returns the next line of r without its line break and its size
// in bytes. A line of more than limit bytes is read to its end but not
// kept: readLine returns its size and errLineTooLong. At the end of r it
// returns r's error (io.EOF) once the last line is returned.
func readLine(r *bufio.Reader, limit int) (string, int, error) {
	var line []byte
	size := 0
	for {
		chunk, err := r.ReadSlice('\n')
		size += len(chunk)
		if size <= limit+1 { // the line and its line break
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && size == 0 {
			return "", 0, err
		}
		if n := len(chunk); n > 0 && chunk[n-1] == '\n' {
			size--
		}
		if size > limit {
			return "", size, errLineTooLong
		}
		return string(line[:size]), size, nil
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
	return fmt.Sprintf("unknown command \"%s\": try help", textsafe.Short(f[0]))
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
		return fmt.Errorf("%w \"%s\" (ids: %s)", errNoInstance, textsafe.Short(id), d.names())
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
