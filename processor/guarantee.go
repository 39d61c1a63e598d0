package processor

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Guarantee is processing.guarantee: what a crash does to the records
// processed since the last commit.
type Guarantee string

const (
	// AtLeastOnce commits at the processed watermark every commit
	// interval: a crash processes the records after the last commit again
	// (their state updates and outputs may repeat); none is skipped.
	AtLeastOnce Guarantee = "at_least_once"
	// ExactlyOnceV2 writes each commit interval's changelog records,
	// outputs, dead letters and input offsets in one Kafka transaction, of
	// one transactional producer per instance, as Kafka Streams'
	// exactly_once_v2. A crash aborts the open transaction, and the records
	// are processed again from state that never saw them. Local state
	// follows the transaction. It costs a transaction per commit interval
	// (DefaultCommitIntervalExactlyOnce by default). Readers under
	// read_committed see outputs only when their transaction commits.
	ExactlyOnceV2 Guarantee = "exactly_once_v2"
	// AtMostOnce commits a batch's input offsets before its records are
	// processed. A crash may skip the records of the batch in progress,
	// and the state updates since the last store commit that had not
	// reached the changelog; it never repeats one. Kafka Streams has no
	// such value; it is for consumers that prefer a gap to a duplicate.
	AtMostOnce Guarantee = "at_most_once"
)

// ParseGuarantee returns the guarantee named s (processing.guarantee's
// values).
func ParseGuarantee(s string) (Guarantee, error) {
	switch g := Guarantee(s); g {
	case AtLeastOnce, ExactlyOnceV2, AtMostOnce:
		return g, nil
	}
	return "", fmt.Errorf("processor: unknown processing guarantee %q: want at_least_once, exactly_once_v2 or at_most_once", s)
}

// commitAhead is the at-most-once step before a task works through a
// batch: it commits the offset after the batch's last record, so that
// no crash can hand these records to anyone again. The batch must not be
// processed without it. A failed commit is retried with backoff until it
// succeeds or the task is stopped by a revoke or a loss. The usual cause
// is a rebalance in progress, and the next generation accepts the commit.
// It reports false when the task is stopped.
//
// It takes the task's commit lock, like every commit of the task, because
// it updates the task's committed offsets that the periodic commits read.
// Those then find nothing to commit for the input, since the offsets are
// ahead of the processed watermark, and only write the stores.
func (c *commits) commitAhead(ctx context.Context, t *task, records []*kgo.Record) bool {
	if len(records) == 0 {
		return true
	}
	last := records[len(records)-1]
	offsets := map[string]map[int32]kgo.EpochOffset{
		last.Topic: {last.Partition: {Epoch: last.LeaderEpoch, Offset: last.Offset + 1}},
	}
	backoff := 100 * time.Millisecond
	for {
		err := t.commitMu.LockContext(ctx)
		if err != nil {
			return false
		}
		if t.committed[last.Topic] >= last.Offset+1 {
			t.commitMu.Unlock()
			return true // a batch fetched again after a rewind: already committed
		}
		err = c.offsets.CommitOffsets(ctx, offsets)
		if err == nil {
			t.setCommitted(last.Topic, last.Offset+1)
		}
		t.commitMu.Unlock()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		c.met.commitFailures.Inc()
		c.log.Warn("at-most-once: committing a batch's offsets before processing it failed; retrying", "task", t.id, "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
