package state

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/syndtr/goleveldb/leveldb/storage"
)

// perStoreSeries are the families every open store has, whatever it does.
var perStoreSeries = []string{
	"rackstream_state_lag_records",
	"rackstream_state_checkpoint_offset",
	"rackstream_state_restore_remaining_records",
	"rackstream_state_restore_records_per_second",
	"rackstream_state_restore_eta_seconds",
	"rackstream_state_restored_records_total",
	"rackstream_state_store_errors_total",
	"rackstream_state_torn_journal_tails_total",
	"rackstream_state_write_stall_seconds_total",
	"rackstream_state_write_stalls_total",
	"rackstream_state_write_paused",
	"rackstream_state_level0_tables",
}

// TestStoreSeriesLeaveWithTheirTask: every per-store series is read from
// the open stores at scrape time. A task that closes (it moved to another
// instance) leaves no series behind, a failed one included, and a closed
// Manager leaves none at all.
func TestStoreSeriesLeaveWithTheirTask(t *testing.T) {
	e := newEnv(t, 2, "s")
	src := e.open(t.TempDir())
	p := e.producer()
	for id := range int32(2) {
		task := e.activeTask(src, id, p)
		for i := range 500 {
			must(t, task.Store("s").Put([]byte("k"+strconv.Itoa(i)), []byte("v")))
		}
		e.commit(task, p)
		must(t, task.Close())
	}

	reg := prometheus.NewRegistry()
	var full atomic.Bool
	task1 := string(filepath.Separator) + "1" + string(filepath.Separator)
	m := e.open(t.TempDir(), func(o *Options) {
		o.Registerer = reg
		o.WrapStorage = func(path string, s storage.Storage) storage.Storage {
			if strings.Contains(path, task1) {
				return fullDisk{s, &full}
			}
			return s
		}
	})
	// Scrapes run beside the restores and the writes, as Prometheus' do.
	stop, scraped := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				scraped <- nil
				return
			default:
			}
			if _, err := reg.Gather(); err != nil {
				scraped <- err
				return
			}
		}
	}()
	standby, err := m.OpenTask(0, e.stores)
	must(t, err)
	must(t, standby.Restore(e.ctx()))
	must(t, standby.StartStandby())
	failed := e.activeTask(m, 1, p)
	close(stop)
	must(t, <-scraped)
	must(t, failed.Store("s").Put([]byte("k"), []byte("w")))
	full.Store(true)
	must(t, p.Flush(e.ctx()))
	if err := failed.Commit(); err == nil {
		t.Fatal("a commit to a full disk succeeded")
	}

	for _, name := range perStoreSeries {
		if got := seriesKeys(storeSeries(t, reg, name)); got != "0/s 1/s" {
			t.Errorf("%s series %q with both tasks open; want 0/s 1/s", name, got)
		}
	}
	if got := storeSeries(t, reg, "rackstream_state_restored_records_total"); got["0/s"] != 500 || got["1/s"] != 500 {
		t.Errorf("restored records %v; want 500 for each task", got)
	}
	if got := storeSeries(t, reg, "rackstream_state_store_errors_total"); got["0/s"] != 0 || got["1/s"] != 1 {
		t.Errorf("store errors %v; want 0 for task 0 and 1 for the failed task 1", got)
	}

	must(t, failed.Close())
	for name, tasks := range stateSeriesTasks(t, reg) {
		if slices.Contains(tasks, "1") {
			t.Errorf("%s still has a series for task 1 after it closed (tasks %v)", name, tasks)
		}
	}
	if got := seriesKeys(storeSeries(t, reg, "rackstream_state_checkpoint_offset")); got != "0/s" {
		t.Errorf("checkpoint series %q after task 1 closed; want task 0's", got)
	}

	must(t, m.Close())
	if got := stateSeriesTasks(t, reg); len(got) != 0 {
		t.Errorf("series left after the Manager closed: %v", got)
	}
}

// TestStoreCountersCountFromTheStoresOpen: a store's counters start at its
// open, which they carry as their created timestamp, and start again at
// zero when the task reopens on the instance.
func TestStoreCountersCountFromTheStoresOpen(t *testing.T) {
	e := newEnv(t, 1, "s")
	src := e.open(t.TempDir())
	p := e.producer()
	task := e.activeTask(src, 0, p)
	for i := range 300 {
		must(t, task.Store("s").Put([]byte("k"+strconv.Itoa(i)), []byte("v")))
	}
	e.commit(task, p)

	reg := prometheus.NewRegistry()
	m := e.open(t.TempDir(), func(o *Options) { o.Registerer = reg })
	before := time.Now()
	standby, err := m.OpenTask(0, e.stores)
	must(t, err)
	must(t, standby.Restore(e.ctx()))
	if got := storeSeries(t, reg, "rackstream_state_restored_records_total")["0/s"]; got != 300 {
		t.Fatalf("restored records %v after the restore; want 300", got)
	}
	created := counterCreated(t, reg, "rackstream_state_restored_records_total")
	if created.Before(before.Add(-time.Second)) || created.After(time.Now()) {
		t.Fatalf("restored records created at %v; want the store's open, near %v", created, before)
	}
	must(t, standby.Close())
	again, err := m.OpenTask(0, e.stores)
	must(t, err)
	must(t, again.Restore(e.ctx())) // already caught up: nothing applied
	if got := storeSeries(t, reg, "rackstream_state_restored_records_total")["0/s"]; got != 0 {
		t.Fatalf("restored records %v after the task reopened; want 0, counted from the new open", got)
	}
}

// TestManagersSharingARegistryScrapeOnce: two Managers of one registry
// holding the same task and store (an embedding program's mistake) do not
// break the scrape: the store has one series.
func TestManagersSharingARegistryScrapeOnce(t *testing.T) {
	e := newEnv(t, 1, "s")
	reg := prometheus.NewRegistry()
	p := e.producer()
	for range 2 {
		m := e.open(t.TempDir(), func(o *Options) { o.Registerer = reg })
		e.activeTask(m, 0, p)
	}
	if got := seriesKeys(storeSeries(t, reg, "rackstream_state_checkpoint_offset")); got != "0/s" {
		t.Fatalf("checkpoint series %q; want one for 0/s", got)
	}
}

// seriesKeys lists a storeSeries result's keys, sorted and space-separated.
func seriesKeys(series map[string]float64) string {
	keys := make([]string, 0, len(series))
	for k := range series {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, " ")
}

// stateSeriesTasks maps each rackstream_state_ family with series to the
// task labels of its series.
func stateSeriesTasks(t *testing.T, reg *prometheus.Registry) map[string][]string {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	out := map[string][]string{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "rackstream_state_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "task" {
					out[mf.GetName()] = append(out[mf.GetName()], l.GetValue())
				}
			}
		}
	}
	return out
}

// counterCreated returns the created timestamp of name's only series.
func counterCreated(t *testing.T, reg *prometheus.Registry, name string) time.Time {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			if ct := mf.GetMetric()[0].GetCounter().GetCreatedTimestamp(); ct != nil {
				return ct.AsTime()
			}
			t.Fatalf("%s has no created timestamp", name)
		}
	}
	t.Fatalf("%s does not have exactly one series", name)
	return time.Time{}
}

// managerSeries gathers name's series of m's open stores, by "task/store",
// through a registry of their own.
func managerSeries(t *testing.T, m *Manager, name string) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	newMetrics(reg).add(m)
	return storeSeries(t, reg, name)
}

// rebuilds returns how many times m rebuilt store s of task 0 for reason.
func rebuilds(t *testing.T, m *Manager, reason string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	newMetrics(reg).add(m)
	mfs, err := reg.Gather()
	must(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "rackstream_state_corrupted_stores_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["task"] == "0" && labels["store"] == "s" && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
