package processor

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/state"
	"github.com/rackstream/rackstream/tags"
)

// Zero asks for zero in an option whose zero value means its default:
// CacheMaxBytes: Zero turns the record cache off, ShutdownTimeout: Zero does
// not wait. Each field that accepts it says what zero does there. It is
// state.Zero, which LevelDBOptions accept too.
const Zero = state.Zero

// Exactly returns v as an option: v itself, or Zero for 0. It is how a
// caller holding a value as used (a parsed configuration, a flag) sets an
// option whose zero value means its default.
func Exactly[T ~int | ~int16 | ~int32 | ~int64](v T) T {
	if v == 0 {
		return Zero
	}
	return v
}

// Options configure a Runtime. Brokers and StateDir are required; every
// other field left at its zero value takes its default (DefaultOptions
// lists them, and the configuration key named in parentheses shows the
// same). Where zero is a setting of its own, the field's comment says so,
// and Zero asks for it. NewRuntime rejects a value out of range, naming
// the field and its configuration key.
//
//	rt, err := processor.NewRuntime(topo, processor.Options{Brokers: brokers, StateDir: dir})
type Options struct {
	// Brokers are the seed brokers (bootstrap.servers); required.
	Brokers []string
	// ClientOpts are added to every Kafka client the runtime makes (group
	// member, restore consumer, admin): TLS, SASL, a dialer, a client id.
	ClientOpts []kgo.Opt
	// ClientOptsFor, when set, returns options added after ClientOpts to
	// the Kafka clients the runtime makes once it knows its process id:
	// the group member, the placement and admin clients. Typically it
	// returns kgo.ClientID("<name>-"+processID), so that the brokers' logs
	// and quotas tell the instances apart. The state directory's restore
	// consumer is made before the process id is read and gets ClientOpts
	// only.
	ClientOptsFor func(processID string) []kgo.Opt

	// StateDir is the state directory (state.dir); required. The
	// application's stores live in StateDir/<application.id>, its global
	// tables in GlobalDir(StateDir, application.id).
	StateDir string
	// LevelDB are the stores' LevelDB options (state.leveldb.*), read by
	// LevelDBOptions.OrDefaults: each zero field takes
	// state.DefaultLevelDBOptions' value, and Zero asks for no block cache
	// (BlockCacheBytes) or no bloom filter (BloomBits).
	LevelDB state.LevelDBOptions
	// MemoryBytes is state.memory.bytes (state.DefaultMemoryBytes): one
	// memory budget for the stores and the record cache that overrides
	// LevelDB's sizes and bounds CacheMaxBytes by its quarter, split among
	// the stores as they open. Zero keeps LevelDB's sizes.
	MemoryBytes int64
	// CleanupDelay is how long the stores of a task this instance no
	// longer holds stay on disk before they are deleted
	// (state.cleanup.delay.ms): a task that comes back within it restores
	// only what it missed. Zero deletes them at the next cleanup.
	CleanupDelay time.Duration

	// Endpoint is this instance's host:port for queries (application.server).
	Endpoint string
	// Tags are the client tags (client.tag.<key>).
	Tags tags.Set
	// Placement are the settings that shape the group's plan
	// (num.standby.replicas, rack.aware.assignment.tags,
	// acceptable.recovery.lag, max.warmup.replicas), read as options: a
	// zero AcceptableRecoveryLag or MaxWarmupReplicas takes its default
	// (assignor.DefaultSettings); Zero asks for an AcceptableRecoveryLag of
	// 0 (only caught-up replicas). Every key of RackAwareAssignmentTags
	// must be one of Tags. A zero rack-aware strategy or cost takes its
	// default too, and Zero asks for a cost of 0; ClientRackTag "" means
	// no client has a known rack.
	Placement assignor.Settings
	// Capacity is the instance's weight in placement (num.stream.threads;
	// the number of CPUs). Tasks always run in parallel, one goroutine each.
	Capacity int
	// ProbingInterval is probing.rebalance.interval.ms; at least a minute.
	ProbingInterval time.Duration

	// Partitioner maps keys to partitions for emits and dead letters
	// (partitioner; murmur2).
	Partitioner partition.Partitioner
	// CacheMaxBytes is statestore.cache.max.bytes: the record cache that
	// merges writes to one key of a store, and emits of one key to an
	// output, within a commit interval. Only the last reaches the changelog
	// and the output. It is divided among the tasks active on the instance.
	// A store's entries stay after a commit, clean, for the next reads.
	// Zero turns it off, also under a memory budget: every write and emit
	// goes out, as tests that check every intermediate value need.
	CacheMaxBytes int64
	// CommitInterval is commit.interval.ms: how often the tasks commit
	// (the first commit at a random point of the first interval, so that
	// instances started together commit apart). Its default is 30 s, and
	// DefaultCommitIntervalExactlyOnce under ExactlyOnceV2, where each
	// commit ends a transaction. Zero commits after every batch of records
	// a task has worked through.
	CommitInterval time.Duration
	// Guarantee is processing.guarantee (AtLeastOnce).
	Guarantee Guarantee
	// ErrorPolicy is processing.exception.handler (PolicyDeadLetter).
	ErrorPolicy ErrorPolicy
	// DLQTopic is errors.dead.letter.queue.topic.name
	// (DeadLetterTopic(application id), <application.id>-dlq). It is
	// created, with the inputs' partition count, if missing.
	DLQTopic string
	// ReplicationFactor of the changelog, repartition and dead-letter
	// topics the runtime creates (replication.factor): -1, the default, for
	// the broker's default, else at least 1.
	ReplicationFactor int16
	// RepartitionPurgeInterval is repartition.purge.interval.ms: how often
	// the owner of a task deletes, after a commit, the records of its
	// repartition partitions below the committed offset. Zero purges after
	// every commit.
	RepartitionPurgeInterval time.Duration
	// ChangelogLeaders is changelog.leader.alignment: how the changelog
	// topics the runtime creates get their replicas (ChangelogLeadersAligned).
	ChangelogLeaders ChangelogLeaders

	// SessionTimeout is session.timeout.ms.
	SessionTimeout time.Duration
	// ShutdownTimeout bounds a graceful shutdown (shutdown.timeout.ms).
	// Run returns within it after its context is cancelled. Work it could
	// not commit by then, with brokers unreachable, is logged with what it
	// waited for, and the next owner processes it again. Zero does not
	// wait: in-flight records are abandoned uncommitted.
	ShutdownTimeout time.Duration
	// MaxTaskIdle is max.task.idle.ms: how long a task whose records are
	// taken in timestamp order waits for an input with nothing fetched.
	// With co-partitioned tables, it waits for new table records when the
	// table partition is caught up; with several stream inputs, for the
	// input that has nothing waiting. The default, 0, waits only for
	// records known to be on the broker (Kafka Streams' default); a
	// negative value turns the alignment off (records in fetch order).
	MaxTaskIdle time.Duration

	// OnPlacement, when set, is called once with every new placement of
	// the group this instance learns (a new generation's, once it is
	// known), from the group's assignment callback: it must not block for
	// long. It is how the service's logs, dev, metrics and the HTTP status
	// follow the placement without polling Placement. The placement
	// carries the settings the leader planned it with
	// (balancer.Placement.Settings).
	OnPlacement func(*balancer.Placement)

	// Logger receives structured logs (slog.Default()).
	Logger *slog.Logger
	// Registerer receives the runtime's and the stores' metrics (none).
	Registerer prometheus.Registerer

	// The knobs below have no configuration key: their defaults suit
	// every deployment, and the package's tests tune them.

	// retry bounds the retries of a failing handler (DefaultRetry).
	retry Retry
	// heartbeatInterval is the group heartbeat
	// (balancer.DefaultHeartbeatInterval).
	heartbeatInterval time.Duration
	// rebuildBackoff is the first wait before rebuilding a Kafka client
	// after a fatal error; it doubles per consecutive failure up to
	// maxRebuildBackoff. Zero rebuilds at once.
	rebuildBackoff    time.Duration
	maxRebuildBackoff time.Duration
	// topologyCheckInterval is how often the partition counts of the
	// inputs and changelogs are checked while running. A count that
	// changed stops every task and makes the instance not ready, naming
	// the topics and counts: keys would map to other partitions.
	topologyCheckInterval time.Duration
	// maxPollRecords bounds the records taken per poll.
	maxPollRecords int
	// taskQueue is how many fetched records may wait per task before its
	// partitions are paused until it has worked through half.
	taskQueue int
}

// ChangelogLeaders says where the preferred leaders of the changelog
// topics the runtime creates sit. It never changes an existing topic.
type ChangelogLeaders string

const (
	// ChangelogLeadersAligned gives changelog partition i its preferred
	// leader in the rack of the leader of the first input topic's partition
	// i, and its other replicas in other racks: an active placed with its
	// input's leader also produces its changelog within its zone. Where a
	// broker has no broker.rack or the cluster refuses explicit replica
	// assignments, the broker places the replicas.
	ChangelogLeadersAligned ChangelogLeaders = "aligned"
	// ChangelogLeadersBroker leaves the replicas to the broker's placement.
	ChangelogLeadersBroker ChangelogLeaders = "broker"
)
