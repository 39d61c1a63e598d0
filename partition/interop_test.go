package partition_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	gokacodec "github.com/lovoo/goka/codec"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
)

// The interop tests produce keyed records with a client outside our code and
// check that each landed in the slot our partitioner computes. They run
// against kfake, or the real broker when RACKSTREAM_TEST_BROKERS is set.

const interopPartitions = 12

// interopKeys are the keys every interop test produces: varied lengths (all
// murmur2 tail lengths), bytes above 0x7f, and enough of them that a wrong
// function could not match by chance (12^-200).
func interopKeys() []string {
	keys := []string{"a", "ab", "abc", "abcd", "héllo-wörld", "user:42", "21", "foobar"}
	for i := 0; len(keys) < 200; i++ {
		keys = append(keys, fmt.Sprintf("key-%d", i*7919))
	}
	return keys
}

// requireTool returns the path of an external program, skipping the test when
// it is missing, except under CI, where a missing peer is a failure.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		kafkatest.SkipOrFail(t, "%s not installed (Debian package %s): %v", name, name, err)
	}
	return path
}

// checkLanding reads want records from topic and fails for every record not
// in the partition p assigns its key.
func checkLanding(t *testing.T, c *kafkatest.Cluster, topic string, p partition.Partitioner, keys []string) {
	t.Helper()
	cl := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	seen := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for seen < len(keys) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s: got %d of %d records before the deadline", topic, seen, len(keys))
		}
		fs.EachError(func(t2 string, part int32, err error) { t.Fatalf("fetch %s/%d: %v", t2, part, err) })
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			if !want[string(r.Key)] {
				t.Errorf("unexpected key %q in %s/%d", r.Key, r.Topic, r.Partition)
				return
			}
			if slot := p.Partition(r.Key, interopPartitions); slot != r.Partition {
				t.Errorf("%s: key %q landed in partition %d, our partitioner says %d", p.Name(), r.Key, r.Partition, slot)
			}
		})
	}
}

func TestKcatMurmur2RandomLandsInOurMurmur2Slot(t *testing.T) {
	testKcat(t, "murmur2_random", partition.Murmur2())
}

func TestKcatConsistentLandsInOurCRC32Slot(t *testing.T) {
	testKcat(t, "consistent", partition.CRC32())
}

func testKcat(t *testing.T, rdkafkaPartitioner string, p partition.Partitioner) {
	kcat := requireTool(t, "kcat")
	c := kafkatest.New(t)
	topic := c.Name("interop-kcat-" + rdkafkaPartitioner)
	c.CreateTopic(topic, interopPartitions, nil)

	keys := interopKeys()
	var in bytes.Buffer
	for i, k := range keys {
		fmt.Fprintf(&in, "%s\t%d\n", k, i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-P", "-b", strings.Join(c.Brokers, ","), "-t", topic,
		"-K", "\t", "-X", "partitioner="+rdkafkaPartitioner, "-X", "broker.address.family=v4")
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat -X partitioner=%s on %s: %v\n%s", rdkafkaPartitioner, c.Kind(), err, out)
	}
	checkLanding(t, c, topic, p, keys)
}

func TestGokaEmitterLandsInOurFNV1aSlot(t *testing.T) {
	c := kafkatest.New(t)
	topic := c.Name("interop-goka")
	c.CreateTopic(topic, interopPartitions, nil)

	cfg := goka.DefaultConfig()
	cfg.Version = sarama.V2_1_0_0 // Kafka 4 dropped the older request versions sarama would use by default
	em, err := goka.NewEmitter(c.Brokers, goka.Stream(topic), new(gokacodec.String),
		goka.WithEmitterProducerBuilder(goka.ProducerBuilderWithConfig(cfg)))
	if err != nil {
		t.Fatalf("goka emitter on %s: %v", c.Kind(), err)
	}
	keys := interopKeys()
	errs := make(chan error, len(keys))
	for i, k := range keys {
		prom, err := em.Emit(k, fmt.Sprint(i))
		if err != nil {
			t.Fatalf("goka emit %q on %s: %v", k, c.Kind(), err)
		}
		prom.Then(func(err error) { errs <- err })
	}
	if err := em.Finish(); err != nil {
		t.Fatalf("goka emitter finish: %v", err)
	}
	for range keys {
		if err := <-errs; err != nil {
			t.Fatalf("goka emit on %s: %v", c.Kind(), err)
		}
	}
	checkLanding(t, c, topic, partition.FNV1a(), keys)
}

func TestFranzGoWithKgoPartitionerLandsInOurSlot(t *testing.T) {
	c := kafkatest.New(t)
	for _, p := range []partition.Partitioner{partition.Murmur2(), partition.FNV1a(), partition.CRC32()} {
		topic := c.Name("interop-kgo-" + p.Name())
		c.CreateTopic(topic, interopPartitions, nil)
		// A just-created topic may take a moment to reach every broker's
		// metadata: keep retrying unknown-topic errors, bounded by ctx.
		cl := c.Client(kgo.RecordPartitioner(partition.Kgo(p)), kgo.DefaultProduceTopic(topic), kgo.UnknownTopicRetries(-1))
		keys := interopKeys()
		recs := make([]*kgo.Record, len(keys))
		for i, k := range keys {
			recs[i] = &kgo.Record{Key: []byte(k), Value: []byte("v")}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce with partition.Kgo(%s): %v", p.Name(), err)
		}
		checkLanding(t, c, topic, p, keys)
	}
}
