package state

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/syndtr/goleveldb/leveldb"
)

// LevelDB's own series report what LevelDB does to an open store's writes,
// read at scrape time from the live database (goleveldb's DB.Stats), as
// the Prometheus client collects process metrics. A write slowed or paused
// while level 0 holds too many tables for compaction to keep up
// (WriteL0SlowdownTrigger, WriteL0PauseTrigger in manager.go) is time a
// commit's or a restore's batch waits, and nothing else shows it. Kafka
// Streams reports RocksDB's write stalls the same way.
//
// The counters count from the database's open: a reopened or wiped store
// starts again from zero.

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

func describeLevelDB(ch chan<- *prometheus.Desc) {
	ch <- stallSecondsDesc
	ch <- stallsDesc
	ch <- pausedDesc
	ch <- level0Desc
}

// collectLevelDB sends the store's LevelDB series; none while its database
// is closed.
func (s *DB) collectLevelDB(ch chan<- prometheus.Metric, labels []string) {
	var st leveldb.DBStats
	if !s.levelDBStats(&st) {
		return
	}
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

// levelDBStats reads the store's LevelDB statistics into st; false when the
// store is closed.
func (s *DB) levelDBStats(st *leveldb.DBStats) bool {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.db == nil {
		return false
	}
	return s.db.Stats(st) == nil
}
