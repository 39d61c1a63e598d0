package config

import (
	"errors"
	"slices"

	"github.com/rackstream/rackstream/window"
)

// windowKeys are the processor.window.* keys but the type, each with
// whether w sets it (its value is not the default, so that a printed
// configuration loads back) and the window types it applies to (nil:
// every type).
var windowKeys = []struct {
	key   string
	set   func(w Window) bool
	types []WindowType
}{
	{"processor.window.size.ms", func(w Window) bool { return w.Size != 0 }, []WindowType{WindowTumbling, WindowHopping, WindowSliding}},
	{"processor.window.advance.ms", func(w Window) bool { return w.Advance != 0 }, []WindowType{WindowHopping}},
	{"processor.window.gap.ms", func(w Window) bool { return w.Gap != 0 }, []WindowType{WindowSession}},
	{"processor.window.grace.ms", func(w Window) bool { return w.Grace != 0 }, nil},
	{"processor.window.retention.ms", func(w Window) bool { return w.Retention != 0 }, nil},
	{"processor.window.emit", func(w Window) bool { return w.Emit == WindowEmitFinal }, nil},
}

// checkWindow validates the keys of a windowed built-in
// (processor.window.*): each key set (off its default) only with a window
// type it applies to, and the window definition as package window
// validates it.
func (c *Config) checkWindow(fail func(key, format string, args ...any)) {
	w := c.Processor.Window
	if w.Type != "" && c.Processor.Type != ProcessorCount && c.Processor.Type != ProcessorSum {
		fail("processor.window.type", "processor.window.type is for processor.type count or sum, not %q", c.Processor.Type)
		return
	}
	applies := true
	for _, k := range windowKeys {
		if !k.set(w) {
			continue
		}
		switch {
		case w.Type == "":
			fail(k.key, "%s is set but processor.window.type is not", k.key)
			applies = false
		case k.types != nil && !slices.Contains(k.types, w.Type):
			fail(k.key, "%s does not apply to processor.window.type=%s", k.key, w.Type)
			applies = false
		}
	}
	if w.Type == "" || !applies {
		return
	}
	if c.Processor.ChangelogTopic != "" {
		fail("processor.changelog.topic", "processor.changelog.topic does not apply to a windowed store: its changelog is <application.id>-%s-changelog", c.Processor.Type)
	}
	def, err := WindowDef(w)
	for _, fe := range fieldErrors(err) {
		fail("processor.window."+fe.Field, "processor.window.%s %s", fe.Field, fe.Reason)
	}
	if err != nil || w.Retention == 0 {
		return
	}
	for _, fe := range fieldErrors(window.ValidateRetention(w.Retention, minRetention(def))) {
		fail("processor.window."+fe.Field, "processor.window.%s %s", fe.Field, fe.Reason)
	}
}

// WindowDef returns w's window definition (a window.TimeWindows,
// SlidingWindows or SessionWindows) and what its Validate reports.
func WindowDef(w Window) (any, error) {
	switch w.Type {
	case WindowTumbling:
		d := window.Tumbling(w.Size).WithGrace(w.Grace)
		return d, d.Validate()
	case WindowHopping:
		d := window.Hopping(w.Size, w.Advance).WithGrace(w.Grace)
		return d, d.Validate()
	case WindowSliding:
		d := window.Sliding(w.Size).WithGrace(w.Grace)
		return d, d.Validate()
	case WindowSession:
		d := window.Session(w.Gap).WithGrace(w.Grace)
		return d, d.Validate()
	}
	return nil, errors.New("processor.window.type is not set")
}

func minRetention(def any) int64 {
	switch d := def.(type) {
	case window.TimeWindows:
		return d.MinRetention()
	case window.SlidingWindows:
		return d.MinRetention()
	case window.SessionWindows:
		return d.MinRetention()
	}
	return 0
}

// fieldErrors returns the *window.FieldError faults err joins.
func fieldErrors(err error) []*window.FieldError {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*window.FieldError
		for _, e := range j.Unwrap() {
			out = append(out, fieldErrors(e)...)
		}
		return out
	}
	var fe *window.FieldError
	if errors.As(err, &fe) {
		return []*window.FieldError{fe}
	}
	return nil
}
