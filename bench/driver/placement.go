package main

import (
	"context"
	"strings"
	"time"
)

// placementSection runs the placement comparison at 1,000 clients x 10,000
// tasks (assignor/kafkaref's TestScaleAgainstKafka: ours and Kafka
// Streams' own standby assignment on the same scenario) in its own process
// and quotes its table.
func (d *driver) placementSection(ctx context.Context) *section {
	sec := newSection("Placement at 1,000 clients x 10,000 tasks")
	timeout := d.cfg.scaleTimeout
	c := runChild(ctx, d.pkgDir("kafkaref"), childEnv(), nil, timeout+5*time.Minute, d.bins["kafkaref"],
		"-test.run", "^TestScaleAgainstKafka$", "-test.v", "-scale", "-scale.timeout", timeout.String(), "-test.timeout", (timeout + 5*time.Minute).String())
	var table []string
	intro := ""
	for _, l := range strings.Split(c.output, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "|"):
			table = append(table, t)
		case strings.HasPrefix(t, "1000 clients"):
			intro = t
		}
	}
	sec.printf("`assignor.Assign` and Kafka Streams 4.4.0's `TaskAssignmentUtils.defaultStandbyTaskAssignment` (through "+
		"assignor/kafkaref's JVM) on the same scenario, in one process (`%s`): the JVM's time is boxed at %v of wall time. "+
		"The process: %.1f s CPU (JVM included), peak RSS %.0f MB.\n\n", c.command, timeout, c.cpu.Seconds(), float64(c.maxRSS)/1e6)
	if c.err != nil || c.skip != "" || len(table) == 0 {
		sec.missing("placement, ours and Kafka's", c.failure())
		return sec
	}
	if intro != "" {
		sec.printf("%s\n\n", intro)
	}
	sec.printf("%s\n", strings.Join(table, "\n"))
	sec.filled("placement, ours and Kafka's")
	return sec
}
