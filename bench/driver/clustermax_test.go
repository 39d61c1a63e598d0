package main

import "testing"

// TestCommitCountsReadTheCommitHistogram: the freshness row's commit
// figures come from the instances' rackstream_commit_latency_seconds
// histograms, summed and taken as the difference of two scrapes.
func TestCommitCountsReadTheCommitHistogram(t *testing.T) {
	scrape := func(lines ...string) commitCounts {
		c := commitCounts{name: "rackstream_commit_latency_seconds", buckets: map[float64]float64{}}
		for _, l := range lines {
			c.add(l)
		}
		return c
	}
	base := scrape(
		`rackstream_commit_latency_seconds_bucket{le="0.001"} 1`,
		`rackstream_commit_latency_seconds_bucket{le="0.002"} 2`,
		`rackstream_commit_latency_seconds_bucket{le="+Inf"} 2`,
		`rackstream_commit_latency_seconds_sum 0.003`,
		`rackstream_commit_latency_seconds_count 2`,
	)
	now := scrape(
		`# HELP rackstream_commit_latency_seconds Time of one commit`,
		`rackstream_commit_latency_seconds_bucket{le="0.001"} 1`,
		`rackstream_commit_latency_seconds_bucket{le="0.002"} 3`,
		`rackstream_commit_latency_seconds_bucket{le="0.004"} 4`,
		`rackstream_commit_latency_seconds_bucket{le="+Inf"} 4`,
		`rackstream_commit_latency_seconds_sum 0.008`,
		`rackstream_commit_latency_seconds_count 4`,
		`rackstream_commit_failures_total 0`,
		`rackstream_commit_pause_seconds_count 9`,
	)
	if got, want := now.minus(base).String(), "2, 2.5ms, 4ms"; got != want {
		t.Errorf("two commits of 5 ms in all, one under 2 ms and one under 4 ms: %q, want %q", got, want)
	}
	if got := base.minus(base).String(); got != "-" {
		t.Errorf("no commits: %q, want -", got)
	}
}
