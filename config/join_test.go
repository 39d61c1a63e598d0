package config

import (
	"slices"
	"strings"
	"testing"
)

func TestStreamJoinNamesTheKeyAtFault(t *testing.T) {
	stream := []string{"processor.type=join", "processor.input.topic=clicks", "processor.output.topic=joined"}
	tests := []struct {
		name string
		set  []string
		want string // "" loads
	}{
		{"a left stream join", []string{"processor.join.stream.topic=views", "processor.join.window.ms=60000"}, ""},
		{"an outer stream join with grace", []string{"processor.join=outer", "processor.join.stream.topic=views", "processor.join.window.ms=60000", "processor.join.grace.ms=5000"}, ""},
		{"a stream join without a window", []string{"processor.join.stream.topic=views"}, "processor.join.window.ms is required with processor.join.stream.topic"},
		{"a negative window", []string{"processor.join.stream.topic=views", "processor.join.window.ms=-1"}, "Invalid value -1 for configuration processor.join.window.ms"},
		{"a stream and a table", []string{"processor.join.stream.topic=views", "processor.join.window.ms=1", "processor.table.topic=prices"}, "processor.table.topic and processor.join.stream.topic are both set"},
		{"a global table flag in stream mode", []string{"processor.join.stream.topic=views", "processor.join.window.ms=1", "processor.table.global=true"}, "processor.table.global is for a table join"},
		{"a key field in stream mode", []string{"processor.join.stream.topic=views", "processor.join.window.ms=1", "processor.join.key.field=user"}, "processor.join.key.field is for a global table join"},
		{"the input as the second stream", []string{"processor.join.stream.topic=clicks", "processor.join.window.ms=1"}, "processor.join.stream.topic clicks is also the input or output topic"},
		{"a changelog in stream mode", []string{"processor.join.stream.topic=views", "processor.join.window.ms=1", "processor.changelog.topic=c"}, "processor.changelog.topic does not apply to a stream join"},
		{"outer with a table", []string{"processor.join=outer", "processor.table.topic=prices"}, "processor.join=outer needs processor.join.stream.topic"},
		{"a window with a table", []string{"processor.table.topic=prices", "processor.join.window.ms=1000"}, "processor.join.window.ms needs processor.join.stream.topic"},
		{"a grace with a table", []string{"processor.table.topic=prices", "processor.join.grace.ms=1000"}, "processor.join.grace.ms needs processor.join.stream.topic"},
		{"neither a table nor a stream", nil, "requires processor.table.topic, the table to join, or processor.join.stream.topic"},
		{"a join window on count", []string{"processor.type=count", "processor.join.window.ms=1000"}, "processor.join.window.ms is for processor.type=join"},
		{"a second stream on count", []string{"processor.type=count", "processor.join.stream.topic=views"}, "processor.join.stream.topic is for processor.type=join"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := Sources{Set: append(append(slices.Clone(required), stream...), tt.set...)}
			if tt.want == "" {
				mustLoad(t, src)
				return
			}
			errs := loadErrors(t, src)
			if len(errs) == 0 || !strings.Contains(errs[0], tt.want) {
				t.Errorf("errors %q, want the first containing %q", errs, tt.want)
			}
		})
	}
}
