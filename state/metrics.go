package state

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rackstream/rackstream/internal/promreg"
)

// The package's series describe the open stores, labelled by task and
// store. One storeCollector reads them from the live stores at scrape time:
// a store whose task closed, or moved to another instance, has no series,
// and there is no clean-up to forget. This is client_golang's pattern for
// series that follow live objects.
//
// Gauges read the store's live state (checkpoint, lag) or what its apply
// path last published (storeStats). Counters live in the store: they count
// from its open, carry that instant as their created timestamp, and start
// again from zero when the task reopens here. Prometheus reads that as a
// counter reset, which rate() and increase() handle.

var storeLabels = []string{"task", "store"}

var (
	remainingDesc = prometheus.NewDesc("rackstream_state_restore_remaining_records",
		"Changelog records (offsets) left to restore in the current restore; it only goes down during a restore, and is 0 when none is running.",
		storeLabels, nil)
	restoredDesc = prometheus.NewDesc("rackstream_state_restored_records_total",
		"Changelog records applied to the store by restore and standby tailing. Counts from the store's open.",
		storeLabels, nil)
	rateDesc = prometheus.NewDesc("rackstream_state_restore_records_per_second",
		"Records per second applied by the store's current or last restore since it started.",
		storeLabels, nil)
	etaDesc = prometheus.NewDesc("rackstream_state_restore_eta_seconds",
		"Estimated seconds until the store's current restore has caught up; 0 when none is running.",
		storeLabels, nil)
	lagDesc = prometheus.NewDesc("rackstream_state_lag_records",
		"Offsets the store is behind the last end of its changelog partition it has seen; no series until it has seen one. An active store writes its changelog: 0.",
		storeLabels, nil)
	checkpointDesc = prometheus.NewDesc("rackstream_state_checkpoint_offset",
		"The store's checkpoint: the next changelog offset it will read.",
		storeLabels, nil)
	storeErrorsDesc = prometheus.NewDesc("rackstream_state_store_errors_total",
		"Storage and changelog errors of the store that made its task unhealthy. Counts from the store's open.",
		storeLabels, nil)
	corruptedDesc = prometheus.NewDesc("rackstream_state_corrupted_stores_total",
		"Times the damaged store was moved aside at open to be rebuilt from its changelog from the start, by reason: journal (damage with intact records after it), manifest, table (found at open, or by a read or compaction while open), checkpoint, other. Counts from the store's open; a reason has a series once it happened.",
		append(storeLabels, "reason"), nil)
	tornTailsDesc = prometheus.NewDesc("rackstream_state_torn_journal_tails_total",
		"Journal tails torn by a crash mid-write (nothing intact after the damage) that the store dropped at open, keeping its last complete batch and checkpoint: no rebuild. Counts from the store's open.",
		storeLabels, nil)
)

// rebuildReasons are the reason label's values, in storeStats.rebuilt's
// order.
var rebuildReasons = [...]string{reasonJournal, reasonManifest, reasonTable, reasonCheckpoint, reasonOther}

// storeStats are the values an open store publishes for its series. The
// store's open, its task and the apply path write them; the collector reads
// them at scrape time.
type storeStats struct {
	// opened is when the counters started; set before the store's
	// database is first opened, never changed after.
	opened    time.Time
	remaining atomic.Int64
	rate      atomicFloat
	eta       atomicFloat
	restored  atomic.Int64
	errors    atomic.Int64
	tornTails atomic.Int64
	rebuilt   [len(rebuildReasons)]atomic.Int64
}

// rebuild counts one rebuild of the store for reason.
func (st *storeStats) rebuild(reason string) {
	i := slices.Index(rebuildReasons[:], reason)
	if i < 0 {
		i = slices.Index(rebuildReasons[:], reasonOther)
	}
	st.rebuilt[i].Add(1)
}

// atomicFloat is a float64 read and written atomically.
type atomicFloat struct{ bits atomic.Uint64 }

func (f *atomicFloat) Store(v float64) { f.bits.Store(math.Float64bits(v)) }
func (f *atomicFloat) Load() float64   { return math.Float64frombits(f.bits.Load()) }

// storeCollector collects the series of the stores open in its Managers.
// Managers sharing a registry share the collector (promreg), so it keeps
// the set of Managers whose stores it reports. When two of them hold the
// same task and store, the first opened has the series: a scrape never
// fails on a duplicate.
type storeCollector struct {
	// mu guards managers, kept in the order they were added.
	mu       sync.Mutex
	managers []*Manager
}

// newMetrics returns the collector of a Manager's stores, registered on
// reg (nil: not registered).
func newMetrics(reg prometheus.Registerer) *storeCollector {
	c := &storeCollector{}
	if reg != nil {
		c = promreg.Register(reg, c)
	}
	return c
}

func (c *storeCollector) add(m *Manager) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.managers = append(c.managers, m)
}

func (c *storeCollector) remove(m *Manager) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.managers = slices.DeleteFunc(c.managers, func(x *Manager) bool { return x == m })
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{remainingDesc, restoredDesc, rateDesc, etaDesc, lagDesc,
		checkpointDesc, storeErrorsDesc, corruptedDesc, tornTailsDesc} {
		ch <- d
	}
	describeLevelDB(ch)
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	managers := slices.Clone(c.managers)
	c.mu.Unlock()
	type key struct {
		task  int32
		store string
	}
	seen := make(map[key]bool)
	for _, m := range managers {
		for _, s := range m.liveStores() {
			k := key{s.partition, s.name}
			if seen[k] {
				continue
			}
			seen[k] = true
			s.collect(ch)
		}
	}
}

// collect sends the store's series.
func (s *DB) collect(ch chan<- prometheus.Metric) {
	labels := s.labels()
	st := &s.stats
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, lv ...string) {
		ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(d, prometheus.CounterValue, float64(v), st.opened, lv...)
	}
	gauge(checkpointDesc, float64(s.Checkpoint()))
	if lag := s.Lag(); lag >= 0 {
		gauge(lagDesc, float64(lag))
	}
	gauge(remainingDesc, float64(st.remaining.Load()))
	gauge(rateDesc, st.rate.Load())
	gauge(etaDesc, st.eta.Load())
	counter(restoredDesc, st.restored.Load(), labels...)
	counter(storeErrorsDesc, st.errors.Load(), labels...)
	counter(tornTailsDesc, st.tornTails.Load(), labels...)
	for i := range st.rebuilt {
		if n := st.rebuilt[i].Load(); n > 0 {
			counter(corruptedDesc, n, append(labels, rebuildReasons[i])...)
		}
	}
	s.collectLevelDB(ch, labels)
}

// liveStores returns the stores of the Manager's open tasks, for a scrape.
// A task being closed has none. The stores are read after m.mu is
// released.
func (m *Manager) liveStores() []*DB {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*DB
	for _, t := range m.tasks {
		if t.Role() != RoleClosed {
			out = append(out, t.stores...)
		}
	}
	return out
}

// endRestore publishes that no restore of the store is running.
func (st *storeStats) endRestore() {
	st.remaining.Store(0)
	st.eta.Store(0)
}
