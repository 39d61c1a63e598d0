package processor_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// gauges returns the values of the gauge family name in reg, by their
// labels' values joined with "/".
func gauges(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for i, l := range m.GetLabel() {
				if i > 0 {
					key += "/"
				}
				key += l.GetValue()
			}
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestGlobalTableMetricsFollowTheLiveTable: a global table's restore, lag,
// checkpoints and health are exported while the runtime holds it, read at
// scrape time, and gone once it stopped.
func TestGlobalTableMetricsFollowTheLiveTable(t *testing.T) {
	c := kafkatest.New(t)
	a := newEnrichApp(t, c)
	const users = 12
	a.setUsers(0, users, "v1")
	opts := testOptions(t, c.Brokers, "gm")
	reg := prometheus.NewRegistry()
	opts.Registerer = reg
	in := a.start(t, "gm", opts)
	kafkatest.Eventually(t, 2*time.Minute, "instance ready", func() bool { return allReady(in) })
	if got := gauges(t, reg, "rackstream_global_table_restoring"); got[a.users] != 0 || len(got) != 1 {
		t.Errorf("restoring = %v, want %s at 0", got, a.users)
	}
	if got := gauges(t, reg, "rackstream_global_table_restore_seconds"); len(got) != 1 {
		t.Errorf("restore_seconds = %v, want one series for %s", got, a.users)
	}
	if got := gauges(t, reg, "rackstream_global_table_failed"); got[a.users] != 0 || len(got) != 1 {
		t.Errorf("failed = %v, want %s at 0", got, a.users)
	}
	a.setUsers(0, users, "v2")
	kafkatest.Eventually(t, time.Minute, "checkpoints at every record, lag 0 on the 3 partitions", func() bool {
		var sum float64
		cps := gauges(t, reg, "rackstream_global_table_checkpoint_offset")
		for _, v := range cps {
			sum += v
		}
		lags := gauges(t, reg, "rackstream_global_table_lag_records")
		for _, v := range lags {
			if v != 0 {
				return false
			}
		}
		return len(cps) == 3 && len(lags) == 3 && sum == 2*users
	})
	in.stop(t)
	if got := gauges(t, reg, "rackstream_global_table_checkpoint_offset"); len(got) != 0 {
		t.Errorf("after stop: checkpoint series %v, want none", got)
	}
}
