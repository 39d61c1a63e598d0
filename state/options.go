package state

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Compression is the block compression of a LevelDB store.
type Compression int8

const (
	// CompressionSnappy compresses blocks with snappy (LevelDB's default).
	CompressionSnappy Compression = iota
	// CompressionNone stores blocks uncompressed.
	CompressionNone
)

// String returns the configuration spelling: "snappy" or "none".
func (c Compression) String() string {
	switch c {
	case CompressionSnappy:
		return "snappy"
	case CompressionNone:
		return "none"
	}
	return fmt.Sprintf("Compression(%d)", int8(c))
}

// ParseCompression parses the value of state.leveldb.compression: "snappy"
// or "none", in any case. "" means snappy.
func ParseCompression(s string) (Compression, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "snappy":
		return CompressionSnappy, nil
	case "none", "no":
		return CompressionNone, nil
	}
	return 0, fmt.Errorf("state: compression %q: want snappy or none", s)
}

// LevelDBOptions are the LevelDB settings that matter for a store. In
// Options and StoreSpec they hold values as used (start from
// DefaultLevelDBOptions; a zero field means what its comment says); in the
// options of package processor and package table, OrDefaults reads them:
// a zero field takes its default there.
type LevelDBOptions struct {
	// BlockCacheBytes is the block cache of each store
	// (state.leveldb.block.cache.bytes); 0 for none.
	BlockCacheBytes int
	// WriteBufferBytes is the memtable size of each store
	// (state.leveldb.write.buffer.bytes); at least 1. Larger buffers
	// restore faster at the cost of memory per open store.
	WriteBufferBytes int
	// BloomBits is the bloom filter's bits per key of LevelDB tables
	// (state.leveldb.bloom.bits); 0 for no filter.
	BloomBits int
	// Compression is the block compression (state.leveldb.compression);
	// the zero value is snappy.
	Compression Compression
}

// Options configure a Manager. Start from DefaultOptions, and set Dir and
// ApplicationID, which are required. A zero field means zero; Open rejects
// it where zero makes no sense (DefaultOptions says more). It is state's
// own struct, filled by the caller from its configuration, so that state
// does not depend on how that is parsed.
type Options struct {
	// Dir is the root state directory (state.dir). The Manager works in
	// Dir/<ApplicationID>, created if missing.
	Dir string
	// ApplicationID is the application's id (application.id): the name of
	// its directory and the prefix of default changelog names.
	ApplicationID string

	// LevelDB are the default options of every store; a StoreSpec may
	// override them.
	LevelDB LevelDBOptions

	// MemoryBytes is the memory budget of the stores and the record cache
	// (state.memory.bytes). Above 0, it overrides LevelDB's
	// WriteBufferBytes and BlockCacheBytes, and is split among the stores
	// as they open (memory.go says how). 0 keeps LevelDB's sizes.
	MemoryBytes int64

	// ClientOpts say how to reach Kafka: seed brokers, TLS, SASL, client
	// id and the like. The Manager builds its own restore consumer from
	// them; it never joins a group.
	ClientOpts []kgo.Opt
	// ReadCommitted makes restore and standby tailing read with
	// read_committed. Set it under exactly-once, so that aborted changelog
	// records are never applied. A restore then also waits for the
	// transactions open on the changelog when it starts to end, as one may
	// still commit.
	ReadCommitted bool
	// RestoreBatchBytes is the size at which the apply path writes a
	// LevelDB batch; 0 writes one per record. It bounds restore memory
	// together with FetchMaxBytes.
	RestoreBatchBytes int
	// FetchMaxBytes bounds one fetch response of the restore consumer; at
	// least 1.
	FetchMaxBytes int32
	// ChangelogLeadersWith, when set, names the input topic whose
	// partition leaders' racks EnsureChangelogs gives the preferred leaders
	// of the changelog topics it creates: partition i's preferred leader
	// sits in the rack of the input's partition i leader, the other
	// replicas in other racks. Where a broker has no rack or the cluster
	// refuses explicit assignments, the broker places the replicas.
	// Empty leaves placement to the broker.
	ChangelogLeadersWith string

	// CleanupDelay is how long the stores of a task that is not open stay
	// on disk before CleanupUnassigned deletes them
	// (state.cleanup.delay.ms); 0 deletes them at the next cleanup.
	CleanupDelay time.Duration
	// CleanupInterval is how often the Manager calls CleanupUnassigned in
	// the background; CleanupIntervalFor(CleanupDelay) suits most. 0
	// disables the background cleanup, for callers that run
	// CleanupUnassigned themselves.
	CleanupInterval time.Duration

	// Logger receives the package's structured logs; nil means
	// slog.Default().
	Logger *slog.Logger
	// Registerer receives the package's metrics; nil leaves them
	// unregistered. Managers may share one.
	Registerer prometheus.Registerer

	// WrapStorage, when set, wraps the goleveldb storage of every store
	// as it is opened; path is the store's directory. It exists for fault
	// injection, such as a full disk in tests, and instrumentation.
	WrapStorage func(path string, s storage.Storage) storage.Storage
}

// StoreSpec declares one store of a task.
type StoreSpec struct {
	// Name is the store's name: its directory under the task's and part
	// of its default changelog name. It must be a non-empty path element.
	Name string
	// Changelog is the changelog topic [<application.id>-<Name>-changelog].
	// Set it to adopt an existing compacted topic, such as a goka group
	// table.
	Changelog string
	// ChangelogConfigs are topic configs a missing changelog is created
	// with, over cleanup.policy=compact: a window store's
	// cleanup.policy=compact,delete and retention.ms. An existing
	// changelog is not altered; it must still be compacted.
	ChangelogConfigs map[string]string
	// LevelDB overrides the Manager's LevelDB options for this store when
	// non-nil.
	LevelDB *LevelDBOptions
}

// ChangelogTopic returns the default changelog topic of a store:
// <appID>-<store>-changelog, Kafka Streams' naming.
func ChangelogTopic(appID, store string) string {
	return appID + "-" + store + "-changelog"
}
