package processor

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// poll fetches records and hands each partition's batch to its task until
// ctx is done (nil) or a fatal error ends the session.
func (s *session) poll(ctx context.Context) error {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.failed, cancel) // a fatal error wakes the poll
	defer stop()
	limit := int64(2 * s.r.opts.maxPollRecords)
	for {
		for s.queued.Load() > limit {
			select {
			case <-s.drained:
			case <-pctx.Done():
				if err := s.failure(); err != nil && ctx.Err() == nil {
					return err
				}
				return nil
			}
		}
		fs := s.pollOnce(pctx)
		err := s.handOver(ctx, fs)
		s.rewind() // after an aborted transaction (rewind.go) or a task's failure (restart.go)
		// Every batch of this poll is with its task: rebalances may run.
		// (BlockRebalanceOnPoll keeps them from running between a poll
		// and its hand-over, where a revoke and a reassignment could give
		// an earlier owner's batch to a new task, out of order.)
		s.cl.AllowRebalance()
		if err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// handOver queues the batches of one poll on their tasks. It returns an
// error that ends the session, and nil when ctx is done.
func (s *session) handOver(ctx context.Context, fs kgo.Fetches) error {
	if ctx.Err() != nil {
		return nil
	}
	if err := s.failure(); err != nil {
		return err
	}
	if fs.IsClientClosed() {
		return kgo.ErrClientClosed
	}
	var fatal error
	fs.EachError(func(topic string, p int32, err error) {
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		case isRetriable(err):
			s.log.Warn("fetch error; retrying", "topic", topic, "partition", p, "err", err)
		default:
			if fatal == nil {
				fatal = fmt.Errorf("fetch %s/%d: %w", topic, p, err)
			}
		}
	})
	if fatal != nil {
		return fatal
	}
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) > 0 {
			s.dispatch(p)
		}
	})
	return nil
}

// isRetriable reports whether a fetch error is one the client recovers from
// by itself.
func isRetriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	var dl *kgo.ErrDataLoss
	var gs *kgo.ErrGroupSession
	return errors.As(err, &dl) || errors.As(err, &gs) || kgo.IsRetryableBrokerErr(err)
}

// dispatch queues a batch on its task without blocking: a task whose queue
// is long has its partitions paused until it catches up.
func (s *session) dispatch(p kgo.FetchTopicPartition) {
	t := s.m.task(p.Partition)
	if t == nil {
		return // not ours (anymore): the owner fetches from the committed offset
	}
	last := p.Records[len(p.Records)-1].Offset
	if _, seen := t.first[p.Topic]; !seen && t.moved {
		s.log.Debug("first fetch of a moved task", "task", t.id, "topic", p.Topic, "offset", p.Records[0].Offset, "records", len(p.Records))
	}
	t.stats.lag.WithLabelValues(p.Topic).Set(float64(max(0, p.HighWatermark-last-1)))
	if !t.push(p) {
		return // the task ended meanwhile
	}
	s.queued.Add(int64(len(p.Records)))
}
