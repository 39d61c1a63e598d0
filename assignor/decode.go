package assignor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rackstream/rackstream/tags"
)

// DecodeInput decodes a scenario from JSON in either of two shapes:
//
//   - the scenario document of Input, where "tasks" is a count. Decoding is
//     strict: an unknown field is an error naming it, so that a typo such
//     as "num_standbys" does not pass silently;
//   - a /v1/metadata document (a Plan superset: "generation", "self",
//     clients with "endpoint", "status" with "lags"), where "tasks" is an
//     array. Its placement becomes the previous plan: each client's active,
//     standby and warmup tasks its previous roles, status.lags its lags.
//     The settings are its "settings" (Metadata.Settings: those the
//     placement was planned with); in a document without them, its own
//     top-level scenario fields when it has them, else num_standby_replicas
//     is the most standbys any task has and rack_aware_assignment_tags the
//     tags of quality.dimensions, in order.
//     Unknown fields are ignored: the document grows over time.
//
// Absent fields take their defaults (see Input). The result is not yet
// validated: Assign does that.
func DecodeInput(data []byte) (Input, error) {
	in, _, err := DecodeDocument(data)
	return in, err
}

// DecodeDocument decodes a scenario as DecodeInput does and, when data is a
// /v1/metadata document, also returns the placement it shows as a Plan:
// its tasks (a task in a hand-off has Active ""), its clients in id order
// with their roles and tags, its quality and probing flag. For a scenario
// document the plan is nil. WhatIf on this plan is the what-if of the live
// placement, which is what `rackstream assign --lose` computes for a
// metadata document and what /v1/whatif serves.
func DecodeDocument(data []byte) (Input, *Plan, error) {
	var probe struct {
		Tasks json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return Input{}, nil, fmt.Errorf("decode scenario: %w", err)
	}
	if t := bytes.TrimSpace(probe.Tasks); len(t) > 0 && t[0] == '[' {
		return decodeMetadata(data)
	}
	in, err := decodeScenario(data, len(probe.Tasks) > 0)
	return in, nil, err
}

// decodeScenario is DecodeInput for a scenario document; hasTasks says
// whether "tasks" is present at all.
func decodeScenario(data []byte, hasTasks bool) (Input, error) {
	type plain Input // no UnmarshalJSON: DisallowUnknownFields reaches the fields
	in := plain{Settings: DefaultSettings()}
	var raw struct {
		plain
		Clients []json.RawMessage `json:"clients"`
	}
	raw.plain = in
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Input{}, fmt.Errorf("decode scenario: %w", err)
	}
	if !hasTasks {
		return Input{}, fieldErr("tasks", "required")
	}
	if raw.Clients == nil {
		return Input{}, fieldErr("clients", "required")
	}
	out := Input(raw.plain)
	out.Clients = make([]Client, len(raw.Clients))
	type plainClient Client
	for i, rc := range raw.Clients {
		c := plainClient{Capacity: 1}
		dec := json.NewDecoder(bytes.NewReader(rc))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return Input{}, fmt.Errorf("decode scenario: clients[%d]: %w", i, err)
		}
		if c.Tags == nil {
			return Input{}, fieldErr("clients["+strconv.Itoa(i)+"].tags", "required (use {} for none)")
		}
		out.Clients[i] = Client(c)
	}
	return out, nil
}

// metadataDoc is a /v1/metadata document as decoded: Metadata, and the
// scenario's settings fields a hand-made document may carry at its top
// level, read when it has no "settings".
type metadataDoc struct {
	Metadata
	NumStandbyReplicas      *int     `json:"num_standby_replicas"`
	RackAwareAssignmentTags []string `json:"rack_aware_assignment_tags"`
	AcceptableRecoveryLag   *int64   `json:"acceptable_recovery_lag"`
	MaxWarmupReplicas       *int     `json:"max_warmup_replicas"`
}

func decodeMetadata(data []byte) (Input, *Plan, error) {
	var doc metadataDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return Input{}, nil, fmt.Errorf("decode metadata document: %w", err)
	}
	in, err := metadataInput(&doc)
	if err != nil {
		return Input{}, nil, err
	}
	return in, metadataPlan(&doc, &in), nil
}

// metadataPlan is the placement a metadata document shows, tasks ascending.
func metadataPlan(doc *metadataDoc, in *Input) *Plan {
	p := &Plan{
		Tasks:                  slices.Clone(doc.Tasks),
		Clients:                make([]ClientPlacement, len(in.Clients)),
		ProbingRebalanceNeeded: doc.ProbingRebalanceNeeded,
		Quality:                doc.Quality,
		CrossZone:              doc.CrossZone,
	}
	slices.SortFunc(p.Tasks, func(a, b TaskPlacement) int { return a.Task - b.Task })
	for i, c := range in.Clients {
		p.Clients[i] = ClientPlacement{ID: c.ID, Tags: c.Tags,
			Active:  sortedInts(c.PreviousActive),
			Standby: sortedInts(c.PreviousStandby),
			Warmup:  sortedInts(c.PreviousWarmup)}
	}
	slices.SortFunc(p.Clients, func(a, b ClientPlacement) int { return strings.Compare(a.ID, b.ID) })
	return p
}

func sortedInts(ts []int) []int {
	out := append([]int{}, ts...)
	slices.Sort(out)
	return out
}

// metadataInput is the scenario of a metadata document.
func metadataInput(doc *metadataDoc) (Input, error) {
	in := Input{Settings: DefaultSettings(), Clients: make([]Client, len(doc.Clients))}
	in.RackAwareAssignmentTags = doc.RackAwareAssignmentTags
	if st := doc.Settings; st != nil {
		// The settings the placement was made with: nothing to infer.
		doc.NumStandbyReplicas, doc.AcceptableRecoveryLag, doc.MaxWarmupReplicas = &st.NumStandbyReplicas, &st.AcceptableRecoveryLag, &st.MaxWarmupReplicas
		in.RackAwareAssignmentTags = append(tags.Keys{}, st.RackAwareAssignmentTags...)
	}
	if cz := doc.CrossZone; cz != nil && cz.RackAwareness != nil {
		ra := *cz.RackAwareness
		in.RackAwareness = &ra
	}
	if doc.AcceptableRecoveryLag != nil {
		in.AcceptableRecoveryLag = *doc.AcceptableRecoveryLag
	}
	if doc.MaxWarmupReplicas != nil {
		in.MaxWarmupReplicas = *doc.MaxWarmupReplicas
	}
	if in.RackAwareAssignmentTags == nil {
		for _, d := range doc.Quality.Dimensions {
			in.RackAwareAssignmentTags = append(in.RackAwareAssignmentTags, d.Tag)
		}
	}
	byID := make(map[string]int, len(doc.Clients))
	for i, c := range doc.Clients {
		if c.ID == "" {
			return Input{}, fieldErr("clients["+strconv.Itoa(i)+"].id", "required")
		}
		if j, dup := byID[c.ID]; dup {
			return Input{}, fieldErr("clients["+strconv.Itoa(i)+"].id", "duplicate id %q (also clients[%d])", c.ID, j)
		}
		byID[c.ID] = i
		in.Clients[i] = Client{ID: c.ID, Tags: c.Tags, Capacity: max(1, c.Capacity)}
	}
	maxStandbys := 0
	client := func(field, id string) (*Client, error) {
		i, ok := byID[id]
		if !ok {
			return nil, fieldErr(field, "unknown client %q (not in clients)", id)
		}
		return &in.Clients[i], nil
	}
	seen := make(map[int]int, len(doc.Tasks))
	for i, tp := range doc.Tasks {
		f := "tasks[" + strconv.Itoa(i) + "]"
		if tp.Task < 0 || tp.Task >= MaxTasks {
			return Input{}, fieldErr(f+".task", "must be between 0 and %d, got %d", MaxTasks-1, tp.Task)
		}
		if j, dup := seen[tp.Task]; dup {
			return Input{}, fieldErr(f+".task", "task %d listed twice (also tasks[%d])", tp.Task, j)
		}
		seen[tp.Task] = i
		in.Tasks = max(in.Tasks, tp.Task+1)
		maxStandbys = max(maxStandbys, len(tp.Standby))
		if tp.Active != "" { // a task in a cooperative hand-off has none
			c, err := client(f+".active", tp.Active)
			if err != nil {
				return Input{}, err
			}
			c.PreviousActive = append(c.PreviousActive, tp.Task)
		}
		for j, id := range tp.Standby {
			c, err := client(f+".standby["+strconv.Itoa(j)+"]", id)
			if err != nil {
				return Input{}, err
			}
			c.PreviousStandby = append(c.PreviousStandby, tp.Task)
		}
		for j, id := range tp.Warmup {
			c, err := client(f+".warmup["+strconv.Itoa(j)+"]", id)
			if err != nil {
				return Input{}, err
			}
			c.PreviousWarmup = append(c.PreviousWarmup, tp.Task)
		}
	}
	in.NumStandbyReplicas = maxStandbys
	if doc.NumStandbyReplicas != nil {
		in.NumStandbyReplicas = *doc.NumStandbyReplicas
	}
	for i, l := range doc.Status.Lags {
		if l.Task < 0 || l.Task >= in.Tasks {
			return Input{}, fieldErr("status.lags["+strconv.Itoa(i)+"].task", "task %d out of range [0, %d)", l.Task, in.Tasks)
		}
		c, err := client("status.lags["+strconv.Itoa(i)+"].client", l.Client)
		if err != nil {
			return Input{}, err
		}
		if c.Lags == nil {
			c.Lags = make(map[int]int64)
		}
		c.Lags[l.Task] = l.Lag
	}
	return in, nil
}
