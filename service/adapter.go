package service

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/query"
)

// runtimeAdapter presents the processor runtime as the query server's
// Reader: the only implementation of it; its reads are in reader.go.
type runtimeAdapter struct{ rt *processor.Runtime }

var _ query.ZoneCounter = runtimeAdapter{}

func (a runtimeAdapter) Self() string                       { return a.rt.ProcessID() }
func (a runtimeAdapter) Placement() *balancer.Placement     { return a.rt.Placement() }
func (a runtimeAdapter) CrossZoneBytes() assignor.ZoneBytes { return a.rt.CrossZoneBytes() }

func (a runtimeAdapter) Ready() error {
	if ok, reason := a.rt.Ready(); !ok {
		return notReady(reason)
	}
	return nil
}

// The runtime's readiness reasons that are words a client may see on
// /readyz: the rest embed raw errors (a broker's address, a storage path).
var (
	readyWords    = map[string]bool{"starting": true, "stopped": true, "joining the group": true}
	readyRestore  = regexp.MustCompile(`^task [0-9]+ is restoring$`)
	readyTopology = regexp.MustCompile(`^topology [A-Za-z0-9._-]+: partition count(s differ \(| changed from [0-9]+ to [0-9]+ while running$)`)
)

// notReady turns the runtime's reason into the query server's NotReady:
// the reason itself when it is one of the runtime's worded conditions (a
// partition count change names its topics and counts), else a condition in
// words with the reason as the cause, for the log only. The runtime reports
// one string today; once it reports its condition and cause apart, this
// allowlist goes.
func notReady(reason string) *query.NotReady {
	switch {
	case reason == "":
		return &query.NotReady{Condition: "not ready"}
	case readyWords[reason], readyRestore.MatchString(reason), readyTopology.MatchString(reason):
		return &query.NotReady{Condition: reason}
	case strings.HasPrefix(reason, "rebuilding the Kafka client"):
		return &query.NotReady{Condition: "rebuilding the Kafka client after an error", Cause: errors.New(reason)}
	}
	return &query.NotReady{Condition: "stopped by an error (details in the instance's log)", Cause: errors.New(reason)}
}

// logPlacement logs a placement's summary, one line: the generation, the
// tasks per member and role ("replicas": <process id>[<tags>]=<active>/
// <standby>/<warmup> per member), and the quality per tag dimension (the
// assignor's names: tag, values, tasks_repeating) with the standby
// shortfall.
func logPlacement(log *slog.Logger, p *balancer.Placement, self string) {
	type counts struct{ active, standby, warmup int }
	per := make([]counts, len(p.Members))
	orphans := 0
	for _, t := range p.Tasks {
		if t.Active == balancer.NoMember {
			orphans++
		} else {
			per[t.Active].active++
		}
		for _, m := range t.Standbys {
			per[m].standby++
		}
		for _, m := range t.Warmups {
			per[m].warmup++
		}
	}
	var members strings.Builder
	for i, m := range p.Members {
		if i > 0 {
			members.WriteString(" ")
		}
		fmt.Fprintf(&members, "%s[%s]=%d/%d/%d", m.ProcessID, m.Tags.String(), per[i].active, per[i].standby, per[i].warmup)
	}
	attrs := []any{
		"generation", p.Generation,
		"members", len(p.Members),
		"tasks", len(p.Tasks),
		"tasks_without_active", orphans,
		"replicas", members.String(),
		"quality", p.Quality.Dimensions,
		"standby_shortfall", p.Quality.StandbyShortfall,
		"self", self,
	}
	if !p.ProbingDeadline.IsZero() {
		attrs = append(attrs, "probing_deadline", p.ProbingDeadline)
	}
	log.Info("placement", attrs...)
}
