package service

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// balancerCollector exports the group balancer's counters (balancer.Stats),
// read at scrape time. Most count what this instance saw while it led the
// group: in particular the members whose join metadata it could not trust
// (docs/design.md §10): a store checkpoint claimed beyond the changelog's end, an
// endpoint that is not host:port. Each is a counter of this instance's:
// sum over instances for the group's.
type balancerCollector struct {
	stats func() balancer.Stats

	beyondEnd, badEndpoints, rejectedMembers, rejectedAssignments *prometheus.Desc
	published, probes, endOffsetFailures, generationBytes         *prometheus.Desc
	rackOff                                                       *prometheus.Desc
}

func newBalancerCollector(stats func() balancer.Stats) *balancerCollector {
	counter := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("rackstream_balancer_"+name, help, nil, nil)
	}
	return &balancerCollector{
		stats: stats,
		beyondEnd: counter("checkpoints_beyond_end_total",
			"Members whose join metadata claimed a store checkpoint beyond the changelog's end (their lag counted as unknown), counted while this instance led the group, once per member while it stays."),
		badEndpoints: counter("invalid_endpoints_total",
			"Members whose announced endpoint was not host:port (left out of the placement: no query is forwarded to them), counted while this instance led the group, once per member while it stays."),
		rejectedMembers: counter("rejected_members_total",
			"Members whose join metadata could not be used (undecodable, or a duplicated process id) and got an empty assignment, counted while this instance led the group."),
		rejectedAssignments: counter("rejected_assignments_total",
			"Assignments this instance rejected as invalid (it then rejoined)."),
		published: counter("placements_published_total",
			"Placements this instance, as leader, wrote to the placement topic."),
		probes: counter("probing_rebalances_total",
			"Rebalances this instance asked for: a warmup caught up, the probing interval elapsed, or (as leader) a plan must be retried."),
		endOffsetFailures: counter("end_offset_failures_total",
			"Plans this instance, as leader, made without fresh changelog end offsets (the previous placement was kept and a retry scheduled)."),
		generationBytes: prometheus.NewDesc("rackstream_balancer_last_generation_bytes",
			"Subscription plus assignment bytes of the last generation this instance balanced as leader: what the broker stores in one group-metadata record (about 1 MiB at most by default).", nil, nil),
		rackOff: prometheus.NewDesc("rackstream_balancer_rack_awareness_off",
			"What rack-aware placement was off for in the last plan this instance made as leader, by reason: no_partition_racks (1: no cluster metadata read yet), broker_without_rack (tasks with a partition on a broker without broker.rack), member_without_rack (members without the client.rack.tag tag).", []string{"reason"}, nil),
	}
}

func (c *balancerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.beyondEnd, c.badEndpoints, c.rejectedMembers, c.rejectedAssignments,
		c.published, c.probes, c.endOffsetFailures, c.generationBytes, c.rackOff} {
		ch <- d
	}
}

func (c *balancerCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	count := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	count(c.beyondEnd, s.CheckpointsBeyondEnd)
	count(c.badEndpoints, s.InvalidEndpoints)
	count(c.rejectedMembers, s.RejectedMembers)
	count(c.rejectedAssignments, s.RejectedAssignments)
	count(c.published, s.PlacementsPublished)
	count(c.probes, s.ProbingRebalances)
	count(c.endOffsetFailures, s.EndOffsetFailures)
	ch <- prometheus.MustNewConstMetric(c.generationBytes, prometheus.GaugeValue, float64(s.LastGenerationBytes))
	for reason, n := range s.RackAwarenessOff {
		ch <- prometheus.MustNewConstMetric(c.rackOff, prometheus.GaugeValue, float64(n), reason)
	}
}

// registerBalancerMetrics registers the balancer's counters, read from
// stats (processor.Runtime.BalancerStats) at every scrape.
func registerBalancerMetrics(reg prometheus.Registerer, stats func() balancer.Stats) error {
	return reg.Register(newBalancerCollector(stats))
}
