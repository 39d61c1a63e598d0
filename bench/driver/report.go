package main

import (
	"fmt"
	"strings"
)

// section is one part of results.md: its markdown, and the rows it
// promised, each filled with figures or explained (the smoke test checks
// that none is left silently empty).
type section struct {
	title string
	body  strings.Builder
	rows  []rowCheck
}

// rowCheck is one promised row of the results.
type rowCheck struct {
	name   string
	filled bool
	why    string // the explanation when not filled: a command and its error, or why it cannot run
}

func newSection(title string) *section { return &section{title: title} }

// printf appends markdown.
func (s *section) printf(format string, args ...any) { fmt.Fprintf(&s.body, format, args...) }

// filled records a row with figures.
func (s *section) filled(name string) { s.rows = append(s.rows, rowCheck{name: name, filled: true}) }

// missing records a row without figures and writes its explanation as a
// bullet.
func (s *section) missing(name, why string) {
	s.rows = append(s.rows, rowCheck{name: name, why: why})
	s.printf("- **%s: no figures.** %s\n", name, why)
}

// markdown is the section as results.md shows it.
func (s *section) markdown() string {
	return "## " + s.title + "\n\n" + strings.TrimRight(s.body.String(), "\n") + "\n"
}

// target is one of issue 17's targets with what this run measured.
type target struct {
	name     string
	binding  bool
	want     string
	measured string
	met      string // "yes", "no", or "-" when not measured
	// inTheWay says what the profiles (docs/lab/*.md) show stands between
	// the figure and the target: printed when the target is missed.
	inTheWay string
}

func targetTable(ts []target) string {
	var b strings.Builder
	b.WriteString("| target | kind | wanted | measured in this run | met |\n|---|---|---|---|---|\n")
	for _, t := range ts {
		kind := "aimed for"
		if t.binding {
			kind = "**binding**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", t.name, kind, t.want, t.measured, t.met)
	}
	var missed []target
	for _, t := range ts {
		if t.met == metNo {
			missed = append(missed, t)
		}
	}
	if len(missed) > 0 {
		b.WriteString("\nMissed in this run, by how much, and what the profiles show is in the way:\n\n")
		for _, t := range missed {
			why := t.inTheWay
			if why == "" {
				why = "not profiled yet."
			}
			fmt.Fprintf(&b, "- **%s**: wanted %s, measured %s. %s\n", t.name, t.want, t.measured, why)
		}
	}
	return b.String()
}

// metNo is a missed target's verdict (metVerdict, durVerdict).
const metNo = "**no**"

// metVerdict says whether got meets a lower bound (atLeast) or an upper
// one, "-" when got is not a number.
func metVerdict(got, bound float64, atLeast bool) string {
	if got != got { // NaN
		return "-"
	}
	if (atLeast && got >= bound) || (!atLeast && got <= bound) {
		return "yes"
	}
	return metNo
}
