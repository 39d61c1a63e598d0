package processor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Purging the repartition topics: the owner of a task deletes the records
// of its repartition partitions below the group's committed offset, once
// every Options.RepartitionPurgeInterval, after a commit (Kafka Streams'
// repartition.purge.interval.ms). Records below the committed offset are
// handled, and their effects are durable: no owner reads them again.
//
// purgeSchedule makes the decisions, a plain function of its state;
// repartitionPurger sends them to the cluster.

// purgeSchedule decides when a purge is due and below which offsets it
// deletes. Its zero value is not usable: newPurgeSchedule.
type purgeSchedule struct {
	every time.Duration
	// next is when the next purge is due.
	next time.Time
	// purged is, per topic and partition, the offset the records below
	// which were deleted: asking again is pointless.
	purged map[string]map[int32]int64
}

// newPurgeSchedule returns a schedule purging every every, the first time
// an interval after now.
func newPurgeSchedule(every time.Duration, now time.Time) *purgeSchedule {
	return &purgeSchedule{every: every, next: now.Add(every), purged: make(map[string]map[int32]int64)}
}

// due returns the offsets to delete below at now, per topic and partition,
// given the committed offsets of the partitions this instance owns: each
// committed offset above what was purged. It returns nil while no purge
// is due, and when nothing is new; a purge due moves the next one an
// interval after now.
func (p *purgeSchedule) due(now time.Time, committed map[string]map[int32]int64) map[string]map[int32]int64 {
	if now.Before(p.next) {
		return nil
	}
	p.next = now.Add(p.every)
	var out map[string]map[int32]int64
	for topic, parts := range committed {
		for part, off := range parts {
			if off <= 0 || off <= p.purged[topic][part] {
				continue
			}
			if out == nil {
				out = make(map[string]map[int32]int64)
			}
			if out[topic] == nil {
				out[topic] = make(map[int32]int64)
			}
			out[topic][part] = off
		}
	}
	return out
}

// done records that the records below deleted's offsets are gone.
func (p *purgeSchedule) done(deleted map[string]map[int32]int64) {
	for topic, parts := range deleted {
		if p.purged[topic] == nil {
			p.purged[topic] = make(map[int32]int64)
		}
		for part, off := range parts {
			p.purged[topic][part] = max(p.purged[topic][part], off)
		}
	}
}

// committedOffsets returns the committed offsets of tasks' partitions of
// topics: partition i is task i's.
func committedOffsets(tasks []*task, topics []string) map[string]map[int32]int64 {
	out := make(map[string]map[int32]int64, len(topics))
	for _, topic := range topics {
		for _, t := range tasks {
			if v, ok := t.durable.Load(topic); ok {
				if out[topic] == nil {
					out[topic] = make(map[int32]int64)
				}
				out[topic][t.id] = v.(int64)
			}
		}
	}
	return out
}

// purgeTimeout bounds one purge's DeleteRecords.
const purgeTimeout = 30 * time.Second

// repartitionPurger runs a session's purges: at most one at a time, on a
// goroutine of its own, so that a slow broker never holds a commit. A nil
// *repartitionPurger (no repartition topic) does nothing.
type repartitionPurger struct {
	topics []string
	adm    *kadm.Client
	log    *slog.Logger
	busy   atomic.Bool // a purge is in flight
	wg     sync.WaitGroup
	// mu guards sched: the commit loop reads it, a purge's goroutine
	// records its result.
	mu    sync.Mutex
	sched *purgeSchedule
}

// newRepartitionPurger returns the purger of topics through adm, purging
// every every from now; nil when there is no topic.
func newRepartitionPurger(topics []string, adm *kadm.Client, every time.Duration, log *slog.Logger) *repartitionPurger {
	if len(topics) == 0 {
		return nil
	}
	return &repartitionPurger{topics: topics, adm: adm, log: log, sched: newPurgeSchedule(every, time.Now())}
}

// afterCommit starts a purge of the live tasks' repartition partitions
// when one is due and none is in flight. The commit loop calls it after
// each commit.
func (p *repartitionPurger) afterCommit(ctx context.Context, live []*task) {
	if p == nil || !p.busy.CompareAndSwap(false, true) {
		return
	}
	committed := committedOffsets(live, p.topics)
	p.mu.Lock()
	offsets := p.sched.due(time.Now(), committed)
	p.mu.Unlock()
	if len(offsets) == 0 {
		p.busy.Store(false)
		return
	}
	p.wg.Go(func() {
		defer p.busy.Store(false)
		deleted := p.purge(ctx, offsets)
		p.mu.Lock()
		p.sched.done(deleted)
		p.mu.Unlock()
	})
}

// purge deletes the records below offsets and returns the offsets it
// deleted below. A failure is logged: the next purge asks again.
func (p *repartitionPurger) purge(ctx context.Context, offsets map[string]map[int32]int64) map[string]map[int32]int64 {
	ctx, cancel := context.WithTimeout(ctx, purgeTimeout)
	defer cancel()
	req := make(kadm.Offsets)
	for topic, parts := range offsets {
		for part, off := range parts {
			req.Add(kadm.Offset{Topic: topic, Partition: part, At: off, LeaderEpoch: -1})
		}
	}
	resps, err := p.adm.DeleteRecords(ctx, req)
	if err != nil && ctx.Err() == nil {
		p.log.Warn("purging repartition topics: retrying at the next purge", "err", err)
	}
	deleted := make(map[string]map[int32]int64)
	resps.Each(func(r kadm.DeleteRecordsResponse) {
		// Out of range: below the log start, the records are gone already.
		if r.Err != nil && !errors.Is(r.Err, kerr.OffsetOutOfRange) {
			p.log.Warn("purging a repartition partition: retrying at the next purge", "topic", r.Topic, "partition", r.Partition, "err", r.Err)
			return
		}
		if deleted[r.Topic] == nil {
			deleted[r.Topic] = make(map[int32]int64)
		}
		deleted[r.Topic][r.Partition] = offsets[r.Topic][r.Partition]
	})
	p.log.Debug("purged repartition topics", "below", deleted)
	return deleted
}

// wait waits for the purge in flight, if any.
func (p *repartitionPurger) wait() {
	if p != nil {
		p.wg.Wait()
	}
}
