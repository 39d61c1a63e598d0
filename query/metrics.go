package query

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rackstream/rackstream/internal/promreg"
)

// metrics are the HTTP layer's own metrics; the runtime's (records,
// restores, lags, placement quality) are the processor's.
type metrics struct {
	requests *prometheus.CounterVec   // route, code
	latency  *prometheus.HistogramVec // route
	forwards *prometheus.CounterVec   // route, result
	inFlight prometheus.Gauge
	codes    map[int]string
}

// Forward results, as the result label of rackstream_http_forwards_total.
const (
	resultOK       = "ok"       // the peer answered
	resultError    = "error"    // no answer: connection, TLS or timeout
	resultRejected = "rejected" // too many forwards in flight
	// resultBadEndpoint: not attempted, the member announces an endpoint
	// that is not host:port (or none): it gets no forwarded requests.
	resultBadEndpoint = "bad_endpoint"
)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rackstream_http_requests_total",
			Help: "HTTP requests answered, by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rackstream_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, forwarding included, by route.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
		forwards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rackstream_http_forwards_total",
			Help: "Requests forwarded to a peer instance, by route and result (ok, error, rejected, bad_endpoint: the peer announces no valid endpoint and is not asked).",
		}, []string{"route", "result"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rackstream_http_forwards_in_flight",
			Help: "Forwarded requests awaiting a peer's answer.",
		}),
		codes: make(map[int]string),
	}
	for _, c := range []int{200, 400, 401, 404, 405, 409, 500, 502, 503} {
		m.codes[c] = strconv.Itoa(c)
	}
	if reg != nil {
		// Servers sharing a registry share these series (promreg).
		m.requests = promreg.Register(reg, m.requests)
		m.latency = promreg.Register(reg, m.latency)
		m.forwards = promreg.Register(reg, m.forwards)
		m.inFlight = promreg.Register(reg, m.inFlight)
	}
	// Pre-create the common series so that dashboards see zeros, not gaps.
	for _, r := range []string{routeKeys, routeScan, routeWindows, routeWindowsScan, routeMetadata} {
		m.requests.WithLabelValues(r, "200")
		m.latency.WithLabelValues(r)
		for _, res := range []string{resultOK, resultError, resultRejected, resultBadEndpoint} {
			m.forwards.WithLabelValues(r, res)
		}
	}
	return m
}

func (m *metrics) code(c int) string {
	if s, ok := m.codes[c]; ok {
		return s
	}
	return strconv.Itoa(c)
}
