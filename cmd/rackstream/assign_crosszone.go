package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/internal/textsafe"
)

// crossZoneHeader is the table's CROSS-ZONE column header, when the plan
// has cross-zone traffic.
func crossZoneHeader(p *assignor.Plan) string {
	if p.CrossZone == nil {
		return ""
	}
	return "\tCROSS-ZONE"
}

// crossZoneCell is a task's expected cross-zone bytes per second, marked
// with where its replicas sit away from every replica of their partitions.
func crossZoneCell(p *assignor.Plan, task int) string {
	cz := p.CrossZone
	if cz == nil {
		return ""
	}
	if task < 0 || task >= len(cz.Tasks) || cz.Tasks[task].Task != task {
		return "\t?"
	}
	tc := cz.Tasks[task]
	cell := "\t" + formatRate(tc.Bytes)
	if !tc.ActiveLocal {
		cell += " (active remote)"
	}
	remote := 0
	for _, local := range tc.StandbyLocal {
		if !local {
			remote++
		}
	}
	if remote > 0 {
		cell += fmt.Sprintf(" (%d standby remote)", remote)
	}
	return cell
}

// printCrossZone prints a plan's cross-zone total and what had no rack.
func printCrossZone(w io.Writer, cz *assignor.CrossZone) {
	if cz == nil {
		return
	}
	fmt.Fprintf(w, "cross-zone (%s): %s per second, fetch %s, produce %s (bytes; partition flows when no task has byte rates)\n",
		textsafe.Escape(cz.Strategy), formatRate(cz.Total), formatRate(cz.Fetch), formatRate(cz.Produce))
	for _, u := range cz.Unknown {
		fmt.Fprintf(w, "cross-zone unknown: %s\n", textsafe.Escape(u))
	}
}

// formatRate renders a rate with at most four significant digits.
func formatRate(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
