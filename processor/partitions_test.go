package processor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

func TestCheckPartitionCounts(t *testing.T) {
	tc := func(topic string, n int32) processor.TopicCount {
		return processor.TopicCount{Topic: topic, Partitions: n}
	}
	for _, c := range []struct {
		name       string
		inputs     []processor.TopicCount
		changelogs []processor.TopicCount
		want       int32
		err        string
	}{
		{"equal counts pass", []processor.TopicCount{tc("a", 12), tc("b", 12)}, []processor.TopicCount{tc("c", 12)}, 12, ""},
		{"missing changelog will be created", []processor.TopicCount{tc("a", 6)}, []processor.TopicCount{tc("c", -1)}, 6, ""},
		{"inputs differ", []processor.TopicCount{tc("clicks", 12), tc("pages", 8)}, nil, 0,
			"partition counts differ (task i owns partition i of every input, table and changelog, so all need the same count): inputs clicks=12, pages=8"},
		{"changelog differs", []processor.TopicCount{tc("in", 12)}, []processor.TopicCount{tc("app-s-changelog", 6), tc("goka-table", 12)}, 0,
			"inputs in=12; changelogs app-s-changelog=6, goka-table=12"},
		{"input missing", []processor.TopicCount{tc("in", 12), tc("typo", -1)}, nil, 0, "inputs in=12, typo (missing)"},
		{"no inputs", nil, nil, 0, "inputs "},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, err := processor.CheckPartitionCounts(c.inputs, c.changelogs)
			if c.err == "" {
				if err != nil || n != c.want {
					t.Fatalf("got %d, %v; want %d", n, err, c.want)
				}
				return
			}
			var pe *processor.PartitionCountError
			if !errors.As(err, &pe) {
				t.Fatalf("got %d, %v; want a PartitionCountError", n, err)
			}
			if !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %q does not contain %q", err, c.err)
			}
		})
	}
}

func TestCheckTopologyNamesTopicsAndCountsOnTheCluster(t *testing.T) {
	c := kafkatest.New(t)
	a, b, cl := c.Name("check-a"), c.Name("check-b"), c.Name("check-cl")
	c.CreateTopic(a, 4, nil)
	c.CreateTopic(b, 3, nil)
	c.CreateTopic(cl, 4, nil)
	topo := processor.New(c.Name("check-app"))
	processor.NewInput(topo, a, codec.String(), codec.String(), noop[string, string])
	processor.NewStore(topo, "s", codec.String(), codec.String(), processor.WithChangelog(cl))
	processor.NewStore(topo, "fresh", codec.String(), codec.String())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := processor.CheckTopology(ctx, c.Admin(), topo)
	if err != nil || n != 4 {
		t.Fatalf("co-partitioned topology: %d, %v", n, err)
	}
	processor.NewInput(topo, b, codec.String(), codec.String(), noop[string, string])
	_, err = processor.CheckTopology(ctx, c.Admin(), topo)
	if err == nil {
		t.Fatal("no error for inputs with 4 and 3 partitions")
	}
	for _, want := range []string{a + "=4", b + "=3", cl + "=4", topo.ApplicationID() + "-fresh-changelog (missing)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
