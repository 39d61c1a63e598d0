package main

import (
	"strings"
	"testing"

	"github.com/rackstream/rackstream/config"
)

func TestPlanTopics(t *testing.T) {
	in := topicSpec{name: "clicks", role: "processor.input.topic"}
	out := topicSpec{name: "counts", role: "processor.output.topic"}
	table := topicSpec{name: "users", role: "processor.table.topic"}
	global := topicSpec{name: "users", role: "processor.table.topic", anyCount: true}
	for _, tc := range []struct {
		name       string
		specs      []topicSpec
		counts     map[string]int32
		partitions int32
		countFrom  string
		create     []string
		exist      []string
		n          int32
		errHas     []string
	}{
		{name: "a missing output takes the input's count",
			specs: []topicSpec{in, out}, counts: map[string]int32{"clicks": 6, "counts": -1}, countFrom: "clicks",
			create: []string{"counts"}, exist: []string{"clicks"}, n: 6},
		{name: "everything existing with the count is left alone",
			specs: []topicSpec{in, out}, counts: map[string]int32{"clicks": 6, "counts": 6}, countFrom: "clicks",
			exist: []string{"clicks", "counts"}, n: 6},
		{name: "the flag creates a missing input and output",
			specs: []topicSpec{in, out}, counts: map[string]int32{}, partitions: 4, countFrom: "clicks",
			create: []string{"clicks", "counts"}, n: 4},
		{name: "no count without the flag when the input is missing",
			specs: []topicSpec{in, out}, counts: map[string]int32{"clicks": -1}, countFrom: "clicks",
			errHas: []string{"processor.input.topic clicks does not exist yet", "--partitions N"}},
		{name: "no count without the flag or an input",
			specs: []topicSpec{{name: "x", role: "--topic"}}, counts: map[string]int32{},
			errHas: []string{"no processor.input.topic is set", "--partitions N"}},
		{name: "every wrong count is named at once",
			specs: []topicSpec{in, out, table}, counts: map[string]int32{"clicks": 6, "counts": 3, "users": 12}, partitions: 6, countFrom: "clicks",
			errHas: []string{"topic counts (processor.output.topic) exists with 3 partitions, not 6 (--partitions)", "topic users (processor.table.topic) exists with 12 partitions, not 6"}},
		{name: "the flag disagreeing with the input is an error on the input",
			specs: []topicSpec{in, out}, counts: map[string]int32{"clicks": 6}, partitions: 12, countFrom: "clicks",
			errHas: []string{"topic clicks (processor.input.topic) exists with 6 partitions, not 12", "pass --partitions 6"}},
		{name: "a global table may have any count",
			specs: []topicSpec{in, global}, counts: map[string]int32{"clicks": 6, "users": 1}, countFrom: "clicks",
			exist: []string{"clicks", "users"}, n: 6},
		{name: "nothing to create",
			errHas: []string{"no topic to create"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planTopics(tc.specs, tc.counts, tc.partitions, tc.countFrom)
			if len(tc.errHas) > 0 {
				if err == nil {
					t.Fatalf("no error; plan %+v", p)
				}
				for _, w := range tc.errHas {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.partitions != tc.n {
				t.Errorf("partitions %d, want %d", p.partitions, tc.n)
			}
			if got := names(p.create); got != strings.Join(tc.create, ",") {
				t.Errorf("create %s, want %s", got, strings.Join(tc.create, ","))
			}
			if got := names(p.exist); got != strings.Join(tc.exist, ",") {
				t.Errorf("exist %s, want %s", got, strings.Join(tc.exist, ","))
			}
		})
	}
}

func names(specs []topicSpec) string {
	var ns []string
	for _, s := range specs {
		ns = append(ns, s.name)
	}
	return strings.Join(ns, ",")
}

func TestProcessorTopicsListsWhatIsSet(t *testing.T) {
	got := processorTopics(config.Processor{InputTopic: "orders", OutputTopic: "totals", TableTopic: "customers", TableGlobal: true})
	if names(got) != "orders,totals,customers" {
		t.Fatalf("topics %s", names(got))
	}
	if tb := got[2]; !tb.anyCount || tb.configs["cleanup.policy"] == nil || *tb.configs["cleanup.policy"] != "compact" {
		t.Errorf("the table %+v: want compacted, any count (global)", tb)
	}
	if got := processorTopics(config.Processor{InputTopic: "orders"}); names(got) != "orders" {
		t.Errorf("input only: %s", names(got))
	}
	if got := addTopic(processorTopics(config.Processor{InputTopic: "orders"}), topicSpec{name: "orders", role: "--topic"}); len(got) != 1 || got[0].role != "processor.input.topic" {
		t.Errorf("a --topic naming the input is listed once, as the input: %+v", got)
	}
}
