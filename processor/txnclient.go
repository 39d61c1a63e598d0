package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The session's side of exactly-once (txn.go has the commit path): the
// client's transactional settings, and the session as the txnProducer.

// TransactionTimeout is the transaction timeout of the exactly-once
// producer. A crashed instance's open transaction pins the last stable
// offset of its partitions until the coordinator aborts it, at most this
// long after. The last stable offset bounds what read_committed consumers,
// restores and standbys can read. It is shorter than franz-go's default to
// bound that pin. A restarted instance fences its predecessor at once.
const TransactionTimeout = 10 * time.Second

// TransactionalID is the transactional id of an instance of application
// appID with process id processID: stable across its restarts (the process
// id lives in the state directory), so that a restart fences the previous
// life's producer.
func TransactionalID(appID, processID string) string { return appID + "-" + processID }

// txnState is the session's transactional bookkeeping.
type txnState struct {
	id string
	// produced is set by a produce and cleared when a transaction begins.
	produced atomic.Bool
	// topicIDs caches the input topics' ids for TxnOffsetCommit v6+; the
	// commit in progress (one at a time) uses it.
	topicIDs map[string][16]byte
}

// txnClientOpts are the session client's options under exactly-once:
// the transactional id and timeout, read_committed fetches, and offset
// fetches that wait for pending transactional offsets (KIP-447).
func txnClientOpts(id string) []kgo.Opt {
	return []kgo.Opt{
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(TransactionTimeout),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
	}
}

// startTransactions begins the first transaction and initialises the
// producer id now, not at the first record. InitProducerID fences the
// previous life of this process id and aborts its open transaction.
// Otherwise that transaction would pin the last stable offset until it
// times out, and this instance's offset fetches (RequireStable) would wait
// as long.
func (s *session) startTransactions(ctx context.Context) error {
	if err := s.BeginTransaction(); err != nil {
		return fmt.Errorf("begin the first transaction: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*TransactionTimeout)
	defer cancel()
	if _, _, err := s.cl.ProducerID(ctx); err != nil {
		return fmt.Errorf("init the transactional producer %s: %w", s.txn.id, err)
	}
	return nil
}

func (s *session) BeginTransaction() error {
	s.txn.produced.Store(false)
	return s.cl.BeginTransaction()
}

func (s *session) EndTransaction(ctx context.Context, commit kgo.TransactionEndTry) error {
	return s.cl.EndTransaction(ctx, commit)
}

func (s *session) AbortBufferedRecords(ctx context.Context) error {
	return s.cl.AbortBufferedRecords(ctx)
}

func (s *session) ProducedInTransaction() bool { return s.txn.produced.Load() }

// TxnCommitOffsets adds offsets to the open transaction: AddOffsetsToTxn
// (the group's offsets partition joins the transaction) and
// TxnOffsetCommit with this member's id and generation, which the group
// coordinator checks (KIP-447): a zombie whose group moved on is refused.
func (s *session) TxnCommitOffsets(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset) error {
	pid, epoch, err := s.cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("producer id: %w", err)
	}
	member, generation := s.cl.GroupMetadata()
	group := s.r.topo.appID
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = s.txn.id, pid, epoch, group
	err = retryConcurrentTransactions(ctx, func() error {
		resp, err := add.RequestWith(ctx, s.cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	if err != nil {
		return fmt.Errorf("AddOffsetsToTxn for group %s: %w", group, err)
	}
	ids, err := s.inputTopicIDs(ctx)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = s.txn.id, group, pid, epoch
	req.MemberID, req.Generation = member, generation
	names := make(map[[16]byte]string)
	for topic, ps := range offsets {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		// Both: v6+ commits by id, earlier versions by name.
		rt.Topic, rt.TopicID = topic, ids[topic]
		names[rt.TopicID] = topic
		for p, eo := range ps {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, eo.Offset, eo.Epoch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return fmt.Errorf("TxnOffsetCommit (member %s, generation %d): %w", member, generation, err)
	}
	for _, t := range resp.Topics {
		name := t.Topic
		if name == "" {
			name = names[t.TopicID]
		}
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("TxnOffsetCommit %s/%d (member %s, generation %d): %w", name, p.Partition, member, generation, err)
			}
		}
	}
	return nil
}

// inputTopicIDs returns the input topics' ids, read once per session.
func (s *session) inputTopicIDs(ctx context.Context) (map[string][16]byte, error) {
	if s.txn.topicIDs != nil {
		return s.txn.topicIDs, nil
	}
	details, err := kadm.NewClient(s.cl).ListTopics(ctx, s.r.topo.InputTopics()...)
	if err == nil {
		err = details.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("topic ids of the inputs: %w", err)
	}
	ids := make(map[string][16]byte)
	for name, d := range details {
		ids[name] = d.ID
	}
	s.txn.topicIDs = ids
	return ids, nil
}

// retryConcurrentTransactions calls fn again while it fails with
// CONCURRENT_TRANSACTIONS (the previous transaction's markers are still
// being written), until ctx ends.
func retryConcurrentTransactions(ctx context.Context, fn func() error) error {
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		err := fn()
		if !errors.Is(err, kerr.ConcurrentTransactions) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// newTxnCommits returns the commits' exactly-once part for session s; its
// live and onAbort are set once the member exists.
func newTxnCommits(s *session) *txnCommits {
	return &txnCommits{txn: s, gate: new(sync.RWMutex), abortTimeout: TransactionTimeout, pauseTimeout: s.r.opts.ShutdownTimeout}
}
