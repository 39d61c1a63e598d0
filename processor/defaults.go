package processor

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/state"
)

// DefaultCommitIntervalExactlyOnce is commit.interval.ms's default under
// processing.guarantee=exactly_once_v2 (Kafka Streams' 100 ms): each
// commit ends a transaction, and readers under read_committed see nothing
// newer.
const DefaultCommitIntervalExactlyOnce = 100 * time.Millisecond

// DefaultOptions returns the options NewRuntime uses for fields left at
// their zero value (Brokers and StateDir have none): the one place the
// runtime's defaults are written, beside state.DefaultOptions and
// assignor.DefaultSettings, whose values it carries. The configuration's
// key table shows its defaults from here.
func DefaultOptions() Options {
	st, bal := state.DefaultOptions(), balancer.DefaultSettings()
	return Options{
		LevelDB:           st.LevelDB,
		MemoryBytes:       st.MemoryBytes,
		CleanupDelay:      st.CleanupDelay,
		Capacity:          runtime.NumCPU(),
		Placement:         bal.Placement,
		ProbingInterval:   bal.ProbingInterval,
		Partitioner:       partition.Murmur2(),
		CacheMaxBytes:     10 << 20,
		CommitInterval:    30 * time.Second,
		Guarantee:         AtLeastOnce,
		ErrorPolicy:       PolicyDeadLetter,
		ReplicationFactor: -1,
		ChangelogLeaders:  ChangelogLeadersAligned,
		SessionTimeout:    10 * time.Second,
		ShutdownTimeout:   30 * time.Second,
		retry:             DefaultRetry(),
		heartbeatInterval: bal.HeartbeatInterval,
		rebuildBackoff:    time.Second,
		// 5 s, not longer: a broker back from an outage finds every
		// instance's next rebuild at most this far away, and one failed
		// dial per instance per 5 s is no load on a broker that is down.
		maxRebuildBackoff:     5 * time.Second,
		topologyCheckInterval: 30 * time.Second,
		maxPollRecords:        10000,
		taskQueue:             20000,
		// Kafka Streams' default.
		RepartitionPurgeInterval: 30 * time.Second,
	}
}

// DefaultRetry returns the default retries of a failing handler: 3
// attempts, 100 ms doubling to 2 s.
func DefaultRetry() Retry {
	return Retry{Attempts: 3, Backoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second}
}

// DeadLetterTopic returns the default dead-letter topic of an application,
// <appID>-dlq (errors.dead.letter.queue.topic.name's default).
func DeadLetterTopic(appID string) string { return appID + "-dlq" }

// orDefault reads an option whose zero value is not a setting: 0 is def.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// orZero reads an option whose zero value is a setting: 0 is def, and
// Zero asks for 0.
func orZero[T ~int | ~int16 | ~int32 | ~int64](v, def T) T {
	switch v {
	case 0:
		return def
	case Zero:
		return 0
	}
	return v
}

// resolve replaces each field of o left at its zero value by its default
// (CommitInterval's depends on Guarantee) and each Zero by 0, then checks
// the result.
func (o *Options) resolve(appID string) error {
	d := DefaultOptions()
	o.LevelDB = o.LevelDB.OrDefaults()
	o.MemoryBytes = orZero(o.MemoryBytes, d.MemoryBytes)
	o.CleanupDelay = orZero(o.CleanupDelay, d.CleanupDelay)
	p := &o.Placement
	p.NumStandbyReplicas = orZero(p.NumStandbyReplicas, d.Placement.NumStandbyReplicas)
	p.AcceptableRecoveryLag = orZero(p.AcceptableRecoveryLag, d.Placement.AcceptableRecoveryLag)
	p.MaxWarmupReplicas = orDefault(p.MaxWarmupReplicas, d.Placement.MaxWarmupReplicas)
	p.RackAwareAssignmentStrategy = orDefault(p.RackAwareAssignmentStrategy, d.Placement.RackAwareAssignmentStrategy)
	p.RackAwareAssignmentTrafficCost = orZero(p.RackAwareAssignmentTrafficCost, d.Placement.RackAwareAssignmentTrafficCost)
	p.RackAwareAssignmentNonOverlapCost = orZero(p.RackAwareAssignmentNonOverlapCost, d.Placement.RackAwareAssignmentNonOverlapCost)
	o.Capacity = orDefault(o.Capacity, d.Capacity)
	o.ProbingInterval = orDefault(o.ProbingInterval, d.ProbingInterval)
	if o.Partitioner == nil {
		o.Partitioner = d.Partitioner
	}
	o.CacheMaxBytes = orZero(o.CacheMaxBytes, d.CacheMaxBytes)
	o.Guarantee = orDefault(o.Guarantee, d.Guarantee)
	if o.Guarantee == ExactlyOnceV2 {
		d.CommitInterval = DefaultCommitIntervalExactlyOnce
	}
	o.CommitInterval = orZero(o.CommitInterval, d.CommitInterval)
	o.ErrorPolicy = orDefault(o.ErrorPolicy, d.ErrorPolicy)
	o.ReplicationFactor = orDefault(o.ReplicationFactor, d.ReplicationFactor)
	o.RepartitionPurgeInterval = orZero(o.RepartitionPurgeInterval, d.RepartitionPurgeInterval)
	o.ChangelogLeaders = orDefault(o.ChangelogLeaders, d.ChangelogLeaders)
	o.SessionTimeout = orDefault(o.SessionTimeout, d.SessionTimeout)
	o.ShutdownTimeout = orZero(o.ShutdownTimeout, d.ShutdownTimeout)
	o.retry = orDefault(o.retry, d.retry)
	o.heartbeatInterval = orDefault(o.heartbeatInterval, d.heartbeatInterval)
	o.rebuildBackoff = orZero(o.rebuildBackoff, d.rebuildBackoff)
	o.maxRebuildBackoff = orDefault(o.maxRebuildBackoff, d.maxRebuildBackoff)
	o.topologyCheckInterval = orDefault(o.topologyCheckInterval, d.topologyCheckInterval)
	o.maxPollRecords = orDefault(o.maxPollRecords, d.maxPollRecords)
	o.taskQueue = orDefault(o.taskQueue, d.taskQueue)
	return o.check(appID)
}

// check reports the fields of a resolved o (0 means 0) that are out of
// range, naming each with its configuration key, and sets the fields that
// derive from others: DLQTopic ("" is DeadLetterTopic(appID)), Logger (nil
// is slog.Default()) and, under a memory budget, CacheMaxBytes (at most
// its part: state.RecordCacheBytes).
func (o *Options) check(appID string) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("processor: "+format, args...)) }
	if len(o.Brokers) == 0 {
		bad("no brokers (bootstrap.servers)")
	}
	if o.StateDir == "" {
		bad("no state directory (state.dir)")
	}
	if err := o.LevelDB.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.MemoryBytes < 0 {
		bad("MemoryBytes (state.memory.bytes) %d: must be at least 0, or Zero for the per-store sizes", o.MemoryBytes)
	}
	if o.CleanupDelay < 0 {
		bad("CleanupDelay (state.cleanup.delay.ms) %v: must be at least 0, or Zero to delete at the next cleanup", o.CleanupDelay)
	}
	if err := o.Placement.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("processor: %w", err))
	}
	if o.Capacity < 1 {
		bad("Capacity (num.stream.threads) %d: must be at least 1", o.Capacity)
	}
	if o.ProbingInterval < balancer.MinProbingInterval {
		bad("ProbingInterval (probing.rebalance.interval.ms) %v: must be at least %v", o.ProbingInterval, balancer.MinProbingInterval)
	}
	if o.CacheMaxBytes < 0 {
		bad("CacheMaxBytes (statestore.cache.max.bytes) %d: must be at least 0, or Zero for no record cache", o.CacheMaxBytes)
	}
	if o.CommitInterval < 0 {
		bad("CommitInterval (commit.interval.ms) %v: must be at least 0, or Zero to commit after every batch", o.CommitInterval)
	}
	if _, err := ParseGuarantee(string(o.Guarantee)); err != nil {
		bad("Guarantee (processing.guarantee) %q: must be at_least_once, exactly_once_v2 or at_most_once", o.Guarantee)
	}
	if o.Guarantee == ExactlyOnceV2 && o.CommitInterval >= TransactionTimeout {
		bad("CommitInterval (commit.interval.ms) %v under ExactlyOnceV2: must be below the transaction timeout %v (DefaultCommitIntervalExactlyOnce is %v)", o.CommitInterval, TransactionTimeout, DefaultCommitIntervalExactlyOnce)
	}
	if _, err := ParseErrorPolicy(string(o.ErrorPolicy)); err != nil {
		bad("ErrorPolicy (processing.exception.handler) %q: must be dlq, skip or fail", o.ErrorPolicy)
	}
	if o.ReplicationFactor == 0 || o.ReplicationFactor < -1 {
		bad("ReplicationFactor (replication.factor) %d: must be -1 (the broker's default) or at least 1", o.ReplicationFactor)
	}
	if o.RepartitionPurgeInterval < 0 {
		bad("RepartitionPurgeInterval (repartition.purge.interval.ms) %v: must be at least 0, or Zero to purge after every commit", o.RepartitionPurgeInterval)
	}
	if o.ChangelogLeaders != ChangelogLeadersAligned && o.ChangelogLeaders != ChangelogLeadersBroker {
		bad("ChangelogLeaders (changelog.leader.alignment) %q: must be %s or %s", o.ChangelogLeaders, ChangelogLeadersAligned, ChangelogLeadersBroker)
	}
	if o.SessionTimeout <= 0 {
		bad("SessionTimeout (session.timeout.ms) %v: must be positive", o.SessionTimeout)
	}
	if o.ShutdownTimeout < 0 {
		bad("ShutdownTimeout (shutdown.timeout.ms) %v: must be at least 0, or Zero not to wait", o.ShutdownTimeout)
	}
	if o.retry.Attempts < 1 || o.retry.Backoff < 0 || o.retry.MaxBackoff < 0 {
		bad("retry %+v: want at least 1 attempt and backoffs of at least 0", o.retry)
	}
	if o.heartbeatInterval < time.Millisecond || o.rebuildBackoff < 0 || o.maxRebuildBackoff < 0 ||
		o.topologyCheckInterval <= 0 || o.maxPollRecords < 1 || o.taskQueue < 1 {
		bad("internal knobs out of range: heartbeat %v, rebuild backoff %v to %v, topology check %v, poll %d, task queue %d",
			o.heartbeatInterval, o.rebuildBackoff, o.maxRebuildBackoff, o.topologyCheckInterval, o.maxPollRecords, o.taskQueue)
	}
	if o.MemoryBytes > 0 {
		// The budget bounds the cache by its part: a smaller cache, or
		// one turned off, stays as it is.
		o.CacheMaxBytes = min(o.CacheMaxBytes, state.RecordCacheBytes(o.MemoryBytes))
	}
	if o.DLQTopic == "" {
		o.DLQTopic = DeadLetterTopic(appID)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return errors.Join(errs...)
}
