package cluster

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// envThreeBrokers opts in to the tests that start a three-broker cluster of
// their own (three JVMs for a few minutes); unset, they skip.
const envThreeBrokers = "RACKSTREAM_THREE_BROKERS"

// startBrokers starts a three-broker cluster for t, closed when t ends (its
// logs kept when t failed). Without Java or Maven it skips outside CI and
// fails under CI.
func startBrokers(t *testing.T, o BrokersOptions) *Brokers {
	t.Helper()
	if os.Getenv(envThreeBrokers) == "" {
		t.Skipf("set %s=1 to run: it starts three brokers of its own (three JVMs for a few minutes)", envThreeBrokers)
	}
	b, err := StartBrokers(o)
	if errors.Is(err, ErrKafkaUnavailable) {
		kafkatest.SkipOrFail(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close(t.Failed())
		if t.Failed() {
			t.Logf("the brokers' logs are in %s/node*/logs", b.Dir)
		}
	})
	return b
}

// TestThreeBrokersKeepEveryAcknowledgedRecordThroughALeaderCrash is the
// broker fault production sees most: the leader of most partitions dies
// (kill -9) under acks=all with replication factor 3 and
// min.insync.replicas=2. The survivors take over its partitions, producing
// goes on, every acknowledged record is read back exactly once, and the node
// rejoins every ISR once started again.
func TestThreeBrokersKeepEveryAcknowledgedRecordThroughALeaderCrash(t *testing.T) {
	start := time.Now()
	b := startBrokers(t, BrokersOptions{Slots: 1})
	t.Logf("three brokers up in %v", time.Since(start).Round(time.Second))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	checkSlotMetadata(ctx, t, b, 0)

	const topic = "leader-crash"
	two := "2"
	if err := b.CreateTopic(ctx, topic, 6, 3, map[string]*string{"min.insync.replicas": &two}); err != nil {
		t.Fatal(err)
	}
	keys := Keys(24)
	prod := StartProducer(t, b.SlotAddrs(0), topic, keys, 200)
	kafkatest.Poll(t, 2*time.Minute, 50*time.Millisecond, "400 records acknowledged", func() bool { return prod.Acked() >= 400 })

	parts, err := b.Partitions(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	victim, led := LeaderOfMost(parts)
	t.Logf("node %d leads %d of %d partitions: kill -9", victim, led, len(parts))
	if err := b.Kill(victim); err != nil {
		t.Fatal(err)
	}
	var last []PartitionState
	kafkatest.Poll(t, 2*time.Minute, 100*time.Millisecond, "node "+strconv.Itoa(int(victim))+"'s partitions led by the others, it out of every ISR", func() bool {
		last, err = b.Partitions(ctx, topic)
		return err == nil && LedWithout(last, victim)
	})
	t.Logf("partitions with node %d down: %+v", victim, last)
	// Acknowledgements past every record sent so far count only records
	// sent from now on, by the new leaders.
	sent := prod.Sent()
	kafkatest.Poll(t, 2*time.Minute, 50*time.Millisecond, "400 records sent after the election acknowledged", func() bool { return prod.Acked() >= sent+400 })

	resumed := time.Now()
	if err := b.Resume(victim); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %d answers again %v after its start", victim, time.Since(resumed).Round(time.Second))
	kafkatest.Poll(t, 3*time.Minute, 100*time.Millisecond, "node "+strconv.Itoa(int(victim))+" back in every ISR", func() bool {
		last, err = b.Partitions(ctx, topic)
		return err == nil && InSync(last, victim)
	})

	n, err := prod.Stop(2 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	seqs := CheckSequences(ReadTopic(t, b.Addrs(), topic), keys, n)
	t.Logf("%d records per key acknowledged: lost=%d duplicated=%d out-of-order=%d garbage=%d", n, seqs.Lost, seqs.Duplicated, seqs.OutOfOrder, seqs.Garbage)
	if seqs.Lost != 0 || seqs.Garbage != 0 {
		t.Errorf("acknowledged records missing from the topic: lost %d (%v), garbage %d", seqs.Lost, seqs.Missing, seqs.Garbage)
	}
	// The producer is idempotent: the new leaders know its sequence
	// numbers from the replicated log, so retries write nothing twice.
	if seqs.Duplicated != 0 || seqs.OutOfOrder != 0 {
		t.Errorf("an idempotent producer's records duplicated %d times, %d out of order", seqs.Duplicated, seqs.OutOfOrder)
	}
	t.Logf("whole test: %v", time.Since(start).Round(time.Second))
}

// checkSlotMetadata checks that a client bootstrapping through slot i is
// sent to slot i's proxy of every node, and that each node names its rack.
func checkSlotMetadata(ctx context.Context, t *testing.T, b *Brokers, i int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.SlotAddrs(i)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatalf("metadata through slot %d: %v", i, err)
	}
	if len(md.Brokers) != len(b.Nodes) {
		t.Fatalf("metadata through slot %d lists %d brokers, want %d", i, len(md.Brokers), len(b.Nodes))
	}
	for _, br := range md.Brokers {
		n := b.Node(br.NodeID)
		addr := net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port)))
		rack := ""
		if br.Rack != nil {
			rack = *br.Rack
		}
		if addr != n.Slots[i].Addr || rack != n.Rack {
			t.Errorf("node %d advertised to slot %d at %s in rack %q, want %s in %q", br.NodeID, i, addr, rack, n.Slots[i].Addr, n.Rack)
		}
	}
}
