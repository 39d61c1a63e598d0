package state

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Catching up: what a restoring store must reach, the changelog's end
// offsets, and the catch-up that waits for it. Also the checks that decide
// whether a store's data can be continued from the changelog at all. The
// replicator's apply path feeds the catch-up (replicator.go).

// endOffsets returns, for t's stores, the log start offsets, the high
// watermarks and the catch-up targets. The targets are the high
// watermarks, read committed or not.
//
// Under read_committed the target is not the last stable offset. A
// transaction open on the changelog when the restore starts may still
// commit, with the input offsets the new owner resumes from. Its writer
// may be an exactly-once zombie, frozen between its TxnOffsetCommit and its
// EndTxn. Or it is a previous owner whose commit markers are not written
// yet. Stopping before such a transaction would lose its updates. With the
// high watermark as the target, the restore ends only once every
// transaction open at its start has ended. A committed one has its records
// applied; an aborted one has its records skipped and its marker passed.
// The writer's transaction timeout bounds that wait. openTxn reports the
// stores that wait, for the log.
func (r *replicator) endOffsets(ctx context.Context, t *Task) (start, hwm, target map[*DB]int64, openTxn []*DB, err error) {
	topics := make([]string, 0, len(t.stores))
	for _, s := range t.stores {
		topics = append(topics, s.changelog)
	}
	list := func(what string, fn func(context.Context, ...string) (kadm.ListedOffsets, error)) (map[*DB]int64, error) {
		var lo kadm.ListedOffsets
		// A topic created a moment ago may be unknown to cached metadata,
		// ours or a broker's: retry that for a while.
		err := retryUnknownTopic(ctx, func() error {
			var err error
			if lo, err = fn(ctx, topics...); err != nil {
				return err
			}
			if err = lo.Error(); errors.Is(err, kerr.UnknownTopicOrPartition) {
				r.cl.ForceMetadataRefresh()
				return err
			}
			// So may its leader, just after the create: retried the same
			// way.
			if errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.LeaderNotAvailable) {
				r.cl.ForceMetadataRefresh()
				return fmt.Errorf("%w (%w)", kerr.UnknownTopicOrPartition, err)
			}
			return nil
		})
		if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("state: list %s offsets of changelogs of task %d: %w", what, t.id, err)
		}
		out := make(map[*DB]int64, len(t.stores))
		for _, s := range t.stores {
			o, ok := lo.Lookup(s.changelog, s.partition)
			if !ok {
				return nil, fmt.Errorf("state: changelog %s has no partition %d (task %d store %s): create the changelog with as many partitions as tasks", s.changelog, s.partition, t.id, s.name)
			}
			if o.Err != nil {
				if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
					return nil, fmt.Errorf("state: changelog %s/%d of task %d store %s does not exist: %w", s.changelog, s.partition, t.id, s.name, o.Err)
				}
				return nil, fmt.Errorf("state: list %s offset of changelog %s/%d: %w", what, s.changelog, s.partition, o.Err)
			}
			out[s] = o.Offset
		}
		return out, nil
	}
	if start, err = list("start", r.adm.ListStartOffsets); err != nil {
		return
	}
	if hwm, err = list("end", r.adm.ListEndOffsets); err != nil {
		return
	}
	target = hwm
	if r.m.opts.ReadCommitted {
		var stable map[*DB]int64
		if stable, err = list("last stable", r.adm.ListCommittedOffsets); err != nil {
			return
		}
		for _, s := range t.stores {
			if stable[s] < hwm[s] {
				openTxn = append(openTxn, s)
			}
		}
	}
	return
}

// catchUp applies t's changelogs up to their end offsets as of now, and
// returns when every store has reached them. Stores already subscribed,
// those of a standby being promoted, keep their subscription. The caller
// unsubscribes.
func (r *replicator) catchUp(ctx context.Context, t *Task) error {
	if err := r.start(); err != nil {
		return err
	}
	startOff, hwm, target, openTxn, err := r.endOffsets(ctx, t)
	if err != nil {
		return err
	}
	for _, s := range openTxn {
		r.m.log.Info("state: a transaction is open on the changelog; the restore waits for it to end (at most its producer's transaction timeout)",
			"task", t.id, "store", s.name, "changelog", s.changelog, "partition", s.partition, "high_watermark", hwm[s])
	}
	began := time.Now()
	var total int64
	waiters := make(map[*DB]chan error)
	// Targets and waiters are set under applyMu: the poll loop cannot pass
	// a target between our reading the checkpoint and its waiter existing.
	r.applyMu.Lock()
	if t.Role() == RoleClosed { // closed while we listed offsets
		r.applyMu.Unlock()
		return ErrTaskClosed
	}
	for _, s := range t.stores {
		ck := s.Checkpoint()
		if reason := staleReason(ck, startOff[s], hwm[s]); reason != "" && !r.subscribed(s) {
			r.m.log.Warn("state: store does not match its changelog; wiping it and restoring from the start",
				"task", t.id, "store", s.name, "changelog", s.changelog, "checkpoint", ck,
				"log_start", startOff[s], "log_end", hwm[s], "reason", reason)
			if err := s.wipe(); err != nil {
				r.applyMu.Unlock()
				return t.storageErr(s, "wipe", err)
			}
			ck = 0
		}
		s.end.Store(hwm[s])
		// A changelog whose records up to the target were all deleted
		// (retention, DeleteRecords) has nothing to restore: the consumer
		// delivers no empty fetch, so waiting for the target would never end.
		if ck >= target[s] || startOff[s] >= target[s] {
			continue
		}
		w := make(chan error, 1)
		waiters[s] = w
		from := max(ck, startOff[s])
		total += target[s] - from
		s.rep.started, s.rep.lastLog = time.Now(), time.Now()
		s.rep.startNext, s.rep.applied = from, 0
		s.rep.remaining = target[s] - from
		s.stats.remaining.Store(target[s] - from)
		r.mu.Lock()
		s.rep.target = target[s]
		s.rep.waiter = w
		r.mu.Unlock()
	}
	r.applyMu.Unlock()
	if len(waiters) == 0 {
		return nil
	}
	r.m.log.Info("state: restoring task", "task", t.id, "stores", len(waiters), "records", total)
	if err := r.subscribe(t, keepTarget); err != nil {
		return err
	}
	for s, w := range waiters {
		select {
		case err := <-w:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return fmt.Errorf("state: restore task %d store %s: %w", t.id, s.name, ctx.Err())
		}
	}
	el := time.Since(began)
	r.m.log.Info("state: task restored", "task", t.id, "records", total, "took", el.Round(time.Millisecond),
		"records_per_sec", math.Round(float64(total)/max(el.Seconds(), 1e-9)))
	r.m.writeSidecars(t)
	return nil
}

// learnEnds lists, in the background, the end offsets of t's changelogs
// for its stores that have seen none, and gives each such store its end
// unless a fetch gave it one meanwhile. The consumer delivers no empty
// fetch, so a store subscribed at its changelog's end would otherwise learn
// the end, and its lag, only from the next record written there.
func (r *replicator) learnEnds(t *Task) {
	unknown := false
	for _, s := range t.stores {
		unknown = unknown || s.end.Load() < 0
	}
	if !unknown {
		return
	}
	r.listing.Add(1)
	go func() {
		defer r.listing.Done()
		_, hwm, _, _, err := r.endOffsets(r.ctx, t)
		if err != nil {
			if r.ctx.Err() == nil {
				r.m.log.Warn("state: a standby's changelog end offsets could not be listed; its lag stays unknown until a record comes",
					"task", t.id, "err", err)
			}
			return
		}
		for s, end := range hwm {
			s.end.CompareAndSwap(-1, end)
		}
	}()
}

func (r *replicator) subscribed(s *DB) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.subs[topicPartition{s.changelog, s.partition}] == s
}

// staleReason says why a store's data cannot be continued from the
// changelog, "" when it can.
func staleReason(ck, start, hwm int64) string {
	switch {
	case ck > hwm:
		return "checkpoint is past the changelog's end (the topic was recreated or truncated)"
	case ck > 0 && ck < start:
		return "records after the checkpoint were deleted from the changelog"
	}
	return ""
}

// wipe deletes the store's data and reopens it empty.
func (s *DB) wipe() error {
	if err := s.close(); err != nil {
		return err
	}
	if err := os.RemoveAll(s.path); err != nil {
		return err
	}
	s.count = approxCount{}
	return s.open(s.task.m.opts.WrapStorage)
}
