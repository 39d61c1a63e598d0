package balancer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The changelogs' end offsets: what a member's checkpoints are measured
// against to know its lag on each task (the leader's input, and the
// members' warmup checks).

// fetchEnds reads the changelogs' end offsets. After a failure the leader
// keeps the previous placement and retries with a backoff: a changelog
// that does not exist yet must not make the group rebalance every second.
func (b *Balancer) fetchEnds() (endSums, error) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultEndOffsetsTimeout)
	ends, err := b.endOffsets(ctx)
	cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.endFailStreak++
		wait := min(time.Second<<min(b.endFailStreak-1, 6), time.Minute)
		b.retryAt = time.Now().Add(wait)
		b.endOffsetFailures.Add(1)
		b.log.Warn("cannot fetch changelog end offsets; keeping the previous placement and retrying", "in", wait, "err", err)
	} else {
		b.endFailStreak = 0
	}
	return ends, err
}

// endSums holds, per task, the sum of its changelog partitions' end offsets.
type endSums map[int32]int64

func (e endSums) sum(t int32) int64 { return e[t] }

// endOffsets fetches the changelog end offsets and sums them per task.
func (b *Balancer) endOffsets(ctx context.Context) (endSums, error) {
	if len(b.s.ChangelogTopics) == 0 {
		return endSums{}, nil
	}
	var ends map[string]map[int32]int64
	var err error
	if b.s.EndOffsets != nil {
		ends, err = b.s.EndOffsets(ctx, b.s.ChangelogTopics)
	} else {
		b.mu.Lock()
		cl := b.cl
		b.mu.Unlock()
		if cl == nil {
			return nil, errors.New("the balancer has no client yet")
		}
		ends, err = kadmEndOffsets(ctx, cl, b.s.ChangelogTopics, b.s.ReadCommitted)
	}
	if err != nil {
		return nil, err
	}
	sums := make(endSums)
	for _, t := range b.s.ChangelogTopics {
		ps, ok := ends[t]
		if !ok {
			return nil, fmt.Errorf("no end offsets for changelog %s", t)
		}
		for p, o := range ps {
			sums[p] += max(0, o)
		}
	}
	return sums, nil
}

func kadmEndOffsets(ctx context.Context, cl *kgo.Client, topics []string, readCommitted bool) (map[string]map[int32]int64, error) {
	list := kadm.NewClient(cl).ListEndOffsets
	if readCommitted {
		list = kadm.NewClient(cl).ListCommittedOffsets
	}
	los, err := list(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %v: %w", topics, err)
	}
	if err := los.Error(); err != nil {
		return nil, fmt.Errorf("list end offsets of %v: %w", topics, err)
	}
	out := make(map[string]map[int32]int64, len(topics))
	los.Each(func(o kadm.ListedOffset) {
		if out[o.Topic] == nil {
			out[o.Topic] = make(map[int32]int64)
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	return out, nil
}
