package query

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/rackstream/rackstream/assignor"
)

// TestMetadataShowsTheLeadersCrossZoneTraffic: the cross-zone traffic the
// leader computed travels with the placement and /v1/metadata shows it,
// and the assignor reads it back as the plan's.
func TestMetadataShowsTheLeadersCrossZoneTraffic(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	a := c.get(c.nodes[0], "/v1/metadata")
	if _, ok := a.json["cross_zone"]; ok || a.code != http.StatusOK {
		t.Fatalf("a placement without racks shows cross_zone: %s", a)
	}
	cz := &assignor.CrossZone{Strategy: assignor.StrategyMinTraffic, Unknown: []string{}, Total: 4, Fetch: 4,
		Tasks: make([]assignor.TaskCrossZone, len(c.p.Tasks))}
	for i := range cz.Tasks {
		cz.Tasks[i] = assignor.TaskCrossZone{Task: i, ActiveLocal: true, StandbyLocal: []bool{true}}
	}
	cz.Tasks[2] = assignor.TaskCrossZone{Task: 2, Bytes: 4, Fetch: 4, StandbyLocal: []bool{false}}
	lp := *c.p
	lp.CrossZone = cz
	c.nodes[0].rt.mu.Lock()
	c.nodes[0].rt.p = &lp
	c.nodes[0].rt.mu.Unlock()
	a = c.get(c.nodes[0], "/v1/metadata")
	var doc assignor.Metadata
	if err := json.Unmarshal(a.body, &doc); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(doc.CrossZone, cz) {
		t.Fatalf("cross_zone %+v; want %+v", doc.CrossZone, cz)
	}
	_, plan, err := assignor.DecodeDocument(a.body)
	if err != nil || plan == nil || !reflect.DeepEqual(plan.CrossZone, cz) {
		t.Fatalf("DecodeDocument: plan cross-zone %+v, err %v", plan, err)
	}
}
