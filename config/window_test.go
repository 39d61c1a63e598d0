package config

import (
	"slices"
	"strings"
	"testing"
)

func TestWindowedBuiltinsNameTheKeyAtFault(t *testing.T) {
	count := []string{"processor.type=count", "processor.input.topic=in"}
	tests := []struct {
		name string
		set  []string
		want string // "" loads
	}{
		{"tumbling", []string{"processor.window.type=tumbling", "processor.window.size.ms=60000"}, ""},
		{"hopping with grace, retention and final results", []string{"processor.window.type=hopping", "processor.window.size.ms=300000", "processor.window.advance.ms=60000", "processor.window.grace.ms=10000", "processor.window.retention.ms=3600000", "processor.window.emit=final"}, ""},
		{"sliding", []string{"processor.window.type=sliding", "processor.window.size.ms=10000"}, ""},
		{"session", []string{"processor.window.type=session", "processor.window.gap.ms=1800000"}, ""},
		{"a size without a type", []string{"processor.window.size.ms=60000"}, "processor.window.size.ms is set but processor.window.type is not"},
		{"an advance without hopping", []string{"processor.window.type=tumbling", "processor.window.size.ms=60000", "processor.window.advance.ms=1000"}, "processor.window.advance.ms does not apply to processor.window.type=tumbling"},
		{"a gap without session", []string{"processor.window.type=tumbling", "processor.window.size.ms=60000", "processor.window.gap.ms=1000"}, "processor.window.gap.ms does not apply to processor.window.type=tumbling"},
		{"a size with session", []string{"processor.window.type=session", "processor.window.gap.ms=1000", "processor.window.size.ms=1000"}, "processor.window.size.ms does not apply to processor.window.type=session"},
		{"a tumbling window without size", []string{"processor.window.type=tumbling"}, "processor.window.size.ms must be > 0"},
		{"a hopping window without advance", []string{"processor.window.type=hopping", "processor.window.size.ms=60000"}, "processor.window.advance.ms must be > 0 and <= size.ms (60000), got 0"},
		{"an advance beyond the size", []string{"processor.window.type=hopping", "processor.window.size.ms=60000", "processor.window.advance.ms=60001"}, "processor.window.advance.ms must be > 0 and <= size.ms (60000), got 60001"},
		{"a session without gap", []string{"processor.window.type=session"}, "processor.window.gap.ms must be > 0"},
		{"a negative grace", []string{"processor.window.type=tumbling", "processor.window.size.ms=60000", "processor.window.grace.ms=-1"}, "Invalid value -1 for configuration processor.window.grace.ms: Value must be at least 0"},
		{"a retention below the minimum", []string{"processor.window.type=tumbling", "processor.window.size.ms=60000", "processor.window.grace.ms=5000", "processor.window.retention.ms=60000"}, "processor.window.retention.ms must be >= 65000 (the window length plus grace), got 60000"},
		{"a sliding retention below twice the size", []string{"processor.window.type=sliding", "processor.window.size.ms=10000", "processor.window.retention.ms=15000"}, "processor.window.retention.ms must be >= 20000"},
		{"an unknown emit", []string{"processor.window.type=tumbling", "processor.window.size.ms=60000", "processor.window.emit=never"}, "Invalid value never for configuration processor.window.emit"},
		{"a windowed store's changelog", []string{"processor.window.type=session", "processor.window.gap.ms=1000", "processor.changelog.topic=c"}, "processor.changelog.topic does not apply to a windowed store: its changelog is <application.id>-count-changelog"},
		{"windows on latest", []string{"processor.type=latest", "processor.window.type=tumbling", "processor.window.size.ms=60000"}, `processor.window.type is for processor.type count or sum, not "latest"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := Sources{Set: append(append(slices.Clone(required), count...), tt.set...)}
			if tt.want == "" {
				mustLoad(t, src)
				return
			}
			errs := loadErrors(t, src)
			if len(errs) != 1 || !strings.Contains(errs[0], tt.want) {
				t.Errorf("errors %q, want one containing %q", errs, tt.want)
			}
		})
	}
}

func TestTimestampFieldLoads(t *testing.T) {
	c := mustLoad(t, Sources{Set: append(slices.Clone(required), "processor.type=latest", "processor.input.topic=in", "processor.timestamp.field=ts")})
	if c.Processor.TimestampField != "ts" {
		t.Errorf("TimestampField = %q", c.Processor.TimestampField)
	}
}
