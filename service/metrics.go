package service

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// placementCollector exports the quality of the group's current placement,
// read from the runtime at scrape time. Every member knows the whole
// placement, so every instance exports the same values for a generation:
// alerts take the max over instances. Before the first placement it exports
// nothing (no series rather than a reassuring zero).
//
// Task counts by role on this instance are the runtime's (rackstream_tasks);
// these series describe the whole group.
type placementCollector struct {
	placement func() *balancer.Placement
	// standbys is this instance's num.standby.replicas, used only for a
	// placement whose leader did not say which it planned with (wire
	// version 3 and older).
	standbys int

	generation, members, tasks       *prometheus.Desc
	repeating, values                *prometheus.Desc
	shortfall, short, withoutStandby *prometheus.Desc
}

func newPlacementCollector(placement func() *balancer.Placement, standbys int) *placementCollector {
	return &placementCollector{
		placement: placement,
		standbys:  standbys,
		generation: prometheus.NewDesc("rackstream_placement_generation",
			"Group generation of the placement this instance knows.", nil, nil),
		members: prometheus.NewDesc("rackstream_placement_members",
			"Instances in the placement.", nil, nil),
		tasks: prometheus.NewDesc("rackstream_placement_tasks",
			"Tasks in the placement (the inputs' partition count).", nil, nil),
		repeating: prometheus.NewDesc("rackstream_placement_tasks_repeating",
			"Per key of rack.aware.assignment.tags, tasks whose replicas (active and standbys) repeat a value although a distinct one existed among the instances.", []string{"tag"}, nil),
		values: prometheus.NewDesc("rackstream_placement_tag_values",
			"Per key of rack.aware.assignment.tags, distinct values among the instances.", []string{"tag"}, nil),
		shortfall: prometheus.NewDesc("rackstream_placement_standby_shortfall",
			"Standbys missing over all tasks: the sum of num.standby.replicas minus the standbys placed.", nil, nil),
		short: prometheus.NewDesc("rackstream_placement_tasks_short_of_standbys",
			"Tasks with fewer standbys than num.standby.replicas.", nil, nil),
		withoutStandby: prometheus.NewDesc("rackstream_placement_tasks_without_standby",
			"Tasks with no standby although num.standby.replicas > 0 (0 when no standbys are configured).", nil, nil),
	}
}

func (c *placementCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.generation, c.members, c.tasks, c.repeating, c.values, c.shortfall, c.short, c.withoutStandby} {
		ch <- d
	}
}

func (c *placementCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.placement()
	if p == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	gauge(c.generation, int(p.Generation))
	gauge(c.members, len(p.Members))
	gauge(c.tasks, len(p.Tasks))
	for _, d := range p.Quality.Dimensions {
		gauge(c.repeating, d.TasksRepeating, d.Tag)
		gauge(c.values, d.Values, d.Tag)
	}
	gauge(c.shortfall, p.Quality.StandbyShortfall)
	short, without := 0, 0
	standbys := c.standbys
	if p.Settings != nil {
		standbys = p.Settings.NumStandbyReplicas // the leader's: the same on every member
	}
	if standbys > 0 {
		for i := range p.Tasks {
			if len(p.Tasks[i].Standbys) < standbys {
				short++
			}
		}
		without = p.TasksWithoutStandby()
	}
	gauge(c.short, short)
	gauge(c.withoutStandby, without)
}
