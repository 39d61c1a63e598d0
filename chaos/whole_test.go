package chaos

import (
	"slices"
	"testing"

	"github.com/rackstream/rackstream/harness/cluster"
)

// How many rebalances a placement may take to become whole once every
// member is back (waitWhole's rule).
//
// A plan made when all six are members again hands tasks over
// cooperatively: the old owners give them up in that generation, the
// follow-up rebalance (one more generation) gives them to the new ones.
// So the placement is whole at most one generation after the first one
// with every member.
//
// Unless that plan, or a later one, defers a move until a replica catches
// up: the assignor moves an active only to a client caught up on the task
// (a checkpoint within acceptable.recovery.lag of the changelog end), so
// a member back with no state for the task it should take (after a broker
// kill, members rejoin one by one, and the plan made before the last of
// them was back spread their tasks over the others) gets a warmup, or
// keeps a standby it is not yet caught up on as a probe trigger, and the
// plan has a probing deadline. Once that replica catches up, its member
// asks for a probing rebalance; that plan takes the active from its owner
// and the follow-up hands it over. The probe's rebalance may come after
// the deferring plan's own follow-up or merge with it, so a plan with a
// probing deadline at generation g may leave the placement whole only at
// g+3 (g+1 the follow-up, g+2 the probe's plan, g+3 its follow-up).
// Such a chain was seen in CI (scenario broker: every member back at
// generation 8, whose plan gave one member a warmup and a probing
// deadline; the warmup caught up 0.3 s later, the probe merged with the
// follow-up at 9, the hand-off completed at 10). Each extra generation
// must be accounted for by such a plan: a rebalance storm, or a probe
// asked for nothing, still fails the check.

// deferringGenerations returns the generations, ascending and each once,
// whose placement an instance logged (its "placement" lines in logs) with
// a probing deadline: plans with moves that wait for a replica to catch up.
func deferringGenerations(logs string) []int32 {
	var out []int32
	for _, l := range cluster.JSONLogLines(logs, "placement") {
		g, ok := l["generation"].(float64)
		if _, deferred := l["probing_deadline"]; ok && deferred {
			out = append(out, int32(g))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// wholeBy returns the latest generation by which the placement may be
// whole when every member was back at generation full and it was whole at
// generation whole, given the generations whose plans deferred moves
// (deferringGenerations); deferred is the last of those counted (at or
// after full, before whole), or -1.
func wholeBy(full, whole int32, deferring []int32) (limit, deferred int32) {
	limit, deferred = full+1, -1
	for _, g := range deferring {
		if g >= full && g < whole {
			limit, deferred = max(limit, g+3), g
		}
	}
	return limit, deferred
}

// The rule's arithmetic and the log filter (no broker needed).
func TestWholeByCountsDeferredMoves(t *testing.T) {
	for _, tc := range []struct {
		name              string
		full, whole       int32
		deferring         []int32
		limit, deferredAt int32
	}{
		{"whole at once", 8, 8, nil, 9, -1},
		{"a cooperative follow-up", 8, 9, nil, 9, -1},
		{"two rebalances, no plan deferred a move", 8, 10, nil, 9, -1},
		// CI's case: generation 8's plan gave a warmup.
		{"a warmup at the first full generation", 8, 10, []int32{8}, 11, 8},
		{"a plan before every member was back deferred moves", 8, 10, []int32{7}, 9, -1},
		{"the last deferring plan counts", 8, 12, []int32{7, 8, 10}, 13, 10},
		{"a deferring plan at or after whole does not count", 8, 9, []int32{9, 10}, 9, -1},
	} {
		limit, at := wholeBy(tc.full, tc.whole, tc.deferring)
		if limit != tc.limit || at != tc.deferredAt {
			t.Errorf("%s: wholeBy(%d, %d, %v) = %d, %d; want %d, %d", tc.name, tc.full, tc.whole, tc.deferring, limit, at, tc.limit, tc.deferredAt)
		}
	}

	logs := `{"msg":"placement","generation":7,"members":4,"probing_deadline":"2026-12-03T19:46:52.98Z"}
{"msg":"assignment","generation":8,"warmup":[3]}
{"msg":"placement","generation":8,"members":6,"probing_deadline":"2026-12-03T19:46:54.529Z"}
{"msg":"placement","generation":8,"members":6,"probing_deadline":"2026-12-03T19:46:54.529Z"}
{"msg":"placement","generation":9,"members":6}
not json
{"msg":"placement","generation":10,"members":6}
`
	if got, want := deferringGenerations(logs), []int32{7, 8}; !slices.Equal(got, want) {
		t.Errorf("deferringGenerations = %v, want %v", got, want)
	}
}
