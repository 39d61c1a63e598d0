package processor

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/codec"
)

type offsets = map[string]map[int32]int64

func TestPurgeScheduleDeletesBelowNewCommittedOffsetsOncePerInterval(t *testing.T) {
	start := time.Unix(1000, 0)
	const topic = "app-x-repartition"
	steps := []struct {
		name      string
		at        time.Duration // after start
		committed offsets
		want      offsets // nil: nothing to purge
		fails     bool    // the purge fails: nothing is recorded as deleted
	}{
		{"not due within the first interval", 29 * time.Second, offsets{topic: {0: 10, 1: 20}}, nil, false},
		{"due an interval after the start", 30 * time.Second, offsets{topic: {0: 10, 1: 20}}, offsets{topic: {0: 10, 1: 20}}, false},
		{"not due again within the interval", 59 * time.Second, offsets{topic: {0: 15, 1: 25}}, nil, false},
		{"only the partitions that moved on", 60 * time.Second, offsets{topic: {0: 15, 1: 20}}, offsets{topic: {0: 15}}, true},
		{"a failed purge is asked again", 90 * time.Second, offsets{topic: {0: 15, 1: 20}}, offsets{topic: {0: 15}}, false},
		{"nothing new: nothing asked", 120 * time.Second, offsets{topic: {0: 15, 1: 20}}, nil, false},
		{"no committed offset yet, or none past 0", 150 * time.Second, offsets{topic: {0: 15, 1: 20, 2: 0, 3: -1}}, nil, false},
		{"a partition that came back", 180 * time.Second, offsets{topic: {0: 15, 1: 20, 5: 7}}, offsets{topic: {5: 7}}, false},
	}
	p := newPurgeSchedule(30*time.Second, start)
	for _, s := range steps {
		got := p.due(start.Add(s.at), s.committed)
		if !equalOffsets(got, s.want) {
			t.Fatalf("%s: due = %v, want %v", s.name, got, s.want)
		}
		if got != nil && !s.fails {
			p.done(got)
		}
	}
}

func TestPurgeScheduleWithAZeroIntervalPurgesAfterEveryCommit(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newPurgeSchedule(0, now)
	for i := int64(1); i <= 3; i++ {
		got := p.due(now, offsets{"r": {0: i}})
		if !equalOffsets(got, offsets{"r": {0: i}}) {
			t.Fatalf("commit %d: due = %v", i, got)
		}
		p.done(got)
	}
}

func equalOffsets(a, b offsets) bool {
	return maps.EqualFunc(a, b, func(x, y map[int32]int64) bool { return maps.Equal(x, y) })
}

func TestRepartitionTopicsAreCreatedWithKafkaStreamsSettings(t *testing.T) {
	want := map[string]string{"cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": "52428800", "message.timestamp.type": "CreateTime"}
	for _, rf := range []int16{-1, 1, 3} {
		got := map[string]string{}
		for k, v := range repartitionTopicConfigs(rf) {
			got[k] = *v
		}
		w := maps.Clone(want)
		if rf == 3 {
			w["min.insync.replicas"] = "2"
		}
		if !maps.Equal(got, w) {
			t.Errorf("replication factor %d: configs %v, want %v", rf, got, w)
		}
	}
}

func TestPartitionCountsCoverTheRepartitionTopics(t *testing.T) {
	ins := []TopicCount{{"orders", 4}}
	if n, err := checkCounts(ins, nil, nil, []TopicCount{{"app-x-repartition", -1}}); err != nil || n != 4 {
		t.Errorf("a missing repartition topic: %d, %v; want 4 tasks (it is created)", n, err)
	}
	if n, err := checkCounts(ins, nil, nil, []TopicCount{{"app-x-repartition", 4}}); err != nil || n != 4 {
		t.Errorf("a repartition topic with the inputs' count: %d, %v", n, err)
	}
	_, err := checkCounts(ins, nil, []TopicCount{{"app-s-changelog", 4}}, []TopicCount{{"app-x-repartition", 3}})
	var pce *PartitionCountError
	if !errors.As(err, &pce) {
		t.Fatalf("a repartition topic with 3 partitions for 4 tasks: %v, want a *PartitionCountError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "orders=4") || !strings.Contains(msg, "repartition topics app-x-repartition=3") {
		t.Errorf("error %q does not name every topic and count", msg)
	}
}

func TestRepartitionDeclarationMistakes(t *testing.T) {
	noop := func(*Context, string, string) error { return nil }
	tests := []struct {
		name    string
		declare func(t *Topology)
		want    string
	}{
		{"a bad name", func(t *Topology) {
			NewInput(t, "in", codec.String(), codec.String(), noop)
			NewRepartition(t, "by country", codec.String(), codec.String(), noop)
		}, `repartition "by country": a name is letters`},
		{"a name declared twice", func(t *Topology) {
			NewInput(t, "in", codec.String(), codec.String(), noop)
			NewRepartition(t, "by-country", codec.String(), codec.String(), noop)
			NewRepartition(t, "by-country", codec.String(), codec.String(), noop)
		}, "repartition \"by-country\": its topic app-by-country-repartition is declared already"},
		{"an output on its topic", func(t *Topology) {
			NewInput(t, "in", codec.String(), codec.String(), noop)
			NewOutput(t, "app-by-country-repartition", codec.String(), codec.String())
			NewRepartition(t, "by-country", codec.String(), codec.String(), noop)
		}, "is declared already"},
		{"no input but repartitions", func(t *Topology) {
			NewRepartition(t, "by-country", codec.String(), codec.String(), noop)
		}, "repartition topics [app-by-country-repartition] are the only inputs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo := New("app")
			tt.declare(topo)
			err := topo.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestARepartitionIsAnInputAndAStreamOutputOfItsTopic(t *testing.T) {
	topo := New("app")
	NewInput(topo, "in", codec.String(), codec.String(), func(*Context, string, string) error { return nil })
	r := NewRepartition(topo, "by-country", codec.String(), codec.String(), func(*Context, string, string) error { return nil })
	if err := topo.Validate(); err != nil {
		t.Fatal(err)
	}
	if r.Topic() != "app-by-country-repartition" || r.Name() != "by-country" {
		t.Errorf("topic %q, name %q", r.Topic(), r.Name())
	}
	if got := topo.InputTopics(); len(got) != 2 || got[1] != r.Topic() {
		t.Errorf("InputTopics = %v: the repartition topic is consumed like every input", got)
	}
	if got := topo.RepartitionTopics(); len(got) != 1 || got[0] != r.Topic() {
		t.Errorf("RepartitionTopics = %v", got)
	}
	if !topo.hasUncached() {
		t.Error("the repartition's output is not a stream: the record cache would merge its records")
	}
}
