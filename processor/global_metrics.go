package processor

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// globalMetrics is what the runtime knows of its global tables' restores
// for the metrics; the rest (lags, positions, health) globalCollector
// reads from the live tables at scrape time, so that a runtime that ended
// has no series left behind.
type globalMetrics struct {
	mu        sync.Mutex // guards restoring and took
	restoring string     // the topic being restored, "" when none
	took      map[string]time.Duration
}

func (m *globalMetrics) restoreStarted(topic string) {
	m.mu.Lock()
	m.restoring = topic
	m.mu.Unlock()
}

func (m *globalMetrics) restoreEnded(topic string, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.restoring = ""
	if m.took == nil {
		m.took = make(map[string]time.Duration)
	}
	m.took[topic] = took
}

// globalCollector collects the global tables' series at scrape time:
//
//   - rackstream_global_table_restoring{topic}: 1 while the table is being
//     restored (before the instance joins its group), else 0;
//   - rackstream_global_table_restore_seconds{topic}: how long its restore
//     took, once done;
//   - rackstream_global_table_lag_records{topic,partition}: offsets behind
//     the end offset last seen (as rackstream_state_lag_records of a store);
//   - rackstream_global_table_checkpoint_offset{topic,partition}: the next
//     offset the partition applies;
//   - rackstream_global_table_failed{topic}: 1 when a partition stopped
//     following the topic (reads answer from what was applied), else 0.
type globalCollector struct {
	r                                                   *Runtime
	restoring, restoreSeconds, lag, checkpoint, failedD *prometheus.Desc
}

func newGlobalCollector(r *Runtime) *globalCollector {
	topic, part := []string{"topic"}, []string{"topic", "partition"}
	return &globalCollector{r: r,
		restoring:      prometheus.NewDesc("rackstream_global_table_restoring", "1 while the global table is restored (before the instance joins its group), else 0.", topic, nil),
		restoreSeconds: prometheus.NewDesc("rackstream_global_table_restore_seconds", "How long the global table's restore took at this runtime's start.", topic, nil),
		lag:            prometheus.NewDesc("rackstream_global_table_lag_records", "Offsets the global table's partition is behind the end offset last seen.", part, nil),
		checkpoint:     prometheus.NewDesc("rackstream_global_table_checkpoint_offset", "The next offset the global table's partition applies.", part, nil),
		failedD:        prometheus.NewDesc("rackstream_global_table_failed", "1 when a partition of the global table stopped following its topic (reads answer from what was applied), else 0.", topic, nil),
	}
}

// Describe describes nothing: the collector is unchecked, as its series
// exist only while the tables do.
func (*globalCollector) Describe(chan<- *prometheus.Desc) {}

func (c *globalCollector) Collect(ch chan<- prometheus.Metric) {
	m := &c.r.gmet
	m.mu.Lock()
	restoring := m.restoring
	took := make(map[string]time.Duration, len(m.took))
	for t, d := range m.took {
		took[t] = d
	}
	m.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, s := range c.r.topo.globals {
		rd := c.r.GlobalTable(s.topic)
		if rd == nil && restoring != s.topic {
			continue // not open (yet, or any more): no series
		}
		gauge(c.restoring, b2f(restoring == s.topic), s.topic)
		if d, ok := took[s.topic]; ok {
			gauge(c.restoreSeconds, d.Seconds(), s.topic)
		}
		if rd == nil {
			continue
		}
		for p, l := range rd.Lags() {
			if l >= 0 {
				gauge(c.lag, float64(l), s.topic, strconv.Itoa(p))
			}
		}
		for p, o := range rd.Positions() {
			gauge(c.checkpoint, float64(o), s.topic, strconv.Itoa(p))
		}
		gauge(c.failedD, b2f(rd.Err() != nil), s.topic)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// registerGlobalMetrics registers the global tables' collector on reg
// (nil: none), when the topology has global tables.
func registerGlobalMetrics(reg prometheus.Registerer, r *Runtime) {
	if reg == nil || len(r.topo.globals) == 0 {
		return
	}
	_ = reg.Register(newGlobalCollector(r)) // unchecked: it never fails
}
