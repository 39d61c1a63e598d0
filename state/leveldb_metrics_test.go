package state

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// TestLevelDBStallSeriesFollowTheOpenStores: the write-stall series are read
// from the open stores at scrape time. Every store of two managers sharing
// a registry has them. Level 0 counts the tables a memtable flush made. A
// closed store's series are gone.
func TestLevelDBStallSeriesFollowTheOpenStores(t *testing.T) {
	e := newEnv(t, 2, "s")
	reg := prometheus.NewRegistry()
	small := func(o *Options) {
		o.Registerer = reg
		o.MemoryBytes, o.LevelDB.WriteBufferBytes = 0, minWriteBuffer // the per-store size, not a budget's share
	}
	m1 := e.open(t.TempDir(), small)
	m2 := e.open(t.TempDir(), small)
	p := e.producer()
	t0, t1 := e.activeTask(m1, 0, p), e.activeTask(m2, 1, p)
	for _, name := range []string{"rackstream_state_write_stall_seconds_total", "rackstream_state_write_stalls_total", "rackstream_state_write_paused", "rackstream_state_level0_tables"} {
		if got := storeSeries(t, reg, name); fmt.Sprint(got) != "map[0/s:0 1/s:0]" {
			t.Errorf("%s = %v, want tasks 0 and 1 at 0", name, got)
		}
	}
	// Twice the memtable's size in one store's commits: LevelDB flushes a
	// memtable to a level-0 table (it compacts level 0 only from 4 tables).
	value := strings.Repeat("v", 1000)
	for i := range 2 * minWriteBuffer / len(value) {
		if err := t0.Store("s").Put(fmt.Appendf(nil, "key-%06d", i), []byte(value)); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			e.commit(t0, p)
		}
	}
	e.commit(t0, p)
	kafkatest.Poll(t, time.Minute, 10*time.Millisecond, "a level-0 table in task 0's store", func() bool {
		return storeSeries(t, reg, "rackstream_state_level0_tables")["0/s"] >= 1
	})
	must(t, t1.Close())
	if got := storeSeries(t, reg, "rackstream_state_level0_tables"); len(got) != 1 {
		t.Fatalf("level-0 series after task 1 closed: %v, want task 0's only", got)
	}
	must(t, m1.Close())
	if got := storeSeries(t, reg, "rackstream_state_write_paused"); len(got) != 0 {
		t.Fatalf("write-paused series after both closed: %v, want none", got)
	}
}

// storeSeries gathers name's series from reg by "task/store".
func storeSeries(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["task"]+"/"+labels["store"]] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}
