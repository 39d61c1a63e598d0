package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/state"
)

// session is the life of one Kafka client: its group membership, the poll
// loop that hands fetched batches to the tasks, the commit loop and the
// topology watcher. What it does with tasks is the member's (rebalance.go)
// and how it commits is the commits' (commit.go). A fatal client error ends
// the session and the runtime starts a new one with a new client.
type session struct {
	r   *Runtime
	n   int32
	log *slog.Logger
	bal *balancer.Balancer
	cl  *kgo.Client
	// clSet is closed once cl is set. franz-go starts joining the group
	// inside NewClient, so its callbacks, which reach cl through the
	// member's fetch control, wait for it. It orders the assignment of cl
	// before their reads.
	clSet chan struct{}
	m     *member
	c     *commits

	ctx    context.Context // produces and task contexts derive from it
	cancel context.CancelFunc

	changelogs map[string]bool

	// queued counts the records handed to tasks and not yet taken up. The
	// poll loop waits while it is above 2 x MaxPollRecords, so it does not
	// race ahead of the tasks for CPU and memory. drained is signalled
	// (capacity 1) whenever a task takes up a batch.
	queued  atomic.Int64
	drained chan struct{}

	// commitWanted is signalled (capacity 1) when a task that moved here
	// has worked through its first record. With a zero CommitInterval it
	// is signalled after every batch. The commit loop commits then.
	// movedMu guards moved, the tasks that moved here and asked. The
	// commit loop commits those alone at once, not waiting for the
	// others' records.
	commitWanted chan time.Time
	movedMu      sync.Mutex
	moved        []*task

	// failed is cancelled, with the cause, by the first fatal error of the
	// committer or a watcher: it wakes the poll loop, which ends the
	// session with it.
	failed context.Context
	fail   context.CancelCauseFunc

	// Exactly-once (txnclient.go, rewind.go): the transaction's
	// bookkeeping, and the poll's early wake after an aborted transaction.
	txn        txnState
	wakeWanted atomic.Bool
	pollCancel atomic.Pointer[context.CancelFunc]

	// restarts paces the restarts of tasks stopped by an error
	// (restart.go).
	restarts taskRestarts
	// purge deletes what the tasks handled of their repartition topics
	// (repartition_purge.go); nil without any.
	purge *repartitionPurger
}

// startError is a failure to build the session's client or balancer: bad
// options, which a rebuild would not cure.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

func (r *Runtime) runSession(ctx context.Context, mgr *state.Manager, n int32) error {
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	failed, fail := context.WithCancelCause(context.Background())
	defer fail(nil)
	s := &session{
		r: r, n: n, log: r.log,
		ctx: sctx, cancel: cancel,
		changelogs:   make(map[string]bool),
		drained:      make(chan struct{}, 1),
		commitWanted: make(chan time.Time, 1),
		clSet:        make(chan struct{}),
		failed:       failed, fail: fail,
	}
	for _, c := range r.topo.ChangelogTopics() {
		s.changelogs[c] = true
	}
	bs := balancer.DefaultSettings()
	bs.ApplicationID, bs.ProcessID, bs.Endpoint, bs.Tags = r.topo.appID, mgr.ProcessID(), r.opts.Endpoint, r.opts.Tags
	bs.Capacity = r.opts.Capacity
	bs.InputTopics, bs.ChangelogTopics, bs.OutputTopics = r.topo.InputTopics(), r.topo.ChangelogTopics(), r.topo.OutputTopics()
	bs.Placement, bs.ProbingInterval = r.opts.Placement, r.opts.ProbingInterval
	bs.Checkpoints, bs.ClientOpts = checkpoints(mgr, r.log), r.clientOpts()
	bs.PlacementReplicationFactor, bs.HeartbeatInterval = r.opts.ReplicationFactor, r.opts.heartbeatInterval
	bs.Logger = r.opts.Logger
	bs.OnAssignment = func(a balancer.Assignment) { r.publish(a.Placement) }
	tb := newTaskBytes(bs.InputTopics, bs.ChangelogTopics, r.topo.OutputTopics(), n, time.Now)
	bs.Rates = tb.rates
	bal, err := balancer.New(bs)
	if err != nil {
		return &startError{fmt.Errorf("balancer: %w", err)}
	}
	s.bal = bal
	// The commit and rebalance paths reach the client through the
	// session (s.cl is set once kgo.NewClient returns; the group's
	// callbacks wait for it: clSet).
	s.c = newCommits(sctx, s, s, r.log, r.met, r.setPhase)
	env := &taskEnv{
		topo: r.topo, opts: &r.opts, log: r.log, met: r.met, tasks: n, ctx: sctx, globals: r.globals,
		prod: s, promise: s.c.promise, fetch: s,
		openStores: openStores(mgr, r.topo.storeSpecs(), s),
		now:        time.Now,
		taken:      s.taken,
		worked:     s.worked,
		failed:     s.taskFailed,
		emitted:    tb.emit,
	}
	if r.opts.Guarantee == AtMostOnce {
		env.ahead = func(t *task, records []*kgo.Record) bool { return s.c.commitAhead(t.ctx, t, records) }
	}
	eos := r.opts.Guarantee == ExactlyOnceV2
	if eos {
		s.c.eos = newTxnCommits(s)
		env.gate = s.c.eos.gate
		s.txn.id = TransactionalID(r.topo.appID, mgr.ProcessID())
	}
	s.m = newMember(env, s.c, mgr, r.setPhase, func(err error) { s.fail(err) })
	if eos {
		s.c.eos.live = s.m.live
		s.c.eos.onAbort = func(ts []*task) { s.m.suspend(ts, s.wakePoll) }
	}
	// A task's partitions are paused while its stores restore; a short
	// fetch wait makes their resumption prompt. A producer linger batches
	// the changelog and output records of many input records per request,
	// as Kafka Streams' does; every commit flushes anyway. ClientOpts may
	// override both.
	opts := append([]kgo.Opt{kgo.FetchMaxWait(500 * time.Millisecond), kgo.ProducerLinger(20 * time.Millisecond)}, r.clientOpts()...)
	opts = append(opts, bal.Opts()...)
	opts = append(opts, kgo.WithHooks(tb))
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
	if eos {
		opts = append(opts, txnClientOpts(s.txn.id)...)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return &startError{fmt.Errorf("kafka client: %w", err)}
	}
	s.cl = cl
	close(s.clSet)
	s.purge = newRepartitionPurger(r.topo.RepartitionTopics(), kadm.NewClient(cl), r.opts.RepartitionPurgeInterval, r.log)
	if eos {
		if err := s.startTransactions(ctx); err != nil {
			cl.Close()
			return err
		}
	}
	r.mu.Lock()
	r.sess = s
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.sess = nil
		r.balEnded = addBalancerStats(r.balEnded, s.bal.Stats())
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
	stopAborting := context.AfterFunc(ctx, func() { s.c.abort(true) })
	defer stopAborting()
	r.setPhase("polling (a rebalance callback may be running)")
	err = s.poll(ctx)
	if ctx.Err() != nil {
		s.m.setClosing()
		s.log.Info("shutting down: finishing in-flight records, committing, leaving the group")
	} else {
		s.m.setBroken(err)
	}
	s.c.abort(true)
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
	s.purge.wait()
	s.m.closeAll()
	s.updateTaskGauges()
	// Tasks abandoned stuck producing return now that the session's
	// context is cancelled: wait for them (the shutdown bound still
	// applies), so that the stores are not closed under their records.
	var bound <-chan time.Time
	if !shutdown {
		wait := time.NewTimer(r.opts.ShutdownTimeout)
		defer wait.Stop()
		bound = wait.C
	}
	if t := s.m.waitAbandoned(bound); t != nil {
		s.log.Error("an abandoned task is still in its record (a handler that ignores its context?); going on without it", "task", t.id)
	}
	return err
}

// The session is the tasks' producer and fetch control, and the commits'
// committer, through its client.

func (s *session) Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	if !s.txn.produced.Load() { // a load is cheaper than a store on a shared line
		s.txn.produced.Store(true)
	}
	s.cl.Produce(ctx, r, promise)
}
func (s *session) Flush(ctx context.Context) error {
	began := time.Now()
	err := s.cl.Flush(ctx)
	s.log.Debug("producer flushed", "took", time.Since(began), "err", err)
	return err
}

// OptValue reports the client's settings: state checks the changelog
// producer's acks with it.
func (s *session) OptValue(opt any) any { return s.cl.OptValue(opt) }
func (s *session) PauseFetchPartitions(p map[string][]int32) map[string][]int32 {
	return s.cl.PauseFetchPartitions(p)
}
func (s *session) ResumeFetchPartitions(p map[string][]int32) { s.cl.ResumeFetchPartitions(p) }
func (s *session) CommitOffsets(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset) error {
	began := time.Now()
	err := groupCommitter{s.cl}.CommitOffsets(ctx, offsets)
	s.log.Debug("offsets committed", "took", time.Since(began), "err", err, "offsets", offsets)
	return err
}

// taken releases records that left a task's queue from the poll loop's
// count.
func (s *session) taken(records int) {
	s.queued.Add(-int64(records))
	select {
	case s.drained <- struct{}{}:
	default:
	}
}

// worked is called after a task worked through a batch. With a zero
// commit interval, a commit is due. A commit is also due after the first
// record of a task that moved here (promoted: task.moved), whatever the
// interval. So a failover's new owner shows its progress at once, not up
// to an interval later.
func (s *session) worked(t *task, promoted bool) {
	if promoted {
		s.log.Debug("a moved task worked through its first record: commit wanted", "task", t.id)
		s.movedMu.Lock()
		s.moved = append(s.moved, t)
		s.movedMu.Unlock()
	}
	if promoted || s.r.opts.CommitInterval == 0 {
		select {
		case s.commitWanted <- time.Time{}:
		default: // a commit is due already: it covers this batch too
		}
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

// failure returns the error that ends the session, nil while none has.
func (s *session) failure() error {
	if s.failed.Err() == nil {
		return nil
	}
	return context.Cause(s.failed)
}

// commitLoop commits every CommitInterval, and whenever worked asks
// through commitWanted: after a promoted task's first record, or after
// every batch with a zero interval. Under at-least-once with an interval,
// the commits asked for run on a goroutine of their own (promptCommits),
// beside the regular ones. So a moved task's commit waits only for an
// earlier commit of its own, not for a regular commit of every task.
func (s *session) commitLoop() {
	var due <-chan time.Time // never, with a zero interval
	var rephase func()
	if every := s.r.opts.CommitInterval; every > 0 {
		tick := time.NewTicker(commitPhase(every))
		defer tick.Stop()
		due = tick.C
		rephase = sync.OnceFunc(func() { tick.Reset(every) })
	}
	wanted := s.commitWanted
	if due != nil && s.c.eos == nil {
		wanted = nil
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.promptCommits()
		}()
		defer func() { <-done }()
	}
	for {
		var asked bool
		select {
		case <-s.ctx.Done():
			return
		case <-s.failed.Done():
			return
		case <-due:
			rephase()
		case <-wanted:
			asked = true
			s.log.Debug("commit loop: a commit was asked for")
		}
		if !s.commitNow(s.toCommit(asked), false) {
			return
		}
		s.purge.afterCommit(s.ctx, s.m.live())
	}
}

// promptCommits commits the tasks that moved here as they ask (worked),
// until the session ends or fails.
//
// Each ask's tasks commit on a goroutine of their own, beside a prompt
// commit still in flight; their tasks' locks keep two commits of one task
// apart. A survivor of a failover takes several tasks whose first records
// arrive apart, and none of them waits for another's whole commit. A
// commit that fails the session fails it (commitNow); the loop then ends,
// after the commits in flight.
func (s *session) promptCommits() {
	var inFlight sync.WaitGroup
	defer inFlight.Wait()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.failed.Done():
			return
		case <-s.commitWanted:
		}
		s.log.Debug("commit loop: a prompt commit was asked for")
		if tasks := s.movedLive(); len(tasks) > 0 {
			inFlight.Go(func() { s.commitNow(tasks, true) })
		}
	}
}

// commitNow commits tasks in the background, abortably. With promptly it
// is a moved task's first commit (commits.commitPromptly). It reports
// whether the session's commits go on. A failed offset commit is retried
// by the next commit, and an aborted one is done with. Any other failure
// fails the session.
func (s *session) commitNow(tasks []*task, promptly bool) bool {
	began := time.Now()
	err := s.c.background(tasks, promptly)
	s.log.Debug("commit loop: commit returned", "tasks", len(tasks), "took", time.Since(began), "err", err)
	switch {
	case err == nil:
		return true
	case s.ctx.Err() != nil:
		return false
	case errors.Is(err, context.Canceled):
		return true // aborted by a lost partition or the shutdown
	case errorsAsOffsetCommit(err):
		s.log.Warn("offset commit failed; retrying at the next commit", "err", err)
		return true
	}
	s.fail(fmt.Errorf("commit: %w", err))
	return false
}

// movedLive returns the live tasks that moved here and asked for a commit
// since the last call (worked), and forgets them.
func (s *session) movedLive() []*task {
	s.movedMu.Lock()
	moved := s.moved
	s.moved = nil
	s.movedMu.Unlock()
	var out []*task
	for _, t := range s.m.live() {
		if slices.Contains(moved, t) {
			out = append(out, t)
		}
	}
	return out
}

// toCommit returns the tasks the commit loop commits now. When the commit
// was asked for, not due, and the commit interval is not zero, these are
// the live tasks that moved here and asked. That happens under
// exactly-once, where asked commits share the loop. So a failover's new
// owner shows its progress without waiting for every other task's records.
// Otherwise, and when no live task asked, it returns every live task.
func (s *session) toCommit(asked bool) []*task {
	switch {
	case s.r.opts.CommitInterval == 0:
		s.movedLive() // every live task commits: forget who asked
	case asked:
		if out := s.movedLive(); len(out) > 0 {
			return out
		}
	}
	return s.m.live()
}

// watchTopology checks the partition counts of the inputs and changelogs
// every TopologyCheckInterval. When one changed, it commits and stops every
// task, pauses the inputs and keeps the instance not ready with the counts:
// a silent re-map of keys to tasks would split their state.
func (s *session) watchTopology() {
	tick := time.NewTicker(s.r.opts.topologyCheckInterval)
	defer tick.Stop()
	adm := kadm.NewClient(s.cl)
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.r.opts.topologyCheckInterval)
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
		s.log.Error("partition counts changed: stopping every task; restart once the topics are consistent again", "err", err)
		s.cl.PauseFetchTopics(s.r.topo.InputTopics()...)
		s.m.stopEvery(err)
		s.updateTaskGauges()
		return
	}
}

// checkpoints returns the balancer's Checkpoints: each held task's store
// checkpoints summed.
func checkpoints(mgr *state.Manager, log *slog.Logger) func() map[int32]int64 {
	return func() map[int32]int64 {
		cps, err := mgr.Checkpoints()
		if err != nil {
			log.Warn("reading checkpoints for the join metadata", "err", err)
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
}

// tasksOf returns the tasks kgo's partitions name: partition i of any
// input is task i.
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

// onAssigned makes the balancer's placement of this generation current,
// then starts the new active tasks and reconciles the standbys with it.
func (s *session) onAssigned(ctx context.Context, cl *kgo.Client, assigned map[string][]int32) {
	<-s.clSet
	s.log.Debug("partitions assigned", "partitions", assigned)
	s.bal.OnPartitionsAssigned(ctx, cl, assigned)
	asg, _ := s.bal.Assignment()
	s.r.met.rebalances.Inc()
	s.r.assignments.Add(1)
	newTasks := tasksOf(assigned)
	s.m.assign(newTasks, append(slices.Clone(asg.Standby), asg.Warmup...))
	s.log.Info("assignment", "generation", asg.Generation, "active", ids(s.m.live()), "new", newTasks,
		"standby", asg.Standby, "warmup", asg.Warmup, "pending", asg.Pending)
	s.updateTaskGauges()
}

// onRevoked commits and stops the revoked tasks (rebalance.go's revoke).
func (s *session) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	<-s.clSet
	s.m.revoke(ctx, tasksOf(revoked))
	s.updateTaskGauges()
}

// onLost drops the lost tasks without committing.
func (s *session) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	<-s.clSet
	s.m.lose(tasksOf(lost))
	s.updateTaskGauges()
}

func (s *session) updateTaskGauges() {
	asg, _ := s.bal.Assignment()
	s.r.met.tasks.WithLabelValues("active").Set(float64(len(s.m.live())))
	s.r.met.tasks.WithLabelValues("standby").Set(float64(len(asg.Standby)))
	s.r.met.tasks.WithLabelValues("warmup").Set(float64(len(asg.Warmup)))
}

// commitPhase is how long the first periodic commit waits: a random part
// of the interval, at least a nanosecond, since a ticker's period must be
// positive. So instances started together never commit together for the
// rest of their lives. Aligned instances sharing cores and a broker would
// write their record caches through at the same moment every interval.
func commitPhase(every time.Duration) time.Duration {
	return 1 + rand.N(every)
}
