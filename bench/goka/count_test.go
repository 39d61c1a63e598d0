package gokabench

import (
	"fmt"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// TestGokaAndRackstreamCountEveryKeyAlike runs both jobs over the same few
// hundred records on one cluster and checks that each ends with every key's
// count equal to the number of records produced for it, and its offsets
// committed to the end: the benchmarks measure runs of these same jobs, so
// a broken one cannot pass for a fast one.
func TestGokaAndRackstreamCountEveryKeyAlike(t *testing.T) {
	const records, keys = 600, 40
	c := kafkatest.New(t)
	input := c.Name("goka-check-in")
	createTopics(t, c, nil, input)
	want := produceInput(t, c, input, records, keys)

	adm := c.Admin()
	for _, s := range []system{gokaSystem, rackstreamSystem} {
		t.Run(s.name, func(t *testing.T) {
			in := s.start(t, c, c.Name(s.name+"-check"), input, t.TempDir())
			waitFor(t, in, 30*time.Second, 20*time.Millisecond,
				func() string {
					return fmt.Sprintf("%s on %s handled %d of %d records", s.name, c.Kind(), in.handled(), records)
				},
				func() bool { return in.handled() >= records })
			waitFor(t, in, 30*time.Second, 50*time.Millisecond,
				func() string {
					return fmt.Sprintf("%s on %s: offsets of group %s not committed to the end", s.name, c.Kind(), in.group())
				},
				func() bool { return kafkatest.CommittedThrough(adm, in.group(), input) })
			for k, n := range want {
				got, found, err := in.count(k)
				if err != nil || !found || got != n {
					t.Errorf("%s on %s: count of %s = %d (found %v, err %v), want %d", s.name, c.Kind(), k, got, found, err, n)
				}
			}
			if err := in.stop(); err != nil {
				t.Errorf("%s on %s: stop: %v", s.name, c.Kind(), err)
			}
		})
	}
}
