package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestASecondRegistrationSharesTheFirstsSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "x_total", Help: "x"}
	first := Register(reg, prometheus.NewCounter(opts))
	second := Register(reg, prometheus.NewCounter(opts))
	if first != second {
		t.Fatal("the second registration got its own counter; want the first's")
	}
}

func TestAConflictingRegistrationPanics(t *testing.T) {
	reg := prometheus.NewRegistry()
	Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"}))
	defer func() {
		if recover() == nil {
			t.Fatal("registering x_total again with a label did not panic")
		}
	}()
	Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"l"}))
}
