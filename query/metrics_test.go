package query

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// forwards returns rackstream_http_forwards_total{route, result} on n.
func forwards(t *testing.T, n *node, route, result string) float64 {
	t.Helper()
	return counter(t, n, "rackstream_http_forwards_total", map[string]string{"route": route, "result": result})
}

func counter(t *testing.T, n *node, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := n.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			return value(m)
		}
	}
	return 0
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}
