package state

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rackstream/rackstream/internal/promreg"
)

// metrics are the package's Prometheus series, labelled by task and store.
type metrics struct {
	remaining   *prometheus.GaugeVec
	restored    *prometheus.CounterVec
	rate        *prometheus.GaugeVec
	eta         *prometheus.GaugeVec
	lag         *prometheus.GaugeVec
	checkpoint  *prometheus.GaugeVec
	storeErrors *prometheus.CounterVec
	corrupted   *prometheus.CounterVec
	tornTails   *prometheus.CounterVec
	// levelDB collects the open stores' LevelDB write stalls at scrape
	// time; the Manager adds itself at Open and leaves at Close.
	levelDB *levelDBCollector
}

var storeLabels = []string{"task", "store"}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		remaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rackstream_state_restore_remaining_records",
			Help: "Changelog records (offsets) left to restore in the current restore; it only goes down during a restore, and is 0 when none is running.",
		}, storeLabels),
		restored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rackstream_state_restored_records_total",
			Help: "Changelog records applied to local stores by restore and standby tailing.",
		}, storeLabels),
		rate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rackstream_state_restore_records_per_second",
			Help: "Records per second applied by the current restore since it started.",
		}, storeLabels),
		eta: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rackstream_state_restore_eta_seconds",
			Help: "Estimated seconds until the current restore has caught up.",
		}, storeLabels),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rackstream_state_lag_records",
			Help: "Offsets the store is behind the last seen end of its changelog partition (restoring and standby stores).",
		}, storeLabels),
		checkpoint: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rackstream_state_checkpoint_offset",
			Help: "The store's checkpoint: the next changelog offset it will read.",
		}, storeLabels),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rackstream_state_store_errors_total",
			Help: "Storage and changelog errors that made a task unhealthy.",
		}, storeLabels),
		corrupted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rackstream_state_corrupted_stores_total",
			Help: "Damaged stores moved aside at open to be rebuilt from their changelogs from the start, by reason: journal (damage with intact records after it), manifest, table (found at open, or by a read or compaction while open), checkpoint, other.",
		}, []string{"task", "store", "reason"}),
		tornTails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rackstream_state_torn_journal_tails_total",
			Help: "Journal tails torn by a crash mid-write (nothing intact after the damage) that a store dropped at open, keeping its last complete batch and checkpoint: no rebuild.",
		}, storeLabels),
		levelDB: newLevelDBCollector(),
	}
	if reg != nil {
		m.levelDB = register(reg, m.levelDB)
		m.remaining = register(reg, m.remaining)
		m.restored = register(reg, m.restored)
		m.rate = register(reg, m.rate)
		m.eta = register(reg, m.eta)
		m.lag = register(reg, m.lag)
		m.checkpoint = register(reg, m.checkpoint)
		m.storeErrors = register(reg, m.storeErrors)
		m.corrupted = register(reg, m.corrupted)
		m.tornTails = register(reg, m.tornTails)
	}
	return m
}

// register registers c the one way (package promreg): two Managers sharing
// a registry share the series.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	return promreg.Register(reg, c)
}
