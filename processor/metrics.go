package processor

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the runtime's Prometheus series (prefix rackstream_, names
// after Kafka Streams' where it has one).
type metrics struct {
	processed      *prometheus.CounterVec   // task
	processLatency *prometheus.HistogramVec // task
	deadLettered   *prometheus.CounterVec   // task, stage
	skipped        *prometheus.CounterVec   // task, stage
	consumerLag    *prometheus.GaugeVec     // topic, partition
	commitLatency  prometheus.Histogram
	commitFailures prometheus.Counter
	rebuilds       prometheus.Counter
	rebalances     prometheus.Counter
	rebalanceTime  prometheus.Histogram
	tasks          *prometheus.GaugeVec // role: active, standby, warmup
	taskFailures   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rackstream_process_records_total",
			Help: "Input records whose processing finished (handled, dead-lettered or skipped), by task.",
		}, []string{"task"}),
		processLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rackstream_process_latency_seconds",
			Help:    "Time to process one input record (decode, handler with retries, staging its effects), by task.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12),
		}, []string{"task"}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rackstream_dead_letter_records_total",
			Help: "Poison records sent to the dead-letter topic, by task and stage (decode-key, decode-value, handler).",
		}, []string{"task", "stage"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rackstream_skipped_records_total",
			Help: "Poison records skipped under the error policy skip, by task and stage.",
		}, []string{"task", "stage"}),
		consumerLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rackstream_consumer_lag_records",
			Help: "Records between the last processed offset and the partition's high watermark, as of the last fetch.",
		}, []string{"topic", "partition"}),
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rackstream_commit_latency_seconds",
			Help:    "Time of one commit: flush of changelog and outputs, store batches with checkpoints, offset commit.",
			Buckets: prometheus.ExponentialBuckets(1e-3, 2, 14),
		}),
		commitFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rackstream_commit_failures_total",
			Help: "Commits that failed (produce, store or offset commit error); nothing past the last good commit was committed.",
		}),
		rebuilds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rackstream_client_rebuilds_total",
			Help: "Kafka clients rebuilt after a fatal client error.",
		}),
		rebalances: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rackstream_rebalances_total",
			Help: "Group generations this instance received an assignment in.",
		}),
		rebalanceTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rackstream_rebalance_duration_seconds",
			Help:    "Time from the start of a revocation (or of joining) to the next assignment.",
			Buckets: prometheus.ExponentialBuckets(1e-2, 2, 14),
		}),
		tasks: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rackstream_tasks",
			Help: "Tasks on this instance by role: active, standby, warmup.",
		}, []string{"role"}),
		taskFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rackstream_task_failures_total",
			Help: "Tasks stopped by an error (error policy fail, or a store failure).",
		}),
	}
	if reg != nil {
		m.processed = register(reg, m.processed)
		m.processLatency = register(reg, m.processLatency)
		m.deadLettered = register(reg, m.deadLettered)
		m.skipped = register(reg, m.skipped)
		m.consumerLag = register(reg, m.consumerLag)
		m.commitLatency = register(reg, m.commitLatency)
		m.commitFailures = register(reg, m.commitFailures)
		m.rebuilds = register(reg, m.rebuilds)
		m.rebalances = register(reg, m.rebalances)
		m.rebalanceTime = register(reg, m.rebalanceTime)
		m.tasks = register(reg, m.tasks)
		m.taskFailures = register(reg, m.taskFailures)
	}
	return m
}

// register registers c, or returns the collector already registered under
// its name, so that instances sharing a registry share the series.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}
