package table

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/state"
)

// Opt configures a Mirror, in the style of franz-go's kgo.Opt.
type Opt interface{ apply(*config) }

type opt func(*config)

func (o opt) apply(c *config) { o(c) }

type config struct {
	kafka       []kgo.Opt
	dir         string
	partitioner partition.Partitioner
	leveldb     state.LevelDBOptions
	logger      *slog.Logger
	registerer  prometheus.Registerer
}

// SeedBrokers are the brokers to bootstrap from (bootstrap.servers). Either
// it or KafkaOpts with kgo.SeedBrokers is required.
func SeedBrokers(brokers ...string) Opt {
	return opt(func(c *config) { c.kafka = append(c.kafka, kgo.SeedBrokers(brokers...)) })
}

// KafkaOpts are added to the Kafka clients the Mirror makes: TLS
// (kgo.DialTLSConfig), SASL (kgo.SASL), a client id, a dialer. The Mirror
// sets its own fetch options after them: isolation, offsets and sizes.
func KafkaOpts(opts ...kgo.Opt) Opt {
	return opt(func(c *config) { c.kafka = append(c.kafka, opts...) })
}

// StateDir keeps the Mirror's databases in dir/table-<topic> across
// restarts, so that a Mirror opened again restores only what it missed.
// The default is a temporary directory that Close removes: every Open
// restores the whole topic.
func StateDir(dir string) Opt {
	return opt(func(c *config) { c.dir = dir })
}

// Partitioner is how the topic's writer mapped keys to partitions
// [murmur2]. A Rackstream application's changelogs use its partitioner
// setting; goka's tables use partition.FNV1a. Get with the wrong one
// looks in the wrong partition and finds nothing.
func Partitioner(p partition.Partitioner) Opt {
	return opt(func(c *config) { c.partitioner = p })
}

// LevelDB sets the databases' LevelDB options [state.DefaultLevelDBOptions()];
// start from those and change what you need.
func LevelDB(o state.LevelDBOptions) Opt {
	return opt(func(c *config) { c.leveldb = o })
}

// Logger receives the Mirror's logs, such as restore progress and fetch
// errors [slog.Default()].
func Logger(l *slog.Logger) Opt {
	return opt(func(c *config) { c.logger = l })
}

// Registerer receives the Mirror's restore and lag metrics [none]. They
// are the rackstream_state_* series, with the partition as their "task"
// label, and they leave with the Mirror's Close.
func Registerer(r prometheus.Registerer) Opt {
	return opt(func(c *config) { c.registerer = r })
}
