package balancer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/tags"
)

// TestDecodeAssignmentRejectsBadSettings: the leader's settings in a
// version-4 placement are checked like the configuration checks them.
func TestDecodeAssignmentRejectsBadSettings(t *testing.T) {
	enc := func(mut func(*assignor.Settings)) []byte {
		a := goldenAssignmentV4()
		s := *a.Placement.Settings
		mut(&s)
		a.Placement.Settings = &s
		return a.AppendTo(nil)
	}
	for _, tc := range []struct {
		name  string
		in    []byte
		field string
	}{
		{"no warmup allowed", enc(func(s *assignor.Settings) { s.MaxWarmupReplicas = 0 }), "max_warmup_replicas"},
		{"standbys beyond int32", enc(func(s *assignor.Settings) { s.NumStandbyReplicas = 1 << 31 }), "num_standby_replicas"},
		{"six rack-aware tags", enc(func(s *assignor.Settings) { s.RackAwareAssignmentTags = tags.Keys{"a", "b", "c", "d", "e", "f"} }), "rack_aware_assignment_tags"},
		{"an empty rack-aware tag", enc(func(s *assignor.Settings) { s.RackAwareAssignmentTags = tags.Keys{""} }), "rack_aware_assignment_tags"},
		{"truncated settings", func() []byte { b := enc(func(*assignor.Settings) {}); return b[:len(b)-3] }(), "rack_aware_assignment_tags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeAssignment(tc.in, LatestVersion, "p2")
			if err == nil || !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %v; want ErrDecode naming %q", err, tc.field)
			}
		})
	}
}

// TestThePlacementRecordCarriesTheSettings: a published placement (the
// path of large groups) carries the settings too.
func TestThePlacementRecordCarriesTheSettings(t *testing.T) {
	p := goldenAssignmentV4().Placement
	v, crc := encodePlacementRecord(p, Version4)
	got, err := decodePlacementRecord(v, LatestVersion, p.Generation, crc, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Settings, p.Settings) {
		t.Fatalf("settings %+v, want %+v", got.Settings, p.Settings)
	}
	v3, crc3 := encodePlacementRecord(p, Version3)
	if got, err := decodePlacementRecord(v3, LatestVersion, p.Generation, crc3, 1<<20); err != nil || got.Settings != nil {
		t.Fatalf("a version-3 placement decodes with settings %+v (%v); want none", got.Settings, err)
	}
}

// TestEveryMemberKnowsTheLeadersSettings: the members of one generation
// see the settings the leader planned with, whatever their own say.
func TestEveryMemberKnowsTheLeadersSettings(t *testing.T) {
	o := newOffsets()
	s := newSim(t, 6)
	for i := range 3 {
		st := simSettings(fmt.Sprintf("p%d", i), zoneCluster(i), o)
		st.Placement.NumStandbyReplicas, st.Placement.AcceptableRecoveryLag, st.Placement.MaxWarmupReplicas = i, int64(100*i), 1+i
		s.add(fmt.Sprintf("m%d", i), st)
	}
	s.settle("m1", 3)
	want := &assignor.Settings{NumStandbyReplicas: 1, AcceptableRecoveryLag: 100, MaxWarmupReplicas: 2, RackAwareAssignmentTags: tags.Keys{"zone", "cluster"}}
	for _, m := range s.members {
		p := m.b.Placement()
		if p == nil || !reflect.DeepEqual(p.Settings, want) {
			t.Fatalf("%s sees settings %+v; want the leader m1's %+v", m.id, p.Settings, want)
		}
	}
}
