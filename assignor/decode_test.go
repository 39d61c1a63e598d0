package assignor

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestDecodeInputAppliesDefaults(t *testing.T) {
	in, err := DecodeInput([]byte(`{"tasks": 3, "clients": [{"id": "a", "tags": {"zone": "z"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if in.AcceptableRecoveryLag != 10000 || in.MaxWarmupReplicas != 2 || in.Clients[0].Capacity != 1 || in.NumStandbyReplicas != 0 {
		t.Fatalf("defaults not applied: %+v", in)
	}
	// json.Unmarshal applies the same defaults.
	var viaJSON Input
	if err := json.Unmarshal([]byte(`{"tasks": 3, "clients": [{"id": "a", "tags": {"zone": "z"}}]}`), &viaJSON); err != nil {
		t.Fatal(err)
	}
	if viaJSON.AcceptableRecoveryLag != 10000 || viaJSON.MaxWarmupReplicas != 2 || viaJSON.Clients[0].Capacity != 1 {
		t.Fatalf("json.Unmarshal defaults not applied: %+v", viaJSON)
	}
	// Explicit values win, including 0 for the lag.
	in, err = DecodeInput([]byte(`{"tasks": 1, "acceptable_recovery_lag": 0, "max_warmup_replicas": 5, "clients": [{"id": "a", "tags": {}, "capacity": 4, "lags": {"0": 7}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if in.AcceptableRecoveryLag != 0 || in.MaxWarmupReplicas != 5 || in.Clients[0].Capacity != 4 || in.Clients[0].Lags[0] != 7 {
		t.Fatalf("explicit values lost: %+v", in)
	}
}

func TestDecodeInputIsStrictAboutScenarios(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"unknown top-level field", `{"tasks": 1, "num_standbys": 2, "clients": []}`, `unknown field "num_standbys"`},
		{"unknown client field", `{"tasks": 1, "clients": [{"id": "a", "tags": {}, "capacty": 2}]}`, `clients[0]: json: unknown field "capacty"`},
		{"tasks missing", `{"clients": [{"id": "a", "tags": {}}]}`, "tasks: required"},
		{"clients missing", `{"tasks": 1}`, "clients: required"},
		{"tags missing", `{"tasks": 1, "clients": [{"id": "a"}]}`, "clients[0].tags: required"},
		{"wrong type", `{"tasks": "many", "clients": []}`, "decode scenario"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeInput([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestDecodeInputReadsMetadataDocuments(t *testing.T) {
	doc := `{"generation": 3, "self": "n2", "unknown_future_field": {"x": 1},
	  "clients": [{"id": "n1", "endpoint": "h1:80", "tags": {"zone": "a", "cluster": "k"}, "active": [0], "standby": [1], "warmup": []},
	              {"id": "n2", "endpoint": "h2:80", "tags": {"zone": "b", "cluster": "k"}, "capacity": 2, "active": [1], "standby": [0], "warmup": [2]}],
	  "tasks": [{"task": 0, "active": "n1", "standby": ["n2"], "warmup": []},
	            {"task": 1, "active": "n2", "standby": ["n1"], "warmup": []},
	            {"task": 2, "active": "", "standby": [], "warmup": ["n2"]}],
	  "quality": {"dimensions": [{"tag": "cluster", "values": 1, "tasks_repeating": 0}, {"tag": "zone", "values": 2, "tasks_repeating": 0}]},
	  "status": {"lags": [{"task": 1, "client": "n1", "role": "standby", "lag": 12}, {"task": 2, "client": "n2", "role": "warmup", "lag": 900}]}}`
	in, err := DecodeInput([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if in.Tasks != 3 || in.NumStandbyReplicas != 1 || !slices.Equal(in.RackAwareAssignmentTags, []string{"cluster", "zone"}) {
		t.Fatalf("settings: %+v", in)
	}
	n1, n2 := in.Clients[0], in.Clients[1]
	if !slices.Equal(n1.PreviousActive, []int{0}) || !slices.Equal(n1.PreviousStandby, []int{1}) || n1.Lags[1] != 12 {
		t.Fatalf("n1 = %+v", n1)
	}
	if !slices.Equal(n2.PreviousActive, []int{1}) || !slices.Equal(n2.PreviousWarmup, []int{2}) || n2.Lags[2] != 900 || n2.Capacity != 2 {
		t.Fatalf("n2 = %+v", n2)
	}
	// The replay is sticky: the same actives come back.
	p, err := Assign(in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tasks[0].Active != "n1" || p.Tasks[1].Active != "n2" {
		t.Fatalf("replay moved actives: %s", describe(p))
	}

	var fe *FieldError
	_, err = DecodeInput([]byte(`{"tasks": [{"task": 0, "active": "n9"}], "clients": [{"id": "n1", "tags": {}}]}`))
	if !errors.As(err, &fe) || fe.Field != "tasks[0].active" {
		t.Fatalf("unknown active: err = %v", err)
	}
	_, err = DecodeInput([]byte(`{"tasks": [{"task": 0, "active": "n1"}, {"task": 0, "active": "n1"}], "clients": [{"id": "n1", "tags": {}}]}`))
	if !errors.As(err, &fe) || fe.Field != "tasks[1].task" {
		t.Fatalf("task listed twice: err = %v", err)
	}
	_, err = DecodeInput([]byte(`{"tasks": [{"task": 0, "active": "n1"}], "clients": [{"id": "n1", "tags": {}}], "status": {"lags": [{"task": 4, "client": "n1", "lag": 1}]}}`))
	if !errors.As(err, &fe) || fe.Field != "status.lags[0].task" {
		t.Fatalf("lag for a task beyond the document: err = %v", err)
	}
}
