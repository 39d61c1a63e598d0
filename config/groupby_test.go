package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGroupByFieldNamesTheKeyAtFault(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		want string // "" loads
	}{
		{"count by a field", []string{"processor.type=count", "processor.group.by.field=country"}, ""},
		{"sum by a field", []string{"processor.type=sum", "processor.sum.field=amount", "processor.group.by.field=country"}, ""},
		{"a windowed count by a field", []string{"processor.type=count", "processor.group.by.field=country", "processor.window.type=tumbling", "processor.window.size.ms=60000"}, ""},
		{"latest by a field", []string{"processor.type=latest", "processor.group.by.field=country"}, `processor.group.by.field is for processor.type count or sum, not "latest"`},
		{"join by a field", []string{"processor.type=join", "processor.table.topic=t", "processor.output.topic=o", "processor.group.by.field=country"}, `processor.group.by.field is for processor.type count or sum, not "join"`},
		{"an output on the repartition topic", []string{"processor.type=count", "processor.group.by.field=country", "processor.output.topic=app-count-repartition"}, "processor.output.topic app-count-repartition is the repartition topic of processor.group.by.field"},
		{"an input on the repartition topic", []string{"processor.type=sum", "processor.group.by.field=country", "processor.input.topic=app-sum-repartition"}, "processor.input.topic app-sum-repartition is the repartition topic of processor.group.by.field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := Sources{Set: append(append(slices.Clone(required), "processor.input.topic=in"), tt.set...)}
			if tt.want == "" {
				if c := mustLoad(t, src); c.Processor.GroupByField != "country" {
					t.Errorf("GroupByField = %q", c.Processor.GroupByField)
				}
				return
			}
			errs := loadErrors(t, src)
			if len(errs) != 1 || !strings.Contains(errs[0], tt.want) {
				t.Errorf("errors %q, want one containing %q", errs, tt.want)
			}
		})
	}
}

func TestRepartitionPurgeIntervalLoads(t *testing.T) {
	if c := mustLoad(t, Sources{Set: slices.Clone(required)}); c.RepartitionPurgeInterval != 30*time.Second {
		t.Errorf("default RepartitionPurgeInterval = %v, want Kafka Streams' 30s", c.RepartitionPurgeInterval)
	}
	if c := mustLoad(t, Sources{Set: append(slices.Clone(required), "repartition.purge.interval.ms=0")}); c.RepartitionPurgeInterval != 0 {
		t.Errorf("RepartitionPurgeInterval = %v, want 0", c.RepartitionPurgeInterval)
	}
	errs := loadErrors(t, Sources{Set: append(slices.Clone(required), "repartition.purge.interval.ms=-1")})
	if len(errs) != 1 || !strings.Contains(errs[0], "repartition.purge.interval.ms") {
		t.Errorf("errors %q, want one naming repartition.purge.interval.ms", errs)
	}
}
