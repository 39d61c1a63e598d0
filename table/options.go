package table

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/state"
)

// Options configure a Mirror. Every field left at its zero value takes its
// default, in brackets. The seed brokers, in Brokers or in KafkaOpts, are
// the one thing to set.
type Options struct {
	// Brokers are the brokers to bootstrap from (bootstrap.servers).
	Brokers []string
	// KafkaOpts are added to the Kafka clients the Mirror makes: TLS
	// (kgo.DialTLSConfig), SASL (kgo.SASL), a client id, a dialer, the seed
	// brokers. The Mirror sets its own fetch options after them: isolation,
	// offsets and sizes.
	KafkaOpts []kgo.Opt
	// StateDir keeps the Mirror's databases in StateDir/table-<topic>
	// across restarts, so that a Mirror opened again restores only what it
	// missed. The default is a temporary directory that Close removes:
	// every Open restores the whole topic.
	StateDir string
	// Partitioner is how the topic's writer mapped keys to partitions
	// [murmur2]. A Rackstream application's changelogs use its partitioner
	// setting; goka's tables use partition.FNV1a. Get with the wrong one
	// looks in the wrong partition and finds nothing.
	Partitioner partition.Partitioner
	// LevelDB are the databases' LevelDB options, read by
	// LevelDBOptions.OrDefaults: each zero field takes
	// state.DefaultLevelDBOptions' value, and state.Zero asks for no block
	// cache or no bloom filter.
	LevelDB state.LevelDBOptions
	// Logger receives the Mirror's logs, such as restore progress and fetch
	// errors [slog.Default()].
	Logger *slog.Logger
	// Registerer receives the Mirror's restore and lag metrics [none]. They
	// are the rackstream_state_* series, with the partition as their "task"
	// label, and they leave with the Mirror's Close.
	Registerer prometheus.Registerer
}

// kafkaOpts are the options of the Mirror's Kafka clients: the seed
// brokers, then KafkaOpts.
func (o *Options) kafkaOpts() []kgo.Opt {
	var opts []kgo.Opt
	if len(o.Brokers) > 0 {
		opts = append(opts, kgo.SeedBrokers(o.Brokers...))
	}
	return append(opts, o.KafkaOpts...)
}
