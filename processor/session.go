package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/processor/partition"
	"github.com/rackstream/rackstream/state"
)

// session is the life of one Kafka client: its group membership, the tasks
// it runs and the standbys it keeps. A fatal client error ends the session
// and the runtime starts a new one with a new client.
type session struct {
	r   *Runtime
	mgr *state.Manager
	n   int32
	log *slog.Logger
	bal *balancer.Balancer
	cl  *kgo.Client

	ctx    context.Context // produces and task contexts derive from it
	cancel context.CancelFunc

	changelogs map[string]bool

	mu          sync.Mutex
	active      map[int32]*task
	standby     map[int32]*state.Task // standby and warmup replicas
	assigned    bool                  // an assignment arrived
	closing     bool                  // graceful shutdown: revoked tasks close
	broken      error                 // set when the session must end; revokes then drop
	topoErr     error                 // partition counts changed: tasks stopped, none started
	revokeStart time.Time
	abandoned   []*task // tasks stop gave up on; they drop themselves

	commitMu ctxMutex // one commit at a time

	// abortMu guards aborts: the cancels of the background commits in
	// progress (the commit loop's, the topology stop's). A lost partition
	// and a shutdown abort them: a commit flushing to unreachable brokers
	// holds its tasks' locks, and the group callback that drops those
	// tasks (which the poll loop, and so the shutdown, waits for) must not
	// wait for brokers that may never come back.
	abortMu sync.Mutex
	aborts  map[*context.CancelFunc]struct{}
	stopped bool // shutting down: no new background commit starts

	// queued counts the records handed to tasks and not yet taken up; the
	// poll loop waits while it is above 2 x MaxPollRecords, so that it does
	// not race ahead of the tasks for CPU and memory. drained is signalled
	// (capacity 1) whenever a task takes up a batch.
	queued  atomic.Int64
	drained chan struct{}

	// commitWanted is signalled (capacity 1) when a task has worked
	// through a batch: with a zero CommitInterval the commit loop commits
	// then.
	commitWanted chan time.Time

	prodMu  sync.Mutex
	prodErr error // the first failed produce (output or dead letter)

	failMu     sync.Mutex
	failErr    error              // the first fatal error of the committer or a watcher
	pollCancel context.CancelFunc // wakes the poll loop when failErr is set
}

// startError is a failure to build the session's client or balancer: bad
// options, which a rebuild would not cure.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

func (r *Runtime) runSession(ctx context.Context, mgr *state.Manager, n int32) error {
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &session{
		r: r, mgr: mgr, n: n, log: r.log,
		ctx: sctx, cancel: cancel,
		changelogs: make(map[string]bool),
		active:     make(map[int32]*task),
		standby:    make(map[int32]*state.Task),
		commitMu:   make(ctxMutex, 1),
		aborts:     make(map[*context.CancelFunc]struct{}),
		drained:    make(chan struct{}, 1),

		commitWanted: make(chan time.Time, 1),
	}
	for _, c := range r.topo.ChangelogTopics() {
		s.changelogs[c] = true
	}
	bs := balancer.DefaultSettings()
	bs.ApplicationID, bs.ProcessID, bs.Endpoint, bs.Tags = r.topo.appID, mgr.ProcessID(), r.opts.Endpoint, r.opts.Tags
	bs.Capacity = r.opts.Capacity
	bs.InputTopics, bs.ChangelogTopics = r.topo.InputTopics(), r.topo.ChangelogTopics()
	bs.NumStandbys, bs.RackAwareTags = r.opts.NumStandbys, r.opts.RackAwareTags
	bs.AcceptableRecoveryLag, bs.MaxWarmups, bs.ProbingInterval = r.opts.AcceptableRecoveryLag, r.opts.MaxWarmups, r.opts.ProbingInterval
	bs.Checkpoints, bs.ClientOpts = s.checkpoints, r.clientOpts()
	bs.PlacementReplicationFactor, bs.HeartbeatInterval = r.opts.ReplicationFactor, r.opts.HeartbeatInterval
	bs.Logger = r.opts.Logger
	bal, err := balancer.New(bs)
	if err != nil {
		return &startError{fmt.Errorf("balancer: %w", err)}
	}
	s.bal = bal
	// A task's partitions are paused while its stores restore; a short
	// fetch wait makes their resumption prompt. A producer linger batches
	// the changelog and output records of many input records per request
	// (4x the throughput of no linger on one broker; Kafka Streams lingers
	// 100 ms); every commit flushes anyway. ClientOpts may override both.
	opts := append([]kgo.Opt{kgo.FetchMaxWait(500 * time.Millisecond), kgo.ProducerLinger(20 * time.Millisecond)}, r.clientOpts()...)
	opts = append(opts, bal.Opts()...)
	opts = append(opts,
		kgo.OnPartitionsAssigned(s.onAssigned),
		kgo.OnPartitionsRevoked(s.onRevoked),
		kgo.OnPartitionsLost(s.onLost),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(r.opts.SessionTimeout),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(state.ChangelogPartitioner(func(t string) bool { return s.changelogs[t] }, partition.Kgo(r.opts.Partitioner))),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return &startError{fmt.Errorf("kafka client: %w", err)}
	}
	s.cl = cl
	r.mu.Lock()
	r.sess = s
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.sess = nil
		r.mu.Unlock()
	}()

	commitDone := make(chan struct{})
	go func() {
		defer close(commitDone)
		s.commitLoop()
	}()
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		s.watchTopology()
	}()
	// A shutdown aborts the background commit in progress at once: the
	// revoke while leaving the group commits everything again, within the
	// shutdown timeout, and it must not wait for a commit stuck flushing.
	stopAborting := context.AfterFunc(ctx, func() { s.abortBackgroundCommits(true) })
	defer stopAborting()
	r.setPhase("polling (a rebalance callback may be running)")
	err = s.poll(ctx)
	if ctx.Err() != nil {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		s.log.Info("shutting down: finishing in-flight records, committing, leaving the group")
	} else {
		s.setBroken(err)
	}
	s.abortBackgroundCommits(true)
	r.setPhase("closing the Kafka client (leaving the group, committing the revoked tasks)")
	// On shutdown, Run's own bound (ShutdownTimeout from the cancel) gives
	// up on these waits and logs the one it was in; after a fatal error
	// they are bounded here, so that the client is rebuilt.
	shutdown := ctx.Err() != nil
	s.closeClient(!shutdown)
	cancel()
	r.setPhase("the commit loop and the topology watcher to return")
	<-commitDone
	<-watchDone
	s.closeAll()
	// Tasks abandoned stuck producing return now that the session's
	// context is cancelled: wait for them (the shutdown bound still
	// applies), so that the stores are not closed under their records.
	s.mu.Lock()
	abandoned := s.abandoned
	s.mu.Unlock()
	if len(abandoned) > 0 {
		wait := time.NewTimer(r.opts.ShutdownTimeout)
		defer wait.Stop()
		var bound <-chan time.Time
		if !shutdown {
			bound = wait.C
		}
		for _, t := range abandoned {
			r.setPhase(fmt.Sprintf("abandoned task %d to return from its record", t.id))
			select {
			case <-t.done:
			case <-bound:
				s.log.Error("an abandoned task is still in its record (a handler that ignores its context?); going on without it", "task", t.id)
				return err
			}
		}
	}
	return err
}

// backgroundCommit commits tasks like commit, abortably: see aborts.
func (s *session) backgroundCommit(tasks []*task) error {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	s.abortMu.Lock()
	if s.stopped {
		s.abortMu.Unlock()
		return context.Canceled
	}
	s.aborts[&cancel] = struct{}{}
	s.abortMu.Unlock()
	defer func() {
		s.abortMu.Lock()
		delete(s.aborts, &cancel)
		s.abortMu.Unlock()
	}()
	return s.commit(ctx, tasks)
}

// abortBackgroundCommits cancels the background commits in progress; with
// stop, none starts any more.
func (s *session) abortBackgroundCommits(stop bool) {
	s.abortMu.Lock()
	defer s.abortMu.Unlock()
	if stop {
		s.stopped = true
	}
	for cancel := range s.aborts {
		(*cancel)()
	}
}

// closeClient closes the client, within the shutdown timeout if bounded:
// leaving the group runs onRevoked, which commits (or drops, when broken)
// every task.
func (s *session) closeClient(bounded bool) {
	done := make(chan struct{})
	go func() {
		s.cl.Close()
		close(done)
	}()
	if !bounded {
		<-done
		return
	}
	t := time.NewTimer(s.r.opts.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Error("closing the kafka client timed out; dropping uncommitted work", "timeout", s.r.opts.ShutdownTimeout)
	}
}

// closeAll stops whatever the client's revoke left: tasks (dropped without
// commit) and standbys.
func (s *session) closeAll() {
	s.mu.Lock()
	tasks := slices.Collect(maps.Values(s.active))
	clear(s.active)
	standbys := slices.Collect(maps.Values(s.standby))
	clear(s.standby)
	s.mu.Unlock()
	s.r.setPhase(fmt.Sprintf("stopping the remaining tasks %v", ids(tasks)))
	for _, t := range stopAll(tasks, s.r.opts.ShutdownTimeout) {
		t.drop()
	}
	s.r.setPhase("closing the standbys")
	for _, st := range standbys {
		if err := st.Close(); err != nil {
			s.log.Warn("closing standby", "task", st.ID(), "err", err)
		}
	}
	s.updateTaskGauges()
}

func (s *session) setBroken(err error) {
	if err == nil {
		err = errors.New("session ended")
	}
	s.mu.Lock()
	if s.broken == nil {
		s.broken = err
	}
	s.mu.Unlock()
}

// fail ends the session with err (the first one wins): the poll loop wakes
// up even when no records arrive.
func (s *session) fail(err error) {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	if s.failErr == nil {
		s.failErr = err
		if s.pollCancel != nil {
			s.pollCancel()
		}
	}
}

func (s *session) failure() error {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	return s.failErr
}

// poll fetches records and hands each partition's batch to its task until
// ctx is done (nil) or a fatal error ends the session.
func (s *session) poll(ctx context.Context) error {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.failMu.Lock()
	s.pollCancel = cancel
	failed := s.failErr != nil
	s.failMu.Unlock()
	if failed {
		cancel()
	}
	limit := int64(2 * s.r.opts.MaxPollRecords)
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
		fs := s.cl.PollRecords(pctx, s.r.opts.MaxPollRecords)
		err := s.handOver(ctx, fs)
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
		if len(p.Records) == 0 {
			return
		}
		last := p.Records[len(p.Records)-1].Offset
		s.r.met.consumerLag.WithLabelValues(p.Topic, taskLabel(p.Partition)).Set(float64(max(0, p.HighWatermark-last-1)))
		s.dispatch(p)
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
	s.mu.Lock()
	t := s.active[p.Partition]
	s.mu.Unlock()
	if t == nil {
		return // not ours (anymore): the owner fetches from the committed offset
	}
	n, ok := t.q.push(p)
	if !ok {
		return // the task ended meanwhile
	}
	s.queued.Add(int64(len(p.Records)))
	if n > s.r.opts.TaskQueue {
		t.maybePause()
	}
}

// watchTopology checks the partition counts of the inputs and changelogs
// every TopologyCheckInterval. When one changed, it commits and stops every
// task, pauses the inputs and keeps the instance not ready with the counts:
// a silent re-map of keys to tasks would split their state.
func (s *session) watchTopology() {
	tick := time.NewTicker(s.r.opts.TopologyCheckInterval)
	defer tick.Stop()
	adm := kadm.NewClient(s.cl)
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.r.opts.TopologyCheckInterval)
		n, err := CheckTopology(ctx, adm, s.r.topo)
		cancel()
		var pce *PartitionCountError
		switch {
		case err == nil && n == s.n:
			continue
		case err == nil:
			err = fmt.Errorf("topology %s: partition count changed from %d to %d while running", s.r.topo.appID, s.n, n)
		case !errors.As(err, &pce):
			s.log.Warn("checking partition counts", "err", err)
			continue
		}
		s.stopForTopology(err)
		return
	}
}

func (s *session) stopForTopology(err error) {
	s.mu.Lock()
	s.topoErr = err
	tasks := slices.Collect(maps.Values(s.active))
	clear(s.active)
	s.mu.Unlock()
	s.log.Error("partition counts changed: stopping every task; restart once the topics are consistent again", "err", err)
	s.cl.PauseFetchTopics(s.r.topo.InputTopics()...)
	tasks = stopAll(tasks, s.r.opts.ShutdownTimeout)
	if cerr := s.backgroundCommit(tasks); cerr != nil {
		s.log.Error("commit before stopping for the topology", "err", cerr)
	}
	for _, t := range tasks {
		t.drop()
	}
	s.updateTaskGauges()
}

// commitLoop commits every CommitInterval, or, with a zero interval,
// whenever a task has worked through a batch (commitWanted).
func (s *session) commitLoop() {
	var due <-chan time.Time = s.commitWanted
	if every := s.r.opts.CommitInterval; every > 0 {
		tick := time.NewTicker(every)
		defer tick.Stop()
		due = tick.C
	}
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-due:
		}
		s.mu.Lock()
		tasks := slices.Collect(maps.Values(s.active))
		s.mu.Unlock()
		if err := s.backgroundCommit(tasks); err != nil {
			if s.ctx.Err() != nil {
				return
			}
			if errors.Is(err, context.Canceled) {
				continue // aborted by a lost partition or the shutdown
			}
			var oce *offsetCommitError
			if errors.As(err, &oce) {
				s.log.Warn("offset commit failed; retrying at the next commit", "err", err)
				continue
			}
			s.fail(fmt.Errorf("commit: %w", err))
			return
		}
	}
}

// offsetCommitError is a failed offset commit: the next commit retries it
// (typically a rebalance in progress).
type offsetCommitError struct{ err error }

func (e *offsetCommitError) Error() string { return "commit offsets: " + e.err.Error() }
func (e *offsetCommitError) Unwrap() error { return e.err }

// commit makes the processed work of tasks durable and commits their
// offsets: tasks pause between records, the producer is flushed, each
// task's stores write their buffers and checkpoints, and the offsets after
// the last processed records are committed. A task whose store write fails
// is stopped and its offsets are not committed.
func (s *session) commit(ctx context.Context, tasks []*task) error {
	if len(tasks) == 0 {
		return nil
	}
	s.r.setPhase("a commit to finish the previous one")
	if err := s.commitMu.LockContext(ctx); err != nil {
		return fmt.Errorf("waiting for the previous commit: %w", err)
	}
	defer s.commitMu.Unlock()
	start := time.Now()
	for i, t := range tasks {
		s.r.setPhase(fmt.Sprintf("a commit to lock task %d (finishing its record)", t.id))
		if err := t.mu.LockContext(ctx); err != nil {
			for _, u := range tasks[:i] {
				u.mu.Unlock()
			}
			return fmt.Errorf("waiting for task %d to finish its record: %w", t.id, err)
		}
	}
	locked := true
	for _, t := range tasks {
		if t.activated && t.getErr() == nil {
			if err := t.flushCache(); err != nil {
				t.setErr(fmt.Errorf("task %d: flush the record cache: %w", t.id, err))
			}
		}
	}
	unlock := func() {
		if locked {
			for _, t := range tasks {
				t.mu.Unlock()
			}
			locked = false
		}
	}
	defer unlock()

	s.r.setPhase(fmt.Sprintf("a commit of tasks %v to flush the producer (changelog, outputs, dead letters)", ids(tasks)))
	if err := s.cl.Flush(ctx); err != nil {
		s.r.met.commitFailures.Inc()
		return fmt.Errorf("flush: %w", err)
	}
	if err := s.produceErr(); err != nil {
		s.r.met.commitFailures.Inc()
		return err
	}
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	var committing []*task
	for _, t := range tasks {
		if !t.activated || t.getErr() != nil {
			continue
		}
		if t.st != nil { // nil: a stateless topology
			if err := t.st.Commit(); err != nil {
				s.r.met.commitFailures.Inc()
				t.setErr(fmt.Errorf("task %d: commit stores: %w", t.id, err))
				continue
			}
		}
		for topic, eo := range t.next {
			if eo.Offset > t.committed[topic] {
				if offsets[topic] == nil {
					offsets[topic] = make(map[int32]kgo.EpochOffset)
				}
				offsets[topic][t.id] = eo
			}
		}
		committing = append(committing, t)
	}
	unlock()
	if len(offsets) == 0 {
		return nil
	}
	var cerr error
	s.r.setPhase(fmt.Sprintf("a commit of tasks %v to commit their offsets", ids(committing)))
	s.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
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
	if cerr != nil {
		s.r.met.commitFailures.Inc()
		return &offsetCommitError{cerr}
	}
	for _, t := range committing {
		for topic, m := range offsets {
			if eo, ok := m[t.id]; ok {
				t.committed[topic] = eo.Offset
			}
		}
	}
	s.r.met.commitLatency.Observe(time.Since(start).Seconds())
	s.log.Debug("committed", "tasks", len(committing), "took", time.Since(start))
	return nil
}

func (s *session) produceErr() error {
	s.prodMu.Lock()
	defer s.prodMu.Unlock()
	return s.prodErr
}

// promise is the callback of output and dead-letter records.
func (s *session) promise(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	s.prodMu.Lock()
	if s.prodErr == nil {
		s.prodErr = fmt.Errorf("produce to %s: %w", r.Topic, err)
	}
	s.prodMu.Unlock()
}

// checkpoints sums each held task's store checkpoints for the balancer.
func (s *session) checkpoints() map[int32]int64 {
	cps, err := s.mgr.Checkpoints()
	if err != nil {
		s.log.Warn("reading checkpoints for the join metadata", "err", err)
	}
	out := make(map[int32]int64, len(cps))
	for t, stores := range cps {
		var sum int64
		for _, o := range stores {
			sum += o
		}
		out[t] = sum
	}
	return out
}

func tasksOf(m map[string][]int32) []int32 {
	var out []int32
	for _, ps := range m {
		for _, p := range ps {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

func (s *session) partitionsOf(tasks []int32) map[string][]int32 {
	m := make(map[string][]int32)
	for _, topic := range s.r.topo.InputTopics() {
		m[topic] = slices.Clone(tasks)
	}
	return m
}

// onAssigned starts the new active tasks (paused until their stores are
// restored or promoted) and reconciles standbys with the plan.
func (s *session) onAssigned(ctx context.Context, cl *kgo.Client, assigned map[string][]int32) {
	s.bal.OnPartitionsAssigned(ctx, cl, assigned)
	asg, _ := s.bal.Assignment()
	s.r.met.rebalances.Inc()
	newTasks := tasksOf(assigned)

	s.mu.Lock()
	if !s.revokeStart.IsZero() {
		s.r.met.rebalanceTime.Observe(time.Since(s.revokeStart).Seconds())
		s.revokeStart = time.Time{}
	}
	s.assigned = true
	var started []*task
	if len(newTasks) > 0 {
		cl.PauseFetchPartitions(s.partitionsOf(newTasks))
	}
	for _, id := range newTasks {
		if s.active[id] != nil || s.topoErr != nil {
			continue // with a broken topology the partitions stay paused
		}
		t := newTask(s, id)
		if st := s.standby[id]; st != nil {
			t.st = st // promoted below, without a full restore
			delete(s.standby, id)
		}
		s.active[id] = t
		started = append(started, t)
	}
	want := make(map[int32]bool)
	for _, id := range append(slices.Clone(asg.Standby), asg.Warmup...) {
		if s.active[id] == nil && len(s.r.topo.stores) > 0 {
			want[id] = true
		}
	}
	var closeStandbys []*state.Task
	for id, st := range s.standby {
		if !want[id] {
			closeStandbys = append(closeStandbys, st)
			delete(s.standby, id)
		}
	}
	var open []int32
	for id := range want {
		if s.standby[id] == nil {
			open = append(open, id)
		}
	}
	s.mu.Unlock()

	for _, t := range started {
		go t.run()
	}
	for _, st := range closeStandbys {
		if err := st.Close(); err != nil {
			s.log.Warn("closing a standby the plan moved away", "task", st.ID(), "err", err)
		}
	}
	for _, id := range open {
		st := s.mgr.Task(id)
		var err error
		if st == nil {
			st, err = s.mgr.OpenTask(id, s.r.storeSpecs())
		}
		if err == nil && st.Role() == state.RoleIdle {
			err = st.StartStandby()
		}
		if err != nil {
			s.log.Error("opening a standby", "task", id, "err", err)
			continue
		}
		s.mu.Lock()
		s.standby[id] = st
		s.mu.Unlock()
	}
	s.log.Info("assignment", "generation", asg.Generation, "active", activeIDs(s), "new", newTasks,
		"standby", asg.Standby, "warmup", asg.Warmup, "pending", asg.Pending)
	s.updateTaskGauges()
}

func activeIDs(s *session) []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.active))
}

// onRevoked stops the revoked tasks after their in-flight record, commits
// them, and keeps their stores as standbys (closed on shutdown, and closed
// by the next assignment if the plan has no standby here).
func (s *session) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	s.mu.Lock()
	s.revokeStart = time.Now()
	broken, closing := s.broken, s.closing
	var tasks []*task
	for _, id := range tasksOf(revoked) {
		if t := s.active[id]; t != nil {
			tasks = append(tasks, t)
			delete(s.active, id)
		}
	}
	s.mu.Unlock()
	if len(tasks) == 0 {
		return
	}
	// The revoke commits these tasks itself, at once: a background commit
	// in progress would only make it wait (for as long as the brokers are
	// unreachable, holding the tasks' locks).
	s.abortBackgroundCommits(false)
	s.r.setPhase(fmt.Sprintf("the revoke of tasks %v: their in-flight records", ids(tasks)))
	tasks = stopAll(tasks, s.r.opts.ShutdownTimeout)
	if broken != nil {
		s.log.Warn("dropping revoked tasks without commit: the session is broken", "tasks", ids(tasks), "err", broken)
		for _, t := range tasks {
			t.drop()
		}
		s.updateTaskGauges()
		return
	}
	cctx, cancel := context.WithTimeout(ctx, s.r.opts.ShutdownTimeout)
	err := s.commit(cctx, tasks)
	cancel()
	if err != nil {
		s.log.Error("commit on revoke failed; dropping the revoked tasks", "tasks", ids(tasks), "err", err)
		for _, t := range tasks {
			t.drop()
		}
		var oce *offsetCommitError
		if !errors.As(err, &oce) {
			s.fail(fmt.Errorf("commit on revoke: %w", err))
		}
		s.updateTaskGauges()
		return
	}
	for _, t := range tasks {
		if closing || !t.activated || t.getErr() != nil || t.st == nil {
			t.drop()
			continue
		}
		if err := t.st.Demote(); err != nil {
			s.log.Warn("keeping a revoked task as standby", "task", t.id, "err", err)
			t.drop()
			continue
		}
		s.mu.Lock()
		s.standby[t.id] = t.st
		s.mu.Unlock()
	}
	s.log.Info("revoked", "tasks", ids(tasks), "closing", closing)
	s.updateTaskGauges()
}

// onLost drops the lost tasks without committing: another member may own
// their partitions already.
func (s *session) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	s.mu.Lock()
	s.revokeStart = time.Now()
	s.assigned = false // not ready until the next assignment
	var tasks []*task
	for _, id := range tasksOf(lost) {
		if t := s.active[id]; t != nil {
			tasks = append(tasks, t)
			delete(s.active, id)
		}
	}
	s.mu.Unlock()
	if len(tasks) == 0 {
		s.updateTaskGauges()
		return
	}
	// A commit in progress may hold these tasks' locks while it flushes to
	// brokers that are gone: abort it (its offsets would be refused now
	// anyway) instead of waiting for it.
	s.abortBackgroundCommits(false)
	s.r.setPhase(fmt.Sprintf("dropping the lost tasks %v", ids(tasks)))
	for _, t := range stopAll(tasks, s.r.opts.ShutdownTimeout) {
		t.drop()
	}
	s.log.Warn("partitions lost; tasks dropped without commit", "tasks", ids(tasks))
	s.updateTaskGauges()
}

func ids(ts []*task) []int32 {
	out := make([]int32, len(ts))
	for i, t := range ts {
		out[i] = t.id
	}
	return out
}

func (s *session) updateTaskGauges() {
	asg, _ := s.bal.Assignment()
	s.mu.Lock()
	active := len(s.active)
	s.mu.Unlock()
	s.r.met.tasks.WithLabelValues("active").Set(float64(active))
	s.r.met.tasks.WithLabelValues("standby").Set(float64(len(asg.Standby)))
	s.r.met.tasks.WithLabelValues("warmup").Set(float64(len(asg.Warmup)))
}

func (s *session) readiness() (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return false, "rebuilding the Kafka client: " + s.broken.Error()
	}
	if s.topoErr != nil {
		return false, s.topoErr.Error()
	}
	if !s.assigned {
		return false, "joining the group"
	}
	for _, id := range slices.Sorted(maps.Keys(s.active)) {
		t := s.active[id]
		if err := t.getErr(); err != nil {
			return false, err.Error()
		}
		if !t.running.Load() {
			return false, fmt.Sprintf("task %d is restoring", id)
		}
	}
	return true, ""
}
