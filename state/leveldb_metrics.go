package state

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/syndtr/goleveldb/leveldb"
)

// levelDBCollector reports what LevelDB itself does to the open stores'
// writes, read at scrape time from the live databases (goleveldb's
// DB.Stats), as the Prometheus client collects process metrics: a write
// slowed or paused while level 0 holds too many tables for compaction to
// keep up (WriteL0SlowdownTrigger, WriteL0PauseTrigger in manager.go) is
// time a commit's or a restore's batch waits, and nothing else shows it.
// Kafka Streams reports RocksDB's write stalls the same way.
//
// Series follow the open stores: a closed store has none, and a reopened
// one counts from zero again (a counter reset, which rate() handles).
// Managers sharing a registry share the collector (promreg), so it keeps
// the set of managers whose stores it reports.
type levelDBCollector struct {
	// mu guards managers.
	mu       sync.Mutex
	managers map[*Manager]struct{}
}

var (
	stallSecondsDesc = prometheus.NewDesc("rackstream_state_write_stall_seconds_total",
		"Time the store's writes (commit batches, restore and standby batches) waited because LevelDB's level 0 held too many tables: slowed or paused for compaction. Counts from the store's open.",
		storeLabels, nil)
	stallsDesc = prometheus.NewDesc("rackstream_state_write_stalls_total",
		"Writes of the store that LevelDB slowed or paused for compaction. Counts from the store's open.",
		storeLabels, nil)
	pausedDesc = prometheus.NewDesc("rackstream_state_write_paused",
		"1 while LevelDB holds the store's writes until compaction catches up (level 0 at its pause trigger), else 0.",
		storeLabels, nil)
	level0Desc = prometheus.NewDesc("rackstream_state_level0_tables",
		"Tables in the store's LevelDB level 0: writes slow down at 16 and stop at 24.",
		storeLabels, nil)
)

func newLevelDBCollector() *levelDBCollector {
	return &levelDBCollector{managers: make(map[*Manager]struct{})}
}

func (c *levelDBCollector) add(m *Manager) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.managers[m] = struct{}{}
}

func (c *levelDBCollector) remove(m *Manager) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.managers, m)
}

func (c *levelDBCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- stallSecondsDesc
	ch <- stallsDesc
	ch <- pausedDesc
	ch <- level0Desc
}

func (c *levelDBCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	managers := make([]*Manager, 0, len(c.managers))
	for m := range c.managers {
		managers = append(managers, m)
	}
	c.mu.Unlock()
	var st leveldb.DBStats
	for _, m := range managers {
		for _, s := range m.liveStores() {
			if !s.stats(&st) {
				continue
			}
			labels := s.labels()
			ch <- prometheus.MustNewConstMetric(stallSecondsDesc, prometheus.CounterValue, st.WriteDelayDuration.Seconds(), labels...)
			ch <- prometheus.MustNewConstMetric(stallsDesc, prometheus.CounterValue, float64(st.WriteDelayCount), labels...)
			paused := 0.0
			if st.WritePaused {
				paused = 1
			}
			ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, paused, labels...)
			level0 := 0
			if len(st.LevelTablesCounts) > 0 {
				level0 = st.LevelTablesCounts[0]
			}
			ch <- prometheus.MustNewConstMetric(level0Desc, prometheus.GaugeValue, float64(level0), labels...)
		}
	}
}

// liveStores returns the stores of the manager's open tasks, for a scrape.
// The stores are read after m.mu is released: a store's own lock (dbMu) is
// taken by stats alone.
func (m *Manager) liveStores() []*DB {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*DB
	for _, t := range m.tasks {
		out = append(out, t.stores...)
	}
	return out
}

// stats reads the store's LevelDB statistics into st; false when the
// store is closed.
func (s *DB) stats(st *leveldb.DBStats) bool {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.db == nil {
		return false
	}
	return s.db.Stats(st) == nil
}
