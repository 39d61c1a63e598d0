package cluster

import (
	"encoding/json"
	"testing"
	"time"
)

// The probe's order check: a key's value never decreases, and no answer is
// behind the min_position it was asked for; a decrease at a later position
// is a replay unless the probe is strict.
func TestProbeOrderCheck(t *testing.T) {
	type read struct {
		value  string // the answer's JSON value
		pos    int64
		minPos int64
	}
	for _, tc := range []struct {
		name      string
		strict    bool
		reads     []read
		backwards int
		replayed  int
	}{
		{name: "values rising", reads: []read{{`1`, 10, 0}, {`2`, 11, 10}, {`"3"`, 12, 11}}},
		{name: "the same value again", reads: []read{{`4`, 10, 0}, {`4`, 10, 10}}},
		{name: "a lower value at the same position", reads: []read{{`5`, 10, 0}, {`4`, 10, 10}}, backwards: 1},
		{name: "a lower value at an earlier position", reads: []read{{`5`, 10, 0}, {`4`, 9, 0}}, backwards: 1},
		{name: "a position behind min_position", reads: []read{{`5`, 10, 0}, {`6`, 9, 10}}, backwards: 1},
		{name: "a replay at a later position", reads: []read{{`5`, 10, 0}, {`3`, 12, 10}, {`5`, 14, 12}}, replayed: 1},
		{name: "a replay, strict", strict: true, reads: []read{{`5`, 10, 0}, {`3`, 12, 10}}, backwards: 1},
		{name: "a value that is no number", reads: []read{{`5`, 10, 0}, {`{"a":1}`, 11, 10}, {`6`, 12, 11}}},
		{name: "a value that is no number behind min_position", reads: []read{{`5`, 10, 0}, {`{"a":1}`, 8, 10}}, backwards: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &AvailabilityProbe{order: map[string]*keyOrder{}}
			r.SetStrict(tc.strict)
			for _, rd := range tc.reads {
				pos := rd.pos
				r.check("k", rd.minPos, answer{Value: json.RawMessage(rd.value), Position: &pos}, time.Now())
			}
			rep := r.Report()
			if len(rep.Backwards) != tc.backwards || rep.Replayed != tc.replayed {
				t.Fatalf("backwards %v, replayed %d; want %d backwards, %d replayed", rep.Backwards, rep.Replayed, tc.backwards, tc.replayed)
			}
			if got := r.minPosition("k"); got < tc.reads[0].pos {
				t.Fatalf("min_position passed back %d, want at least %d", got, tc.reads[0].pos)
			}
		})
	}
}
