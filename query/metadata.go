package query

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/tags"
)

// instanceStatus is GET /v1/status: this instance's readiness and its
// replicas, what /v1/metadata gathers from every instance.
type instanceStatus struct {
	ID             string              `json:"id"`
	Generation     int32               `json:"generation"`
	Ready          bool                `json:"ready"`
	Reason         string              `json:"reason,omitempty"`
	Replicas       []ReplicaStatus     `json:"replicas"`
	CrossZoneBytes *assignor.ZoneBytes `json:"cross_zone_bytes,omitempty"`
}

// ZoneCounter is what a Reader also implements when it counts the bytes
// its Kafka clients exchange with brokers of other racks: /v1/status and
// /v1/metadata's status then show them.
type ZoneCounter interface {
	CrossZoneBytes() assignor.ZoneBytes
}

func (s *Server) localStatus() instanceStatus {
	st := instanceStatus{ID: s.rt.Self(), Ready: true, Replicas: s.rt.Replicas()}
	if zc, ok := s.rt.(ZoneCounter); ok {
		zb := zc.CrossZoneBytes()
		st.CrossZoneBytes = &zb
	}
	if st.Replicas == nil {
		st.Replicas = []ReplicaStatus{}
	}
	if p := s.rt.Placement(); p != nil {
		st.Generation = p.Generation
	}
	if err := s.rt.Ready(); err != nil {
		st.Ready, st.Reason = false, s.notReadyReason(err)
	}
	return st
}

// placementDoc renders the placement part of /v1/metadata.
func (s *Server) placementDoc(p *balancer.Placement) *assignor.Metadata {
	doc := &assignor.Metadata{
		Generation:             p.Generation,
		Self:                   s.rt.Self(),
		Partitioner:            s.opts.Partitioner.Name(),
		Partitions:             len(p.Tasks),
		Settings:               s.settings(p),
		Clients:                make([]assignor.MetadataClient, len(p.Members)),
		Tasks:                  make([]assignor.TaskPlacement, len(p.Tasks)),
		ProbingRebalanceNeeded: !p.ProbingDeadline.IsZero(),
		Quality:                p.Quality,
		CrossZone:              p.CrossZone,
	}
	if !p.ProbingDeadline.IsZero() {
		d := p.ProbingDeadline.UTC()
		doc.ProbingDeadline = &d
	}
	for i, m := range p.Members {
		doc.Clients[i] = assignor.MetadataClient{ID: m.ProcessID, Endpoint: m.Endpoint, Tags: m.Tags.Map(), Capacity: m.Capacity, Build: m.Build,
			Active: []int{}, Standby: []int{}, Warmup: []int{}}
		if doc.Clients[i].Tags == nil {
			doc.Clients[i].Tags = map[string]string{}
		}
	}
	ids := func(ms []int) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = p.Members[m].ProcessID
		}
		slices.Sort(out)
		return out
	}
	for task, r := range p.Tasks {
		td := assignor.TaskPlacement{Task: task, Standby: ids(r.Standbys), Warmup: ids(r.Warmups)}
		if r.Active != balancer.NoMember {
			td.Active = p.Members[r.Active].ProcessID
			doc.Clients[r.Active].Active = append(doc.Clients[r.Active].Active, task)
		}
		for _, m := range r.Standbys {
			doc.Clients[m].Standby = append(doc.Clients[m].Standby, task)
		}
		for _, m := range r.Warmups {
			doc.Clients[m].Warmup = append(doc.Clients[m].Warmup, task)
		}
		doc.Tasks[task] = td
	}
	return doc
}

// settings are the assignment settings p was planned with: the leader's,
// carried in the assignment (balancer.Placement.Settings), or, from a
// group that speaks an older wire version, this instance's own
// (Options.Settings) marked as such. The probing interval is always this
// instance's: the assignment does not carry it.
func (s *Server) settings(p *balancer.Placement) *assignor.MetadataSettings {
	own := s.opts.Settings
	if p.Settings == nil {
		if own == nil {
			return nil
		}
		st := *own
		st.Source = assignor.SettingsFromInstance
		st.RackAwareAssignmentTags = append(tags.Keys{}, own.RackAwareAssignmentTags...)
		return &st
	}
	st := &assignor.MetadataSettings{Source: assignor.SettingsFromLeader, Settings: *p.Settings}
	st.RackAwareAssignmentTags = append(tags.Keys{}, p.Settings.RackAwareAssignmentTags...)
	if own != nil {
		st.ProbingRebalanceIntervalMs = own.ProbingRebalanceIntervalMs
	}
	return st
}

// metadata answers GET /v1/metadata.
func (s *Server) metadata(w *statusWriter, r *http.Request) {
	if _, err := parseQuery(r.URL.RawQuery); err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	p, ok := s.placement(w)
	if !ok {
		return
	}
	doc := s.placementDoc(p)
	doc.Status = s.gatherStatus(r.Context(), p)
	writeJSON(w, http.StatusOK, doc)
}

// gatherStatus asks every member for its status, in parallel, each within
// StatusTimeout; a member that doesn't answer is reported not ready with
// the reason.
func (s *Server) gatherStatus(ctx context.Context, p *balancer.Placement) assignor.MetadataStatus {
	sts := make([]instanceStatus, len(p.Members))
	self := s.rt.Self()
	// The whole gathering, not each peer, is bounded by StatusTimeout, and
	// at most statusWorkers peers are asked at once: a large group neither
	// takes every forward slot nor makes the answer wait peer after peer.
	ctx, cancel := context.WithTimeout(ctx, s.opts.StatusTimeout)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(statusWorkers, cap(s.forwards), len(p.Members)) {
		wg.Go(func() {
			for i := range next {
				m := p.Members[i]
				if ctx.Err() != nil {
					sts[i] = instanceStatus{ID: m.ProcessID, Reason: fmt.Sprintf("not asked: no time left of the %v status timeout", s.opts.StatusTimeout)}
					continue
				}
				sts[i] = s.peerStatus(ctx, p, m)
			}
		})
	}
	for i, m := range p.Members {
		if m.ProcessID == self {
			sts[i] = s.localStatus()
			continue
		}
		next <- i
	}
	close(next)
	wg.Wait()
	doc := assignor.MetadataStatus{AsOf: time.Now().UTC().Format(time.RFC3339Nano),
		Clients: make([]assignor.MetadataClientStatus, len(sts)), Lags: []assignor.MetadataLag{}}
	for i, st := range sts {
		id := p.Members[i].ProcessID
		doc.Clients[i] = assignor.MetadataClientStatus{ID: id, Ready: st.Ready, Reason: st.Reason, CrossZoneBytes: st.CrossZoneBytes}
		lags := map[int32]int64{}
		streamTimes := map[int32]*int64{}
		for _, rs := range st.Replicas {
			if rs.Lag < 0 || rs.Task < 0 || int(rs.Task) >= len(p.Tasks) {
				continue
			}
			if l, ok := lags[rs.Task]; !ok || rs.Lag > l {
				lags[rs.Task] = rs.Lag
			}
			if rs.StreamTime != nil {
				streamTimes[rs.Task] = rs.StreamTime
			}
		}
		for task, lag := range lags {
			doc.Lags = append(doc.Lags, assignor.MetadataLag{Task: int(task), Client: id, Role: placementRole(p, task, i, st.Replicas), Lag: lag,
				StreamTime: streamTimes[task]})
		}
	}
	slices.SortFunc(doc.Lags, func(a, b assignor.MetadataLag) int {
		return cmp.Or(cmp.Compare(a.Task, b.Task), cmp.Compare(a.Client, b.Client))
	})
	return doc
}

// statusWorkers bounds the peers asked for their status at once.
const statusWorkers = 32

// placementRole is member's role for task in the placement, or, for a
// replica the placement doesn't list, the replica's own role.
func placementRole(p *balancer.Placement, task int32, member int, reps []ReplicaStatus) string {
	r := p.Tasks[task]
	switch {
	case r.Active == member:
		return string(RoleActive)
	case slices.Contains(r.Standbys, member):
		return string(RoleStandby)
	case slices.Contains(r.Warmups, member):
		return "warmup"
	}
	for _, rs := range reps {
		if rs.Task == task {
			return string(rs.Role)
		}
	}
	return string(RoleIdle)
}

func (s *Server) peerStatus(ctx context.Context, p *balancer.Placement, m balancer.Member) instanceStatus {
	down := func(reason string) instanceStatus {
		return instanceStatus{ID: m.ProcessID, Ready: false, Reason: reason}
	}
	a, err := s.forward(ctx, routeMetadata, m, p.Generation, "/v1/status", "", s.opts.StatusTimeout)
	if err != nil {
		msg := "unreachable"
		if fe, ok := err.(*forwardError); ok {
			msg += ": " + fe.words()
		}
		return down(msg)
	}
	if a.code != http.StatusOK {
		var eb errorBody
		msg := fmt.Sprintf("status answered %d", a.code)
		if json.Unmarshal(a.body, &eb) == nil && eb.Error != "" {
			msg += ": " + truncate(eb.Error)
		}
		return down(msg)
	}
	var st instanceStatus
	if err := json.Unmarshal(a.body, &st); err != nil {
		s.log.Warn("a peer's status does not decode", "peer", m.ProcessID, "err", err)
		return down("its status does not decode")
	}
	if st.ID != m.ProcessID {
		return down(fmt.Sprintf("its endpoint answers as instance %q", truncate(st.ID)))
	}
	return st
}
