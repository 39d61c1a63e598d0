package chaos

import (
	"testing"

	"github.com/rackstream/rackstream/internal/cluster"
)

// The evidence's filter of assignment log lines (no broker needed).
func TestActiveInReadsAssignmentLines(t *testing.T) {
	tasks := map[int32]bool{11: true}
	for _, tc := range []struct {
		line string
		want bool
	}{
		{`{"msg":"assignment","generation":3,"active":[1,7,11],"new":[11],"standby":[4,10]}`, true},
		{`{"msg":"assignment","generation":3,"active":[1,7],"new":null,"standby":[11]}`, false},
		{`{"msg":"assignment","generation":3,"active":[],"standby":[11]}`, false},
		{`{"msg":"placement","active":[11]}`, false},
	} {
		if got := activeIn(tc.line, tasks); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.line, got, tc.want)
		}
	}
}

func TestKnownSignatureIsOnlyTheZombiesLostUpdate(t *testing.T) {
	const n = 129
	zombie := cluster.Sequences{Lost: 1, Duplicated: 1, OutOfOrder: 1, Missing: []string{"key-3@129"}}
	for _, tc := range []struct {
		name  string
		short map[string]string
		seqs  cluster.Sequences
		want  bool
	}{
		{"one key one short, its last count missing, one count twice", map[string]string{"key-3": "128"}, zombie, true},
		{"nothing short", nil, cluster.Sequences{}, false},
		{"two short", map[string]string{"key-3": "127"}, cluster.Sequences{Lost: 2, Duplicated: 2, Missing: []string{"key-3@128", "key-3@129"}}, false},
		{"counted past n", map[string]string{"key-3": "130"}, zombie, false},
		{"a gap elsewhere", map[string]string{"key-3": "128"}, cluster.Sequences{Lost: 1, Duplicated: 1, Missing: []string{"key-3@50"}}, false},
		{"no duplicate: a plain loss", map[string]string{"key-3": "128"}, cluster.Sequences{Lost: 1, Missing: []string{"key-3@129"}}, false},
		{"garbage in the output", map[string]string{"key-3": "128"}, cluster.Sequences{Lost: 1, Duplicated: 1, Garbage: 1, Missing: []string{"key-3@129"}}, false},
	} {
		if got := knownSignature(tc.short, tc.seqs, n); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
