package main

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/processor"
)

// Handlers are tested without Kafka through the TestDriver, on the same
// decode, retry and dead-letter path the runtime uses.
func TestClickStats(t *testing.T) {
	topo, stats := Topology("clickstats", "clicks", "click-stats")
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 12})
	if err != nil {
		t.Fatal(err)
	}
	pipe := func(user, value string) {
		r := &kgo.Record{Topic: "clicks", Partition: -1, Key: []byte(user)}
		if value != "" {
			r.Value = []byte(value)
		}
		if err := d.PipeRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	pipe("ann", `{"page":"/home","ms":120}`)
	pipe("ann", `{"page":"/cart","ms":30}`)
	pipe("bob", `{"page":"/home","ms":5}`)
	pipe("bob", `{"page":"/x","ms":-1}`) // permanent error: dead-lettered
	pipe("cid", `{"page":`)              // does not decode: dead-lettered
	pipe("bob", "")                      // tombstone: bob forgotten

	if s, _, _ := processor.Lookup(d, stats, "ann"); s != (Stats{Clicks: 2, TotalMS: 150, LastPage: "/cart"}) {
		t.Errorf("ann: %+v", s)
	}
	if _, found, _ := processor.Lookup(d, stats, "bob"); found {
		t.Error("bob still in the store after a tombstone")
	}
	if n := len(d.DeadLetters()); n != 2 {
		t.Errorf("%d dead letters, want 2", n)
	}
	if n := len(d.Emitted("click-stats")); n != 4 {
		t.Errorf("%d updates emitted, want 4 (ann twice, bob once, bob's tombstone)", n)
	}
}
