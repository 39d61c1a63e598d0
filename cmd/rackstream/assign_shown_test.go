package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAssignTableShortensLongValues: a scenario's ids are shown shortened in
// the table, so that one long id does not widen every row of it.
func TestAssignTableShortensLongValues(t *testing.T) {
	long := "n1-" + strings.Repeat("x", 10<<10)
	scenario, _ := json.Marshal(map[string]any{"tasks": 4, "num_standby_replicas": 1,
		"rack_aware_assignment_tags": []string{"zone"},
		"clients": []map[string]any{
			{"id": long, "tags": map[string]string{"zone": "a"}},
			{"id": "n2", "tags": map[string]string{"zone": "b"}},
		}})
	for _, args := range [][]string{
		{"--format", "table"},
		{"--format", "table", "--lose", "zone=a"},
		{"--format", "table", "--lose", long},
	} {
		code, out, errs := runCLI(t, string(scenario), args...)
		if code != 0 {
			t.Fatalf("%.40q: exit %d: %.300s", args, code, errs)
		}
		if len(out) > 8<<10 {
			t.Errorf("%.40q: the table is %d bytes: a 10 KB id is shown whole", args, len(out))
		}
		if !strings.Contains(out, "more bytes)") {
			t.Errorf("%.40q: the table does not say the id was shortened:\n%.500s", args, out)
		}
	}
}
