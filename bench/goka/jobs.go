// Package gokabench measures Rackstream against goka, its Go peer, on the
// same stateful job in one run on one cluster: a per-key count over a
// pre-produced input topic, and the rebuild of a table from its changelog
// on a fresh state directory.
//
// The job is written here twice, once per system, as a user of each would
// write it:
//
//   - goka: a goka.Processor whose group table holds the count, updated with
//     ctx.SetValue(count+1); every update goes to the group table topic
//     <group>-table.
//   - Rackstream: a topology with one store, updated with Store.Put; every
//     update goes to the store's changelog (the record cache is off, so
//     both write one changelog record per input record).
//
// Both read the input from its start, with keys partitioned by FNV-1a
// (goka's partitioner, which Rackstream selects with partitioner=fnv1a), and
// both encode counts as decimal text (goka's codec.Int64 and Rackstream's
// codec.Int64 agree byte for byte), so one table topic can be restored by
// either. The benchmarks and the correctness test that keeps them honest are
// in the package's tests; docs/lab/goka.md has the figures.
package gokabench

import (
	"hash/fnv"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	gokacodec "github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
)

// SaramaConfig is goka's default sarama configuration with two changes:
// protocol version V2_1_0_0, the version the repository's goka interop test
// uses for Kafka 4 (Kafka 4.0 removed many old request versions; goka's
// default V2_0_0_0 also ran this job on kfake and Kafka 4.4 when tried), and
// input streams read from their start instead of goka's default, the newest
// offset.
func SaramaConfig() *sarama.Config {
	cfg := goka.DefaultConfig()
	cfg.Version = sarama.V2_1_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	return cfg
}

// GokaOptions are the processor options of one goka instance: its LevelDB
// partition tables under dir, sarama configured by cfg for every client it
// builds, tables created with replication factor 1 (one broker), and logs
// dropped.
func GokaOptions(dir string, cfg *sarama.Config) []goka.ProcessorOption {
	// Each builder sets its client id on the config it is given: give each
	// its own copy.
	clone := func() *sarama.Config { c := *cfg; return &c }
	tm := goka.NewTopicManagerConfig()
	tm.Table.Replication = 1
	tm.Stream.Replication = 1
	tm.CreateTopicTimeout = 30 * time.Second
	return []goka.ProcessorOption{
		goka.WithStorageBuilder(storage.DefaultBuilder(dir)),
		goka.WithTopicManagerBuilder(goka.TopicManagerBuilderWithConfig(clone(), tm)),
		goka.WithConsumerGroupBuilder(goka.ConsumerGroupBuilderWithConfig(clone())),
		goka.WithConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(clone())),
		goka.WithProducerBuilder(goka.ProducerBuilderWithConfig(clone())),
		goka.WithHasher(fnv.New32a), // goka's default, named: the input is partitioned with it
		goka.WithLogger(quiet{}),
	}
}

// GokaCount defines the goka per-key count of group over input: the group
// table <group>-table holds each key's count. onRecord, if not nil, is
// called after each record's update.
func GokaCount(group, input string, onRecord func()) *goka.GroupGraph {
	return goka.DefineGroup(goka.Group(group),
		goka.Input(goka.Stream(input), new(gokacodec.Bytes), func(ctx goka.Context, _ any) {
			var n int64
			if v := ctx.Value(); v != nil {
				n = v.(int64)
			}
			ctx.SetValue(n + 1)
			if onRecord != nil {
				onRecord()
			}
		}),
		goka.Persist(new(gokacodec.Int64)),
	)
}

// RackstreamCount defines the Rackstream per-key count of appID over input:
// the store "counts" holds each key's count; opts configure the store (for
// example processor.WithChangelog to adopt a goka group table). onRecord,
// if not nil, is called after each record's update.
func RackstreamCount(appID, input string, onRecord func(), opts ...processor.StoreOption) (*processor.Topology, *processor.Store[string, int64]) {
	topo := processor.New(appID)
	counts := processor.NewStore(topo, "counts", codec.String(), codec.Int64(), opts...)
	processor.NewInput(topo, input, codec.String(), codec.Bytes(), func(ctx *processor.Context, key string, _ []byte) error {
		n, _, err := counts.Get(ctx, key)
		if err != nil {
			return err
		}
		if err := counts.Put(ctx, key, n+1); err != nil {
			return err
		}
		if onRecord != nil {
			onRecord()
		}
		return nil
	})
	return topo, counts
}

// quiet drops goka's logs (it logs every partition's state change).
type quiet struct{}

func (quiet) Print(...any)          {}
func (quiet) Println(...any)        {}
func (quiet) Printf(string, ...any) {}
