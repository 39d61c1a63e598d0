package chaos

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
)

// brokerSessionTimeout is the brokers' broker.session.timeout.ms (Kafka's
// default, which kafka.sh keeps): how long the controller waits for a
// silent broker's heartbeat before it fences the broker and elects new
// leaders for its partitions.
const brokerSessionTimeout = 9 * time.Second

// brokerCut is how long scenario 12 keeps the instances off one broker:
// past the session timeout, so that a group or transaction coordinator on
// that broker gives the instances up, and past the produce retries' first
// timeouts.
const brokerCut = 20 * time.Second

// leaderBound is the longest a key may go unread from an active in the
// three-broker scenarios: a broker lost adds at most the controller's wait
// for it (brokerSessionTimeout) before new leaders and coordinators serve,
// and after that the group recovers as from an instance's fault
// (activeBound).
func (r *run) leaderBound() time.Duration {
	return r.activeBound() + brokerSessionTimeout
}

// checkLagged checks the three-broker scenarios' bound on the reads with
// max_lag: an active qualifies for every such read, so they are held to
// the actives' bound (leaderBound), with nothing excused. Standbys do not
// always answer through a rebalance that moves a task in two steps; the
// cut scenario asserts more (standbysAnswered).
func (r *run) checkLagged(lag cluster.ProbeReport) {
	r.t.Helper()
	if w := lag.Worst; w.Len() > r.leaderBound() {
		r.t.Errorf("with max_lag=%d key %s could not be read for %v (%s to %s), longer than %v",
			maxLag, w.Key, w.Len().Round(time.Millisecond), w.From.Format("15:04:05.000"), w.To.Format("15:04:05.000"), r.leaderBound())
	}
}

// TestThreeBrokersLeaderKilled is scenario 10: on three brokers
// (replication factor 3, min.insync.replicas=2, acks=all), kill -9 of the
// broker leading most of the input's and the changelog's partitions; the
// group carries on with two, then the broker is started again and rejoins
// every ISR.
func TestThreeBrokersLeaderKilled(t *testing.T) {
	needMode(t, true)
	leaderKilled(t, setup{threeBrokers: true})
}

// TestThreeBrokersLeaderKilledExactlyOnce is scenario 10 under
// exactly_once_v2: the kill lands mid-transaction.
func TestThreeBrokersLeaderKilledExactlyOnce(t *testing.T) {
	needMode(t, true)
	leaderKilled(t, setup{threeBrokers: true, eos: true})
}

func leaderKilled(t *testing.T, s setup) {
	r := beginWith(t, "leader-kill", s)
	victim, led := r.leaderOfMost()
	r.midTransaction(r.ins[0])
	down := time.Now()
	t.Logf("node %d leads %d partitions of the input and the changelog: kill -9", victim, led)
	if err := r.brokers.Kill(victim); err != nil {
		t.Fatal(err)
	}
	r.waitLedWithout(victim)
	r.healed(down)
	r.settle()
	if err := r.brokers.Resume(victim); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	r.waitInSync(victim)
	r.healed(back)
	r.settle()
	_, lag := r.end(r.leaderBound())
	r.checkLagged(lag)
}

// TestThreeBrokersRollingRestart is scenario 11: a rolling restart of the
// three brokers, one at a time (SIGTERM: a controlled shutdown), each back
// in every ISR before the next stops.
func TestThreeBrokersRollingRestart(t *testing.T) {
	needMode(t, true)
	brokersRolled(t, setup{threeBrokers: true})
}

// TestThreeBrokersRollingRestartExactlyOnce is scenario 11 under
// exactly_once_v2: every broker, and so every transaction coordinator,
// restarts once.
func TestThreeBrokersRollingRestartExactlyOnce(t *testing.T) {
	needMode(t, true)
	brokersRolled(t, setup{threeBrokers: true, eos: true})
}

func brokersRolled(t *testing.T, s setup) {
	r := beginWith(t, "broker-roll", s)
	for _, n := range r.brokers.Nodes {
		r.midTransaction(r.ins[0])
		if err := r.brokers.Stop(n.ID); err != nil {
			t.Fatal(err)
		}
		t.Logf("node %d stopped", n.ID)
		r.waitLedWithout(n.ID)
		if err := r.brokers.Resume(n.ID); err != nil {
			t.Fatal(err)
		}
		back := time.Now()
		r.waitInSync(n.ID)
		r.healed(back)
		r.settle()
	}
	_, lag := r.end(r.leaderBound())
	r.checkLagged(lag)
}

// TestThreeBrokersCut is scenario 12: every instance's connections to the
// broker leading most of the input's and the changelog's partitions cut
// at its proxies for brokerCut, while the broker stays in its quorum and
// keeps its leaderships (the brokers reach it; Kafka sees no fault), then
// restored. The partitions it leads stall meanwhile; the bound on reads
// from actives holds outside the cut, and reads with max_lag must not wait
// for the session timeout within it.
func TestThreeBrokersCut(t *testing.T) {
	needMode(t, true)
	brokerCutOff(t, setup{threeBrokers: true})
}

// TestThreeBrokersCutExactlyOnce is scenario 12 under exactly_once_v2: the
// cut lands mid-transaction.
func TestThreeBrokersCutExactlyOnce(t *testing.T) {
	needMode(t, true)
	brokerCutOff(t, setup{threeBrokers: true, eos: true})
}

func brokerCutOff(t *testing.T, s setup) {
	r := beginWith(t, "broker-cut", s)
	victim, led := r.leaderOfMost()
	node := r.brokers.Node(victim)
	r.midTransaction(r.ins[0])
	cut := time.Now()
	for i := range r.ins {
		node.Slots[i].Cut()
	}
	t.Logf("node %d leads %d partitions of the input and the changelog: the instances cut off it for %v", victim, led, brokerCut)
	time.Sleep(brokerCut) // the fault itself: the cut lasts this long
	parts, err := r.brokers.Partitions(t.Context(), r.topics()...)
	if err != nil {
		t.Fatal(err)
	}
	if !cluster.InSync(parts, victim) {
		t.Errorf("node %d fell out of an ISR during the cut: the cut reached the brokers' own traffic: %+v", victim, parts)
	}
	var dropped int64
	for i := range r.ins {
		node.Slots[i].Restore()
		dropped += node.Slots[i].Dropped()
	}
	back := time.Now()
	r.brokerDown = append(r.brokerDown, [2]time.Time{cut, back})
	t.Logf("cut restored; %d bytes dropped", dropped)
	if dropped == 0 {
		t.Errorf("the proxies of node %d dropped nothing during the cut: was it cut?", victim)
	}
	r.healed(back)
	r.settle()
	_, lag := r.end(r.leaderBound())
	r.checkLagged(lag)
	r.standbysAnswered(lag, cut, back)
}

// changelog is the processor's store's changelog topic.
func (r *run) changelog() string { return r.app + "-" + r.store + "-changelog" }

// topics are every topic whose partitions must be back in sync after a
// broker fault: the input, the output, the changelog and the group's and
// transactions' internal topics.
func (r *run) topics() []string {
	out := []string{r.input, r.output, r.changelog(), "__consumer_offsets"}
	if r.eos {
		out = append(out, "__transaction_state")
	}
	return out
}

// leaderOfMost returns the node leading the most partitions of the input
// and the changelog, and how many.
func (r *run) leaderOfMost() (int32, int) {
	r.t.Helper()
	parts, err := r.brokers.Partitions(r.t.Context(), r.topics()...)
	if err != nil {
		r.t.Fatal(err)
	}
	var data []cluster.PartitionState
	for _, p := range parts {
		switch p.Topic {
		case r.input, r.changelog():
			data = append(data, p)
		case "__consumer_offsets", "__transaction_state":
			r.t.Logf("%s partition %d is led by node %d", p.Topic, p.Partition, p.Leader)
		}
	}
	return cluster.LeaderOfMost(data)
}

// waitLedWithout waits until node leads nothing and is in no ISR.
func (r *run) waitLedWithout(node int32) {
	r.t.Helper()
	r.waitPartitions("node "+strconv.Itoa(int(node))+"'s partitions led by the others, it out of every ISR", func(p []cluster.PartitionState) bool {
		return cluster.LedWithout(p, node)
	})
}

// waitInSync waits until node is back in every ISR.
func (r *run) waitInSync(node int32) {
	r.t.Helper()
	r.waitPartitions("node "+strconv.Itoa(int(node))+" back in every ISR", func(p []cluster.PartitionState) bool {
		return cluster.InSync(p, node)
	})
}

func (r *run) waitPartitions(what string, ok func([]cluster.PartitionState) bool) {
	r.t.Helper()
	start := time.Now()
	kafkatest.Poll(r.t, deadline, 100*time.Millisecond, what, func() bool {
		ctx, cancel := context.WithTimeout(r.t.Context(), 5*time.Second)
		defer cancel()
		parts, err := r.brokers.Partitions(ctx, r.topics()...)
		return err == nil && ok(parts)
	})
	r.t.Logf("%s after %v", what, time.Since(start).Round(time.Millisecond))
}

// waitTopicsOnEveryNode waits until every node's own metadata lists each
// of topics with partitions partitions: a KRaft broker applies a new
// topic to its metadata cache asynchronously, and an instance whose first
// metadata request reaches a node that has not yet refuses to start.
func waitTopicsOnEveryNode(t *testing.T, b *cluster.Brokers, partitions int, topics ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, n := range b.Nodes {
		kafkatest.Poll(t, deadline, 50*time.Millisecond, "node "+strconv.Itoa(int(n.ID))+" knows the topics", func() bool {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			req := kmsg.NewPtrMetadataRequest()
			for _, topic := range topics {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(topic)
				req.Topics = append(req.Topics, rt)
			}
			resp, err := req.RequestWith(ctx, cl.Broker(int(n.ID)))
			if err != nil || len(resp.Topics) != len(topics) {
				return false
			}
			for _, td := range resp.Topics {
				if td.ErrorCode != 0 || len(td.Partitions) != partitions {
					return false
				}
			}
			return true
		})
	}
}
