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

// DefaultOptions returns the defaults of every tunable field of Options:
// the one place they are written (the configuration's key table takes its
// defaults from here, and from state.DefaultOptions and
// balancer.DefaultSettings, which these embed). Set Brokers and StateDir
// and change what you need:
//
//	o := processor.DefaultOptions()
//	o.Brokers, o.StateDir = []string{"kafka:9092"}, "/var/lib/rackstream"
//	rt, err := processor.NewRuntime(topo, o)
//
// A field left at its zero value means zero, never "the default": a zero
// CommitInterval commits after every batch, a zero ShutdownTimeout does not
// wait for in-flight records, a zero CacheMaxBytes turns the record cache
// off. Where zero makes no sense (a zero session timeout, no partitioner)
// NewRuntime rejects it, naming the field and its configuration key.
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
		Retry:             DefaultRetry(),
		ReplicationFactor: -1,
		SessionTimeout:    10 * time.Second,
		HeartbeatInterval: bal.HeartbeatInterval,
		ShutdownTimeout:   30 * time.Second,
		RebuildBackoff:    time.Second,
		// 5 s, not longer: a broker back from an outage finds every
		// instance's next rebuild at most this far away (the fault
		// suite's broker kill under exactly-once waited out 16 s
		// doublings with the broker up), and one failed dial per
		// instance per 5 s is no load on a broker that is down
		// (Kafka's own reconnect.backoff.max.ms is 1 s).
		MaxRebuildBackoff:     5 * time.Second,
		TopologyCheckInterval: 30 * time.Second,
		MaxPollRecords:        10000,
		TaskQueue:             20000,
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

// check reports the fields of o that no value of theirs makes sense at,
// naming each with its configuration key, and sets the fields that derive
// from other values: DLQTopic ("" is DeadLetterTopic(appID)), Logger
// (nil is slog.Default()) and, under a memory budget, CacheMaxBytes (at
// most its part: state.RecordCacheBytes).
func (o *Options) check(appID string) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("processor: "+format, args...)) }
	if len(o.Brokers) == 0 {
		bad("no brokers (bootstrap.servers)")
	}
	if o.StateDir == "" {
		bad("no state directory (state.dir)")
	}
	if o.CleanupDelay < 0 {
		bad("CleanupDelay (state.cleanup.delay.ms) %v: must be at least 0", o.CleanupDelay)
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
	if o.Partitioner == nil {
		bad("no Partitioner (partitioner)")
	}
	if o.CacheMaxBytes < 0 {
		bad("CacheMaxBytes (statestore.cache.max.bytes) %d: must be at least 0 (0: no record cache)", o.CacheMaxBytes)
	}
	if o.MemoryBytes < 0 {
		bad("MemoryBytes (state.memory.bytes) %d: must be at least 0 (0: the per-store sizes)", o.MemoryBytes)
	} else if o.MemoryBytes > 0 {
		// The budget bounds the cache by its part: a smaller cache, or
		// one turned off (0), stays as it is.
		o.CacheMaxBytes = min(o.CacheMaxBytes, state.RecordCacheBytes(o.MemoryBytes))
	}
	if o.CommitInterval < 0 {
		bad("CommitInterval (commit.interval.ms) %v: must be at least 0 (0: commit after every batch)", o.CommitInterval)
	}
	if _, err := ParseGuarantee(string(o.Guarantee)); err != nil {
		bad("Guarantee (processing.guarantee) %q: must be at_least_once, exactly_once_v2 or at_most_once", o.Guarantee)
	}
	if o.Guarantee == ExactlyOnceV2 && o.CommitInterval >= TransactionTimeout {
		bad("CommitInterval (commit.interval.ms) %v under ExactlyOnceV2: must be below the transaction timeout %v (DefaultCommitIntervalExactlyOnce is %v)", o.CommitInterval, TransactionTimeout, DefaultCommitIntervalExactlyOnce)
	}
	if _, err := ParseErrorPolicy(string(o.ErrorPolicy)); err != nil || o.ErrorPolicy == "" {
		bad("ErrorPolicy (processing.exception.handler) %q: must be dlq, skip or fail", o.ErrorPolicy)
	}
	if o.Retry.Attempts < 1 {
		bad("Retry.Attempts %d: must be at least 1 (1: no retries)", o.Retry.Attempts)
	}
	if o.Retry.Backoff < 0 || o.Retry.MaxBackoff < 0 {
		bad("Retry backoffs %v and %v: must be at least 0", o.Retry.Backoff, o.Retry.MaxBackoff)
	}
	if o.ReplicationFactor == 0 || o.ReplicationFactor < -1 {
		bad("ReplicationFactor (replication.factor) %d: must be -1 (the broker's default) or at least 1", o.ReplicationFactor)
	}
	if o.SessionTimeout <= 0 {
		bad("SessionTimeout (session.timeout.ms) %v: must be positive", o.SessionTimeout)
	}
	if o.HeartbeatInterval < time.Millisecond {
		bad("HeartbeatInterval %v: must be at least 1ms", o.HeartbeatInterval)
	}
	if o.ShutdownTimeout < 0 {
		bad("ShutdownTimeout (shutdown.timeout.ms) %v: must be at least 0 (0: do not wait)", o.ShutdownTimeout)
	}
	if o.RebuildBackoff < 0 || o.MaxRebuildBackoff < 0 {
		bad("RebuildBackoff %v and MaxRebuildBackoff %v: must be at least 0", o.RebuildBackoff, o.MaxRebuildBackoff)
	}
	if o.TopologyCheckInterval <= 0 {
		bad("TopologyCheckInterval %v: must be positive", o.TopologyCheckInterval)
	}
	if o.MaxPollRecords < 1 {
		bad("MaxPollRecords %d: must be at least 1", o.MaxPollRecords)
	}
	if o.TaskQueue < 1 {
		bad("TaskQueue %d: must be at least 1", o.TaskQueue)
	}
	if o.DLQTopic == "" {
		o.DLQTopic = DeadLetterTopic(appID)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return errors.Join(errs...)
}
