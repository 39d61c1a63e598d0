package balancer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rackstream/rackstream/internal/kafkatest"
)

// syncGroupOf joins len(sizes) members to a fresh group with raw requests,
// has the leader give member i an assignment of sizes[i] bytes, and returns
// the leader's SyncGroup error: what the broker says when it stores the
// generation's group-metadata record.
func syncGroupOf(t *testing.T, c *kafkatest.Cluster, cl *kgo.Client, sizes ...int) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	group := c.Name("calibrate")
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t"}
	join := func(memberID string) *kmsg.JoinGroupResponse {
		for {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group = group
			req.MemberID = memberID
			req.SessionTimeoutMillis = 10000
			req.RebalanceTimeoutMillis = 10000
			req.ProtocolType = "consumer"
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = ProtocolName
			p.Metadata = meta.AppendTo(nil)
			req.Protocols = append(req.Protocols, p)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Errorf("join: %v", err)
				return nil
			}
			switch err := kerr.ErrorForCode(resp.ErrorCode); {
			case err == kerr.MemberIDRequired:
				memberID = resp.MemberID
				continue
			case err == kerr.UnknownMemberID || err == kerr.RebalanceInProgress:
				memberID = ""
				continue
			case err != nil:
				t.Errorf("join: %v", err)
				return nil
			}
			memberID = resp.MemberID
			if resp.LeaderID == resp.MemberID && len(resp.Members) < len(sizes) {
				continue // others are still on their way: rejoin
			}
			return resp
		}
	}
	var wg sync.WaitGroup
	joins := make([]*kmsg.JoinGroupResponse, len(sizes))
	for i := range sizes {
		wg.Add(1)
		go func() { defer wg.Done(); joins[i] = join("") }()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	errs := make([]error, len(sizes))
	for i, jr := range joins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group = group
			req.MemberID = jr.MemberID
			req.Generation = jr.Generation
			req.ProtocolType = kmsg.StringPtr("consumer")
			req.Protocol = kmsg.StringPtr(ProtocolName)
			for j, m := range jr.Members { // empty unless leader
				var asg kmsg.ConsumerMemberAssignment
				asg.UserData = make([]byte, sizes[j])
				sa := kmsg.NewSyncGroupRequestGroupAssignment()
				sa.MemberID = m.MemberID
				sa.MemberAssignment = asg.AppendTo(nil)
				req.GroupAssignment = append(req.GroupAssignment, sa)
			}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				errs[i] = err
				return
			}
			errs[i] = kerr.ErrorForCode(resp.ErrorCode)
		}()
	}
	wg.Wait()
	for i, jr := range joins {
		if jr.LeaderID == jr.MemberID {
			return errs[i]
		}
	}
	t.Fatal("no leader")
	return nil
}

// TestBrokerGroupRecordLimit calibrates, on the real broker, how many bytes
// of assignments one generation may hold: it is the default 1 MiB of
// offsets.topic max.message.bytes (1048588), less the record's own fields,
// summed over members. kfake enforces no limit, so there is nothing to
// calibrate on it.
func TestBrokerGroupRecordLimit(t *testing.T) {
	c := kafkatest.New(t)
	if !c.Real() {
		t.Skip("kfake stores group metadata without a size limit; calibration needs the real broker (RACKSTREAM_TEST_BROKERS)")
	}
	cl := c.Client()
	// Three members share the record: under the limit together, they sync;
	// a little over it, the broker refuses the generation.
	if err := syncGroupOf(t, c, cl, 340<<10, 340<<10, 340<<10); err != nil {
		t.Fatalf("3 x 340 KiB refused: %v", err)
	}
	if err := syncGroupOf(t, c, cl, 342<<10, 342<<10, 342<<10); err == nil {
		t.Fatal("3 x 342 KiB (1026 KiB) accepted: the broker's limit is not the 1 MiB default")
	} else {
		t.Logf("3 x 342 KiB: %v", err)
	}
	// The exact limit for one member, to the byte.
	lo, hi := 1000<<10, 1100<<10 // accepted, refused
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if syncGroupOf(t, c, cl, mid) == nil {
			lo = mid
		} else {
			hi = mid
		}
	}
	t.Logf("the broker stores a generation whose single assignment's user data is %d bytes and refuses %d (limit %d); DefaultMaxInlineBytes is %d", lo, hi, brokerRecordLimit, DefaultMaxInlineBytes)
	if lo < 1000<<10 || hi > brokerRecordLimit+100 {
		t.Fatalf("limit %d..%d is not about 1 MiB", lo, hi)
	}
}
