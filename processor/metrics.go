package processor

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rackstream/rackstream/internal/promreg"
)

// metrics are the runtime's Prometheus series (prefix rackstream_, names
// after Kafka Streams' where it has one). The per-task series are not
// here. Each task keeps its own (taskStats), and taskCollector reads the
// live tasks' at scrape time. So a task that moved away, or was dropped,
// leaves no series behind for alerts to fire on.
type metrics struct {
	commitLatency  prometheus.Histogram
	commitPause    prometheus.Histogram
	commitFailures prometheus.Counter
	rebuilds       prometheus.Counter
	rebalances     prometheus.Counter
	rebalanceTime  prometheus.Histogram
	tasks          *prometheus.GaugeVec // role: active, standby, warmup
	taskFailures   prometheus.Counter
	taskRestarts   prometheus.Counter
}

// newMetrics makes the runtime's series and registers them, with a
// collector of the live tasks' series, on reg (nil: none).
func newMetrics(reg prometheus.Registerer, live func() []*task) *metrics {
	m := &metrics{
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rackstream_commit_latency_seconds",
			Help:    "Time of one commit: the tasks' cuts, the wait for the changelog and output records, store batches with checkpoints, offset commit.",
			Buckets: prometheus.ExponentialBuckets(1e-3, 2, 14),
		}),
		commitPause: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rackstream_commit_pause_seconds",
			Help:    "Time a commit holds one task between two records, per pause: under at-least-once a chunk of its record cache written through ahead of its cut, or its cut (the rest of the cache written through, the stores' buffers frozen); under exactly-once the whole transaction.",
			Buckets: prometheus.ExponentialBuckets(1e-4, 2, 16),
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
		taskRestarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rackstream_task_restarts_total",
			Help: "Tasks stopped by an error that were restarted from their last commit after a backoff (at-least-once, at-most-once; exactly-once restarts them through its aborts).",
		}),
	}
	if reg != nil {
		// Unchecked (it describes nothing): its series come and go with
		// the tasks.
		_ = reg.Register(taskCollector{live})
		m.commitLatency = promreg.Register(reg, m.commitLatency)
		m.commitPause = promreg.Register(reg, m.commitPause)
		m.commitFailures = promreg.Register(reg, m.commitFailures)
		m.rebuilds = promreg.Register(reg, m.rebuilds)
		m.rebalances = promreg.Register(reg, m.rebalances)
		m.rebalanceTime = promreg.Register(reg, m.rebalanceTime)
		m.tasks = promreg.Register(reg, m.tasks)
		m.taskFailures = promreg.Register(reg, m.taskFailures)
		m.taskRestarts = promreg.Register(reg, m.taskRestarts)
	}
	return m
}

// taskStats are one task's series. They live as long as the task on this
// instance: taskCollector collects them from the live tasks at scrape time.
type taskStats struct {
	processed    prometheus.Counter
	latency      prometheus.Histogram
	endToEnd     prometheus.Histogram
	deadLettered *prometheus.CounterVec // stage
	skipped      *prometheus.CounterVec // stage
	lag          *prometheus.GaugeVec   // topic; the partition is the task
	late         *prometheus.CounterVec // store
}

func newTaskStats(id int32) *taskStats {
	task := prometheus.Labels{"task": taskLabel(id)}
	return &taskStats{
		processed: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "rackstream_process_records_total",
			Help:        "Input records whose processing finished (handled, dead-lettered or skipped), by task.",
			ConstLabels: task,
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        "rackstream_process_latency_seconds",
			Help:        "Time to process one input record (decode, handler with retries, staging its effects), by task; one record in 16 is timed.",
			Buckets:     prometheus.ExponentialBuckets(1e-6, 4, 12),
			ConstLabels: task,
		}),
		// Kafka Streams' record-e2e-latency (KIP-613), as a histogram: the
		// tail of how stale the state a query reads can be, from the record's
		// timestamp (CreateTime: when its producer made it) to the end of
		// its processing, fetch and queue included.
		endToEnd: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        "rackstream_record_e2e_latency_seconds",
			Help:        "Time from an input record's timestamp to the end of its processing, by task (the timed records: one in 16); a timestamp ahead of this instance's clock counts as 0.",
			Buckets:     prometheus.ExponentialBuckets(0.001, 2, 18),
			ConstLabels: task,
		}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "rackstream_dead_letter_records_total",
			Help:        "Poison records sent to the dead-letter topic, by task and stage (decode-key, decode-value, handler).",
			ConstLabels: task,
		}, []string{"stage"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "rackstream_skipped_records_total",
			Help:        "Poison records skipped under the error policy skip, by task and stage.",
			ConstLabels: task,
		}, []string{"stage"}),
		late: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "rackstream_window_late_records_total",
			Help:        "Windows a record came too late for (closed: grace passed), by task and store, counted once per window a record missed as Kafka Streams' dropped-records-total; a record dropped whole is also dead-lettered under the error policy dlq.",
			ConstLabels: task,
		}, []string{"store"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name:        "rackstream_consumer_lag_records",
			Help:        "Records between the last processed offset and the partition's high watermark, as of the last fetch.",
			ConstLabels: prometheus.Labels{"partition": taskLabel(id)},
		}, []string{"topic"}),
	}
}

// record counts one record whose processing finished, by its outcome;
// stage is the poison record's stage.
func (s *taskStats) record(out outcome, stage string) {
	s.processed.Inc()
	switch out {
	case outcomeLateDeadLettered:
		s.deadLettered.WithLabelValues(StageLate).Inc()
	case outcomeDeadLettered:
		s.deadLettered.WithLabelValues(stage).Inc()
	case outcomeSkipped:
		s.skipped.WithLabelValues(stage).Inc()
	}
}

func (s *taskStats) collect(ch chan<- prometheus.Metric) {
	s.processed.Collect(ch)
	s.latency.Collect(ch)
	s.endToEnd.Collect(ch)
	s.deadLettered.Collect(ch)
	s.skipped.Collect(ch)
	s.lag.Collect(ch)
	s.late.Collect(ch)
}

// taskCollector collects the series of the tasks live on this instance at
// scrape time (Prometheus' pattern for series that follow live objects): a
// task that is gone has none, with no clean-up to forget.
type taskCollector struct{ live func() []*task }

// Describe describes nothing: the collector is unchecked, as its series
// come and go with the tasks.
func (taskCollector) Describe(chan<- *prometheus.Desc) {}

func (c taskCollector) Collect(ch chan<- prometheus.Metric) {
	for _, t := range c.live() {
		t.stats.collect(ch)
		if st := t.proc.tt.pub.Load(); st >= 0 {
			ch <- prometheus.MustNewConstMetric(streamTimeDesc, prometheus.GaugeValue, float64(st)/1e3, taskLabel(t.id))
		}
	}
}

// streamTimeDesc is a task's stream time, collected from the live tasks
// that have one.
var streamTimeDesc = prometheus.NewDesc("rackstream_stream_time_seconds",
	"The task's stream time (the largest record timestamp it has seen, never going back), in seconds since the epoch; none before its first record.",
	[]string{"task"}, nil)
