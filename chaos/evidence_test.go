package chaos

import "testing"

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
