package processor

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// What the task, commit and rebalance paths need of Kafka, as three small
// interfaces. The session's *kgo.Client provides them in production, with
// groupCommitter adapting its offset commit. The unit tests of commit.go
// and rebalance.go pass fakes, so those paths run with no broker at all.

// producer sends a task's records (outputs, dead letters, and through its
// stores the changelog) and flushes them before a commit. Produce calls
// promise once, with the record it was given: an output's promise hands
// it back to its task's arena (internal/recarena).
type producer interface {
	Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error))
	Flush(ctx context.Context) error
}

// committer commits input offsets for the group.
type committer interface {
	CommitOffsets(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset) error
}

// fetcher pauses and resumes a task's input partitions.
type fetcher interface {
	PauseFetchPartitions(map[string][]int32) map[string][]int32
	ResumeFetchPartitions(map[string][]int32)
}

// groupCommitter commits through the group member's client, turning
// per-partition error codes into an error naming the partition.
type groupCommitter struct{ cl *kgo.Client }

func (g groupCommitter) CommitOffsets(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset) error {
	var cerr error
	g.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil && cerr == nil {
					cerr = fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err)
				}
			}
		}
	})
	return cerr
}
