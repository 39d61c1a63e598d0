package balancer

import (
	"flag"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// calibration runs one group whose leader gives member i an assignment of
// sizes[i] bytes once all len(sizes) members have joined.
type calibration struct {
	sizes []int

	mu       sync.Mutex
	balances int // full-group balances run by the leader
	received int // members that received their full-size assignment
}

type calibBalancer struct{ c *calibration }

func (calibBalancer) ProtocolName() string { return "calibrate" }
func (calibBalancer) IsCooperative() bool  { return false }
func (calibBalancer) JoinGroupMetadata(topics []string, _ map[string][]int32, _ int32) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

func (b calibBalancer) ParseSyncAssignment(raw []byte) (map[string][]int32, error) {
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(raw); err != nil {
		return nil, err
	}
	if len(a.UserData) > 0 {
		b.c.mu.Lock()
		b.c.received++
		b.c.mu.Unlock()
	}
	return nil, nil
}

func (b calibBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	return calibMembers{b.c, members}, nil, nil
}

type calibMembers struct {
	c       *calibration
	members []kmsg.JoinGroupResponseMember
}

func (m calibMembers) Balance(map[string]int32) kgo.IntoSyncAssignment { return m }

func (m calibMembers) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment {
	full := len(m.members) == len(m.c.sizes)
	if full {
		m.c.mu.Lock()
		m.c.balances++
		m.c.mu.Unlock()
	}
	var out []kmsg.SyncGroupRequestGroupAssignment
	for i, member := range m.members {
		var a kmsg.ConsumerMemberAssignment
		if full {
			a.UserData = make([]byte, m.c.sizes[i])
		}
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID = member.MemberID
		sa.MemberAssignment = a.AppendTo(nil)
		out = append(out, sa)
	}
	return out
}

// storesGeneration reports whether the broker accepts a generation whose
// members' assignments carry the given numbers of bytes: every member
// receives its assignment, or the leader's SyncGroup fails and it balances
// the full group again.
func storesGeneration(t *testing.T, c *kafkatest.Cluster, sizes ...int) bool {
	t.Helper()
	cal := &calibration{sizes: sizes}
	group, topic := c.Name("calibrate"), c.Name("calibrate-topic")
	c.CreateTopic(topic, 1, nil)
	var clients []*kgo.Client
	for range sizes {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(c.Brokers...),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.Balancers(calibBalancer{cal}),
			kgo.SessionTimeout(6*time.Second),
			kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
	}
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	var accepted bool
	kafkatest.Eventually(t, 60*time.Second, "the broker decides on the generation", func() bool {
		cal.mu.Lock()
		defer cal.mu.Unlock()
		switch {
		case cal.received == len(sizes):
			accepted = true
			return true
		case cal.balances >= 3 && cal.received == 0:
			return true // synced and failed, then tried again, twice
		}
		return false
	})
	return accepted
}

var calibrate = flag.Bool("calibrate", false, "bisect the real broker's group record limit to 64 bytes (slow: several groups of up to a minute each)")

// TestBrokerGroupRecordLimit calibrates, on the real broker, how many bytes
// of assignments one generation may hold: about the default 1 MiB of
// __consumer_offsets' max.message.bytes (1048588), summed over members.
// kfake enforces no limit, so there is nothing to calibrate on it.
func TestBrokerGroupRecordLimit(t *testing.T) {
	c := kafkatest.New(t)
	if !c.Real() {
		t.Skip("kfake stores group metadata without a size limit; the calibration needs the real broker (RACKSTREAM_TEST_BROKERS)")
	}
	if !storesGeneration(t, c, 340<<10, 340<<10, 340<<10) {
		t.Fatal("3 x 340 KiB (1020 KiB) refused")
	}
	if storesGeneration(t, c, 342<<10, 342<<10, 342<<10) {
		t.Fatal("3 x 342 KiB (1026 KiB) accepted: the limit is not the default 1 MiB")
	}
	if !*calibrate {
		t.Logf("the limit lies between 3 x 340 KiB and 3 x 342 KiB; -calibrate bisects it for one member")
		return
	}
	lo, hi := 1020<<10, 1024<<10 // accepted, refused
	for hi-lo > 64 {
		mid := (lo + hi) / 2
		if storesGeneration(t, c, mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	t.Logf("one member: an assignment with %d bytes of user data is stored, %d is refused (record limit %d); DefaultMaxInlineBytes is %d",
		lo, hi, brokerRecordLimit, DefaultMaxInlineBytes)
}
