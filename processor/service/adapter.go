package service

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/processor/query"
)

// runtimeAdapter presents the processor runtime as the query server's
// Runtime.
type runtimeAdapter struct{ rt *processor.Runtime }

func (a runtimeAdapter) Self() string                   { return a.rt.ProcessID() }
func (a runtimeAdapter) Placement() *balancer.Placement { return a.rt.Placement() }

func (a runtimeAdapter) Ready() error {
	if ok, reason := a.rt.Ready(); !ok {
		if reason == "" {
			reason = "not ready"
		}
		return errors.New(reason)
	}
	return nil
}

// Replica and Replicas use the role the runtime reports for the task, a
// snapshot taken when the request arrived.
func (a runtimeAdapter) Replica(store string, task int32) query.Replica {
	rep, ok := a.rt.Replica(task)
	if !ok {
		return nil
	}
	return query.StoreReplica(rep.Role, rep.Stores[store])
}

func (a runtimeAdapter) Replicas() []query.ReplicaStatus {
	var out []query.ReplicaStatus
	for task := range a.rt.Tasks() {
		rep, ok := a.rt.Replica(task)
		if !ok {
			continue
		}
		for _, s := range rep.Stores {
			out = append(out, query.StoreReplica(rep.Role, s).Status())
		}
	}
	return out
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
