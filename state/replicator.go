package state

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// progressEvery is how often a running restore logs its progress.
const progressEvery = 5 * time.Second

// unknownTopicPatience is how long a changelog may look unknown before
// restore gives up on it.
const unknownTopicPatience = 15 * time.Second

// restoreIdleFlush is how long a restore's partial batch may wait for more
// records while the consumer has none buffered.
const restoreIdleFlush = 200 * time.Millisecond

// replicator is the apply path shared by restore and standby tailing. One
// direct consumer per Manager, in no group, reads the changelog partitions
// of every subscribed store. It applies them in LevelDB batches that each
// carry their checkpoint.
type replicator struct {
	m *Manager

	initOnce sync.Once
	initErr  error
	cl       *kgo.Client
	adm      *kadm.Client
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	// listing counts the background end offset listings (learnEnds) that
	// close waits for.
	listing sync.WaitGroup

	// applyMu is held while a poll's records are applied; unsubscribe takes
	// it so that a store is never written after it leaves.
	applyMu sync.Mutex
	mu      sync.Mutex
	subs    map[topicPartition]*DB

	// sortersMu guards sorters, the flushes' idle batchSorters. Flushes of
	// several stores run at once (applyAll), each with its own sorter. At
	// most GOMAXPROCS are out at once. A sorter whose output batch outgrew
	// keepSorterBytes, a restore's, is left to the garbage collector once
	// no restore runs (putSorter). Not a sync.Pool: the collector empties
	// a pool every few cycles, and a tailing standby would grow its
	// sorters anew after each.
	sortersMu sync.Mutex
	sorters   []*batchSorter
}

type topicPartition struct {
	topic     string
	partition int32
}

// replicaState is a store's apply-path state. Fields are guarded by the
// replicator's applyMu, except target and waiter (its mu).
type replicaState struct {
	batch *leveldb.Batch
	// lastBytes is the size of the batch last written. A tailing standby's
	// next batch is made that large, not grown from nothing: goleveldb
	// grows a batch in small steps, copying it whole each time.
	lastBytes int
	next      int64 // next offset to apply: checkpoint + records in batch
	target    int64 // catch-up target, -1 when tailing without one
	waiter    chan error
	pending   int64 // records in batch
	// pendingSince is when the first record of the batch was added.
	pendingSince time.Time

	// restore progress
	started   time.Time
	startNext int64
	applied   int64
	remaining int64
	lastLog   time.Time
}

func (r *replicaState) init(s *DB) {
	r.target = -1
}

// batchFor returns the store's apply batch. A restoring store gets one
// sized for a whole RestoreBatchBytes up front, rather than reallocating it
// as it grows. A tailing standby's batch starts at the size of its last,
// lastBytes, and is dropped when idle: idle standbys hold no batch memory.
func (r *replicaState) batchFor(size int) *leveldb.Batch {
	if r.batch == nil {
		if r.target >= 0 {
			r.batch = leveldb.MakeBatch(size + size/8)
		} else {
			r.batch = leveldb.MakeBatch(min(r.lastBytes+r.lastBytes/8, size+size/8))
		}
	}
	return r.batch
}

// idle drops a tailing standby's batch after it was written.
func (r *replicaState) idle() {
	if r.target < 0 && r.batch != nil && r.batch.Len() == 0 {
		r.batch = nil
	}
}

func newReplicator(m *Manager) *replicator {
	return &replicator{m: m, subs: make(map[topicPartition]*DB)}
}

// start creates the consumer and the poll goroutine on first use.
func (r *replicator) start() error {
	r.initOnce.Do(func() {
		o := r.m.opts
		iso := kgo.ReadUncommitted()
		if o.ReadCommitted {
			iso = kgo.ReadCommitted()
		}
		// A short metadata min age lets a just-created changelog become
		// known quickly, as cached "unknown topic" answers last that long.
		// ClientOpts may override it.
		opts := append([]kgo.Opt{kgo.MetadataMinAge(time.Second)}, o.ClientOpts...)
		opts = append(opts,
			kgo.WithPools(&recordPool{}, &decompressPool{}), // apply recycles every record
			kgo.FetchIsolationLevel(iso),
			kgo.KeepControlRecords(), // they move the checkpoint past transaction markers
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxBytes(o.FetchMaxBytes),
			kgo.FetchMaxPartitionBytes(o.FetchMaxBytes),
			kgo.FetchMaxWait(250*time.Millisecond), // new subscriptions join the next fetch quickly
		)
		r.cl, r.initErr = kgo.NewClient(opts...)
		if r.initErr != nil {
			r.initErr = fmt.Errorf("state: restore consumer: %w", r.initErr)
			return
		}
		r.adm = kadm.NewClient(r.cl)
		r.ctx, r.cancel = context.WithCancel(context.Background())
		r.done = make(chan struct{})
		go r.run()
	})
	return r.initErr
}

func (r *replicator) close() {
	if r.cl == nil {
		return
	}
	r.cancel()
	<-r.done
	r.listing.Wait()
	r.cl.Close()
}

// keepTarget tells subscribe to keep the targets catchUp set.
const keepTarget = -2

// subscribe starts feeding t's stores from their checkpoints; target >= 0
// makes each store signal its waiter when its checkpoint reaches it.
func (r *replicator) subscribe(t *Task, target int64) error {
	if err := r.start(); err != nil {
		return err
	}
	add := make(map[string]map[int32]kgo.Offset)
	r.applyMu.Lock()
	r.mu.Lock()
	if t.Role() == RoleClosed { // Close ran since the caller's role check
		r.mu.Unlock()
		r.applyMu.Unlock()
		return ErrTaskClosed
	}
	for _, s := range t.stores {
		tp := topicPartition{s.changelog, s.partition}
		if r.subs[tp] == s {
			continue
		}
		if other := r.subs[tp]; other != nil {
			r.mu.Unlock()
			r.applyMu.Unlock()
			return fmt.Errorf("state: changelog %s/%d is already fed to task %d store %s", tp.topic, tp.partition, other.task.id, other.name)
		}
		s.rep.next = s.Checkpoint()
		if target != keepTarget {
			s.rep.target = target
		}
		s.rep.pending = 0
		r.subs[tp] = s
		if add[tp.topic] == nil {
			add[tp.topic] = make(map[int32]kgo.Offset)
		}
		add[tp.topic][tp.partition] = kgo.NewOffset().At(s.rep.next)
	}
	r.mu.Unlock()
	r.applyMu.Unlock()
	r.cl.AddConsumePartitions(add)
	return nil
}

// unsubscribe stops feeding t's stores, writing what their batches hold.
func (r *replicator) unsubscribe(t *Task) {
	if r.cl == nil {
		return
	}
	rm := make(map[string][]int32)
	r.applyMu.Lock()
	r.mu.Lock()
	for _, s := range t.stores {
		// A waiter may exist before its store is subscribed, as catchUp
		// sets it first: release it either way.
		s.rep.target = -1
		if s.rep.waiter != nil {
			s.rep.waiter <- ErrTaskClosed
			s.rep.waiter = nil
		}
		tp := topicPartition{s.changelog, s.partition}
		if r.subs[tp] != s {
			continue
		}
		delete(r.subs, tp)
		rm[tp.topic] = append(rm[tp.topic], tp.partition)
	}
	r.mu.Unlock()
	for _, s := range t.stores {
		if s.rep.pending > 0 && t.Err() == nil && s.db != nil {
			r.flush(s)
		}
		s.rep.batch = nil // a left store holds no batch memory
		s.stats.endRestore()
	}
	r.applyMu.Unlock()
	r.cl.RemoveConsumePartitions(rm)
}

// run is the poll loop.
func (r *replicator) run() {
	defer close(r.done)
	dirty := make(map[*DB]struct{})
	index := make(map[*DB]int)
	var work []storeFetches
	for {
		// Everything buffered: franz-go sends the next fetch once the
		// buffered one is taken whole, so that fetch runs while this one
		// is applied. A poll of part of it would hold the next fetch back
		// until the last part. A poll is at most one fetch response per
		// broker (FetchMaxBytes).
		fs := r.cl.PollFetches(r.ctx)
		if r.ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		r.applyMu.Lock()
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			r.m.log.Warn("state: changelog fetch error", "topic", topic, "partition", p, "err", err)
		})
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			r.mu.Lock()
			s := r.subs[topicPartition{p.Topic, p.Partition}]
			r.mu.Unlock()
			if s == nil || s.db == nil {
				for _, rec := range p.Records {
					rec.Recycle()
				}
				return
			}
			i, ok := index[s]
			if !ok {
				i = len(work)
				index[s] = i
				work = append(work, storeFetches{s: s})
			}
			work[i].parts = append(work[i].parts, p)
		})
		r.applyAll(work)
		for i := range work {
			dirty[work[i].s] = struct{}{}
			clear(work[i].parts) // hold no records until the next poll
			work[i] = storeFetches{parts: work[i].parts[:0]}
		}
		work = work[:0]
		clear(index)
		idle := r.cl.BufferedFetchRecords() == 0
		for s := range dirty {
			if !r.isSub(s) {
				delete(dirty, s)
				continue
			}
			// apply writes full batches. A standby writes the rest as
			// soon as the consumer has nothing buffered: tailing is about
			// latency. A restore keeps filling its batch until it is full,
			// the restore reached its end, or it was idle a moment. Fewer,
			// larger writes stay clear of LevelDB's per-write L0 slowdown.
			if r.reached(s) || idle && (!r.restoring(s) || time.Since(s.rep.pendingSince) > restoreIdleFlush) {
				r.flush(s)
				s.rep.idle()
				delete(dirty, s)
			}
		}
		r.applyMu.Unlock()
	}
}

// storeFetches are one poll's fetched partitions for one store, in order.
type storeFetches struct {
	s     *DB
	parts []kgo.FetchTopicPartition
}

// applyAll applies one poll's records, stores in parallel. One goroutine
// applies each store's records, in order. LevelDB serialises the writes to
// one database, not to several, so restoring many tasks uses the cores.
func (r *replicator) applyAll(work []storeFetches) {
	procs := runtime.GOMAXPROCS(0)
	if len(work) == 1 || procs == 1 {
		for i := range work {
			for j := range work[i].parts {
				r.apply(work[i].s, &work[i].parts[j])
			}
		}
		return
	}
	sem := make(chan struct{}, procs)
	var wg sync.WaitGroup
	for i := range work {
		w := &work[i]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			for j := range w.parts {
				r.apply(w.s, &w.parts[j])
			}
		}()
	}
	wg.Wait()
}

func (r *replicator) isSub(s *DB) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.subs[topicPartition{s.changelog, s.partition}] == s
}

func (r *replicator) restoring(s *DB) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.rep.target >= 0
}

func (r *replicator) reached(s *DB) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.rep.target >= 0 && s.rep.next >= s.rep.target
}

// apply adds one fetched partition's records to the store's batch. It
// allocates nothing per record: keys are prefixed into a reused scratch
// buffer and the batch copies them.
func (r *replicator) apply(s *DB, p *kgo.FetchTopicPartition) {
	if err := changelogMoved(s, p); err != nil {
		for _, rec := range p.Records {
			rec.Recycle()
		}
		r.finish(s, s.task.storageErr(s, "tail changelog into", err))
		return
	}
	limit := r.m.opts.RestoreBatchBytes
	b := s.rep.batchFor(limit)
	for i, rec := range p.Records {
		switch {
		case rec.Offset < s.rep.next:
			// already applied (a re-fetch after resubscribing)
		case rec.Attrs.IsControl():
			s.rep.next = rec.Offset + 1
		default:
			s.scratch = appendDataKey(s.scratch[:0], rec.Key)
			if rec.Value == nil {
				b.Delete(s.scratch)
			} else {
				b.Put(s.scratch, rec.Value)
			}
			s.rep.next = rec.Offset + 1
			if s.rep.pending == 0 {
				s.rep.pendingSince = time.Now()
			}
			s.rep.pending++
			s.rep.applied++
		}
		rec.Recycle() // the batch holds copies
		if len(b.Dump()) >= limit {
			if !r.flush(s) {
				// The store failed and left: recycle the rest unread.
				// Only the rest: a recycled record's memory may already
				// hold another fetch's record.
				for _, rest := range p.Records[i+1:] {
					rest.Recycle()
				}
				return
			}
			b = s.rep.batchFor(limit)
		}
	}
	end := p.HighWatermark
	if r.m.opts.ReadCommitted {
		end = p.LastStableOffset
	}
	if end >= 0 {
		s.end.Store(end)
	}
}

// changelogMoved reports a changelog that no longer continues the store.
// Either records after its position were deleted, as the log start passed
// it. Or the log is shorter than what the store applied: the topic was
// recreated, or an unclean leader election lost records. Compaction gaps
// are neither: they never move the log start. Unreported, the consumer
// would silently skip ahead in the first case, and find nothing new
// forever in the second.
func changelogMoved(s *DB, p *kgo.FetchTopicPartition) error {
	if p.Err != nil {
		return nil
	}
	next := s.rep.next
	switch {
	case next > 0 && p.LogStartOffset > next:
		return fmt.Errorf("changelog %s/%d now starts at offset %d, after the store's position %d: records were deleted under it; the store must be rebuilt (close the task and restore it)",
			s.changelog, s.partition, p.LogStartOffset, next)
	case p.HighWatermark >= 0 && p.HighWatermark < next:
		return fmt.Errorf("changelog %s/%d ends at offset %d, before the store's position %d: the topic was recreated or lost records; the store must be rebuilt (close the task and restore it)",
			s.changelog, s.partition, p.HighWatermark, next)
	}
	return nil
}

// flush writes the store's batch with its checkpoint, then signals a
// waiting restore that has reached its target. It returns false when the
// write failed: the store has then left the apply path.
func (r *replicator) flush(s *DB) bool {
	b := s.rep.batchFor(r.m.opts.RestoreBatchBytes)
	if s.rep.next > s.Checkpoint() || b.Len() > 0 {
		sorter := r.sorter()
		sorted := sorter.sorted(b)
		s.rep.lastBytes = len(b.Dump())
		err := s.writeBatch(sorted, s.rep.next)
		b.Reset() // writeBatch reset sorted, which may be b or the sorter's
		r.putSorter(sorter)
		if err != nil {
			err = s.task.storageErr(s, "apply changelog batch to", err)
			r.finish(s, err)
			return false
		}
		s.stats.restored.Add(s.rep.pending)
		s.count.add(s.rep.pending, 0) // deletes counted as puts: approximate
		s.rep.pending = 0
	}
	r.progress(s)
	r.mu.Lock()
	reached := s.rep.target >= 0 && s.Checkpoint() >= s.rep.target
	r.mu.Unlock()
	if reached {
		r.finish(s, nil)
	}
	return true
}

// finish ends a store's catch-up, passing err to its waiter.
func (r *replicator) finish(s *DB, err error) {
	r.mu.Lock()
	w := s.rep.waiter
	s.rep.waiter = nil
	s.rep.target = -1
	r.mu.Unlock()
	if err != nil {
		// A failing store leaves the consumer, and nothing more is applied
		// to it. Its checkpoint is where the changelog resumes.
		tp := topicPartition{s.changelog, s.partition}
		r.mu.Lock()
		if r.subs[tp] == s {
			delete(r.subs, tp)
		}
		r.mu.Unlock()
		go r.cl.RemoveConsumePartitions(map[string][]int32{tp.topic: {tp.partition}})
	}
	if w != nil {
		s.stats.endRestore()
		w <- err
	}
}

// progress publishes a running restore's progress for the store's
// series, and logs it every progressEvery.
func (r *replicator) progress(s *DB) {
	r.mu.Lock()
	target := s.rep.target
	r.mu.Unlock()
	if target < 0 {
		if s.task.Role() == RoleStandby {
			r.m.maybeWriteSidecars(s.task)
		}
		return
	}
	if left := max(0, target-s.Checkpoint()); left < s.rep.remaining {
		s.rep.remaining = left
		s.stats.remaining.Store(left)
	}
	el := time.Since(s.rep.started).Seconds()
	rate := float64(s.rep.applied) / max(el, 1e-9)
	eta := 0.0
	if rate > 0 {
		eta = float64(s.rep.remaining) / rate
	}
	s.stats.rate.Store(rate)
	s.stats.eta.Store(eta)
	if time.Since(s.rep.lastLog) >= r.m.progressEvery {
		s.rep.lastLog = time.Now()
		r.m.log.Info("state: restore progress", "task", s.partition, "store", s.name,
			"records_left", s.rep.remaining, "records_per_sec", math.Round(rate),
			"eta", (time.Duration(eta) * time.Second).Round(time.Second), "checkpoint", s.Checkpoint(), "target", target)
	}
}
