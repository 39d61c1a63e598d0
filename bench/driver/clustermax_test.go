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

// TestCommitCountsAddUpTheTasksSeries: a per-task histogram (the records'
// end-to-end latency) sums its tasks' series, and under(q) bounds its
// quantiles by the buckets.
func TestCommitCountsAddUpTheTasksSeries(t *testing.T) {
	c := commitCounts{name: "rackstream_record_e2e_latency_seconds", buckets: map[float64]float64{}}
	for _, l := range []string{
		`# TYPE rackstream_record_e2e_latency_seconds histogram`,
		`rackstream_record_e2e_latency_seconds_bucket{task="0",le="0.001"} 50`,
		`rackstream_record_e2e_latency_seconds_bucket{task="0",le="0.002"} 90`,
		`rackstream_record_e2e_latency_seconds_bucket{task="0",le="+Inf"} 100`,
		`rackstream_record_e2e_latency_seconds_sum{task="0"} 0.2`,
		`rackstream_record_e2e_latency_seconds_count{task="0"} 100`,
		`rackstream_record_e2e_latency_seconds_bucket{task="11",le="0.001"} 0`,
		`rackstream_record_e2e_latency_seconds_bucket{task="11",le="0.002"} 0`,
		`rackstream_record_e2e_latency_seconds_bucket{task="11",le="+Inf"} 100`,
		`rackstream_record_e2e_latency_seconds_sum{task="11"} 1.8`,
		`rackstream_record_e2e_latency_seconds_count{task="11"} 100`,
		`rackstream_record_e2e_latency_seconds_countx{task="1"} 7`,
	} {
		c.add(l)
	}
	if c.n != 200 || c.seconds != 2 {
		t.Fatalf("count %v, sum %v; want 200 and 2 (two tasks' series)", c.n, c.seconds)
	}
	if got := c.under(0.25); got != "1ms" {
		t.Errorf("p25 under %s, want 1ms", got)
	}
	if got := c.under(0.45); got != "2ms" {
		t.Errorf("p45 under %s, want 2ms", got)
	}
	if got := c.under(0.99); got != "+Inf" {
		t.Errorf("p99 under %s, want +Inf", got)
	}
}

// TestProcessedInReadsTheProcessedCounter: the maximum's drain follows the
// instances' rackstream_process_records_total series, one per task.
func TestProcessedInReadsTheProcessedCounter(t *testing.T) {
	var sum float64
	for _, l := range []string{
		`# HELP rackstream_process_records_total Input records whose processing finished`,
		`# TYPE rackstream_process_records_total counter`,
		`rackstream_process_records_total{task="0"} 1500`,
		`rackstream_process_records_total{task="11"} 2.5e+06`,
		`rackstream_process_latency_seconds_count{task="0"} 99`,
		`rackstream_process_records_totalx{task="1"} 7`,
	} {
		sum += processedIn(l)
	}
	if sum != 2_501_500 {
		t.Fatalf("sum of the processed counters = %v, want 2501500", sum)
	}
}
