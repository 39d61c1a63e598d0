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

// zonedReader is a fakeReader that counts cross-zone bytes.
type zonedReader struct {
	*fakeReader
	zb assignor.ZoneBytes
}

func (z zonedReader) CrossZoneBytes() assignor.ZoneBytes { return z.zb }

// TestStatusShowsEachInstancesCrossZoneBytes: /v1/metadata's status shows
// the bytes each instance that counts them exchanged with brokers of other
// racks, gathered from its peers; an instance that does not count shows
// none.
func TestStatusShowsEachInstancesCrossZoneBytes(t *testing.T) {
	c := newCluster(t, clusterOpts{tweak: func(i int, o *Options) {
		if i < 2 {
			o.Reader = zonedReader{o.Reader.(*fakeReader), assignor.ZoneBytes{Read: uint64(100 * (i + 1)), Write: 7, UnknownRead: 3}}
		}
	}})
	a := c.get(c.nodes[2], "/v1/metadata")
	var doc assignor.Metadata
	if err := json.Unmarshal(a.body, &doc); err != nil || a.code != http.StatusOK {
		t.Fatalf("%s: %v", a, err)
	}
	for i, st := range doc.Status.Clients {
		switch {
		case i < 2 && (st.CrossZoneBytes == nil || *st.CrossZoneBytes != assignor.ZoneBytes{Read: uint64(100 * (i + 1)), Write: 7, UnknownRead: 3}):
			t.Errorf("%s: cross-zone bytes %+v", st.ID, st.CrossZoneBytes)
		case i == 2 && st.CrossZoneBytes != nil:
			t.Errorf("%s counts nothing but shows %+v", st.ID, st.CrossZoneBytes)
		}
	}
}
