package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/state"
)

// Runtime runs a topology as one instance of its processor group. It is a
// member of the consumer group <application.id> with Rackstream's
// balancer. It runs one task per assigned partition slot (partition i of
// every input and changelog), each on its own goroutine handling its
// records in offset order. Standby and warmup tasks tail changelogs.
// Commits are at the processed watermark.
//
// # Delivery
//
// Every CommitInterval, on revoke and on shutdown, the runtime cuts each
// task between two records and lets it go on. The cut writes the record
// cache through, freezes the stores' writes and takes the processed
// offsets. Once the brokers have acknowledged the records produced before
// the cuts (changelog records, outputs and dead letters), the runtime
// writes each task's frozen writes in one LevelDB batch per store with
// their changelog checkpoints. Then it commits, per input partition, the
// offset after the last record whose processing finished before the cut.
// A crash between any two steps loses nothing; records after the last
// commit are processed again (at-least-once). Partitions lost, because a
// session expired or was fenced, are dropped without committing.
type Runtime struct {
	topo *Topology
	opts Options
	log  *slog.Logger
	met  *metrics
	// zones counts the bytes every Kafka client of the runtime exchanges
	// with brokers of other racks (zonebytes.go).
	zones zoneCounter

	// mu guards the fields below up to phase: what Run sets as it starts
	// and ends, read by the accessors (Ready, Placement, Replica...) from
	// other goroutines. It is never held across I/O.
	mu        sync.Mutex
	mgr       *state.Manager
	sess      *session
	notReady  string
	fatal     error // a task stopped by error policy fail, or a broken topology
	processID string
	tasks     int32
	running   bool
	ended     bool     // Run returned (maybe leaving a session's stragglers)
	globals   *globals // set once, before the first session (global.go)
	gmet      globalMetrics
	// balEnded sums the balancer counters of the sessions that ended (a
	// session's balancer goes with its client): BalancerStats adds the
	// live session's, so the counters never go back.
	balEnded balancer.Stats

	// phase is what the runtime waits for at a point where it may block
	// (a *string): a shutdown that exceeds its bound logs it.
	phase atomic.Pointer[string]
	// published is the generation of the last placement given to
	// Options.OnPlacement.
	published atomic.Int32
	// assignments counts the assignments the sessions received: a session
	// that received one was healthy, whatever ended it (rebuildBackoff).
	assignments atomic.Int64
	// started is closed once Run has opened the state directory and
	// checked and created the topics: the instance joins its group next.
	started chan struct{}
}

// publish gives p to Options.OnPlacement unless a placement of its
// generation (or a later one) was given already.
func (r *Runtime) publish(p *balancer.Placement) {
	if p == nil || r.opts.OnPlacement == nil {
		return
	}
	for {
		last := r.published.Load()
		if p.Generation <= last {
			return
		}
		if r.published.CompareAndSwap(last, p.Generation) {
			r.opts.OnPlacement(p)
			return
		}
	}
}

// Started is closed once Run has opened the state directory (ProcessID is
// known) and checked and created the topics: the instance joins its group
// next. It stays open when Run fails or is stopped before.
func (r *Runtime) Started() <-chan struct{} { return r.started }

// setPhase records what the runtime is waiting for now.
func (r *Runtime) setPhase(what string) { r.phase.Store(&what) }

func (r *Runtime) waitingFor() string {
	if p := r.phase.Load(); p != nil {
		return *p
	}
	return "nothing known"
}

// NewRuntime returns a runtime for t. Run starts it.
func NewRuntime(t *Topology, opts Options) (*Runtime, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if err := opts.resolve(t.appID); err != nil {
		return nil, err
	}
	r := &Runtime{
		topo:     t,
		opts:     opts,
		log:      opts.Logger.With("group", t.appID),
		notReady: "starting",
		started:  make(chan struct{}),
	}
	r.published.Store(-1)
	r.zones.rack = opts.Tags.Value(opts.Placement.ClientRackTag)
	if opts.Registerer != nil {
		_ = opts.Registerer.Register(newZoneCollector(&r.zones)) // zonebytes.go
	}
	r.met = newMetrics(opts.Registerer, r.liveTasks)
	registerGlobalMetrics(opts.Registerer, r) // global_metrics.go
	return r, nil
}

// liveTasks returns the active tasks of the current session: the tasks
// whose series the metrics show.
func (r *Runtime) liveTasks() []*task {
	r.mu.Lock()
	s := r.sess
	r.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.m.live()
}

// Topology returns the runtime's topology.
func (r *Runtime) Topology() *Topology { return r.topo }

// Partitioner returns the partitioner keys are mapped with.
func (r *Runtime) Partitioner() partition.Partitioner { return r.opts.Partitioner }

// ProcessID returns the instance's stable process id (persisted in the state
// directory), empty before Run has opened it.
func (r *Runtime) ProcessID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.processID
}

// Tasks returns the number of tasks (the inputs' partition count), 0 before
// Run has checked the topology.
func (r *Runtime) Tasks() int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tasks
}

// Ready reports whether the instance is ready: it is a member of the group
// with an assignment, every active task is restored and running, and no
// task has failed. When not ready, reason says why.
func (r *Runtime) Ready() (ready bool, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fatal != nil {
		return false, r.fatal.Error()
	}
	if r.sess == nil || r.ended {
		return false, r.notReady
	}
	return r.sess.m.readiness()
}

// Placement returns the latest placement of the group this instance knows,
// nil before the first assignment.
func (r *Runtime) Placement() *balancer.Placement {
	r.mu.Lock()
	s := r.sess
	r.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.bal.Placement()
}

// Member returns the instance's group member id and generation ("" and -1
// while it is not a member).
func (r *Runtime) Member() (memberID string, generation int32) {
	r.mu.Lock()
	s := r.sess
	r.mu.Unlock()
	if s == nil {
		return "", -1
	}
	return s.cl.GroupMetadata()
}

func (r *Runtime) setFatal(err error) {
	r.mu.Lock()
	if r.fatal == nil {
		r.fatal = err
	}
	r.mu.Unlock()
}

// Run runs the instance until ctx is cancelled, then shuts down gracefully
// within ShutdownTimeout: finishes in-flight records, commits, leaves the
// group and closes the stores. It returns nil after the shutdown, or the
// error that prevented the start (the topology check, the state
// directory). Fatal Kafka client errors do not end Run: the client is
// rebuilt with bounded exponential backoff.
//
// The shutdown never takes longer than ShutdownTimeout plus a second, and
// Run always releases the stores and the state directory. If it has not
// finished by then, with brokers unreachable or a task stuck in its
// handler, Run gives up, logs what it was waiting for, and closes the
// stores anyway. The next owner processes the work not committed again. A
// handler still running then has its stores closed under it: its later
// store reads and writes fail with ErrTaskClosed. Run then returns an error
// naming its task; otherwise it returns nil.
func (r *Runtime) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return errors.New("processor: Run called twice; make a new Runtime")
	}
	r.running = true
	r.mu.Unlock()
	r.setPhase("starting")
	so := state.DefaultOptions()
	so.Dir, so.ApplicationID = r.opts.StateDir, r.topo.appID
	so.LevelDB, so.MemoryBytes = r.opts.LevelDB, r.opts.MemoryBytes
	so.ReadCommitted = r.opts.Guarantee == ExactlyOnceV2 // restore and standbys skip aborted changelog records
	so.CleanupDelay, so.CleanupInterval = r.opts.CleanupDelay, state.CleanupIntervalFor(r.opts.CleanupDelay)
	so.ClientOpts = r.clientOpts() // the process id is not known yet
	so.Logger, so.Registerer = r.opts.Logger, r.opts.Registerer
	if ins := r.topo.InputTopics(); r.opts.ChangelogLeaders == ChangelogLeadersAligned && len(ins) > 0 {
		so.ChangelogLeadersWith = ins[0]
	}
	mgr, err := state.Open(so)
	if err != nil {
		return fmt.Errorf("processor %s: %w", r.topo.appID, err)
	}
	// Once: the session's end and a shutdown that gave up may both close.
	closeMgr := sync.OnceFunc(func() {
		r.setPhase("closing the stores")
		if err := mgr.Close(); err != nil {
			r.log.Error("closing the state directory", "err", err)
		}
	})
	r.mu.Lock()
	r.mgr = mgr
	r.processID = mgr.ProcessID()
	r.mu.Unlock()
	r.log = r.log.With("process_id", mgr.ProcessID())

	n, err := r.prepareTopics(ctx, mgr)
	if err != nil {
		closeMgr()
		if ctx.Err() != nil {
			return nil // stopped while starting: a clean stop, not a failure
		}
		r.setFatal(err)
		return err
	}
	gl, err := r.openGlobals(ctx) // before joining the group: /readyz waits for them
	if err != nil {
		closeMgr()
		if ctx.Err() != nil {
			return nil
		}
		r.setFatal(err)
		return err
	}
	defer gl.close(r.log)
	close(r.started)
	r.mu.Lock()
	r.tasks = n
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.notReady = "stopped"
		r.ended = true
		r.mu.Unlock()
	}()
	r.log.Info("starting", "inputs", r.topo.InputTopics(), "tasks", n, "endpoint", r.opts.Endpoint,
		"tags", r.opts.Tags.String(), "standbys", r.opts.Placement.NumStandbyReplicas)

	done := make(chan error, 1)
	go func() {
		err := r.runSessions(ctx, mgr, n)
		closeMgr()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	bound := time.NewTimer(r.opts.ShutdownTimeout)
	defer bound.Stop()
	select {
	case err := <-done:
		return err
	case <-bound.C:
	}
	r.log.Error("shutdown did not finish within shutdown.timeout.ms; giving up (uncommitted work is processed again by the next owner)",
		"timeout", r.opts.ShutdownTimeout, "waiting_for", r.waitingFor())
	return r.forceClose(closeMgr)
}

// forceClose ends a shutdown that outlived its bound: it closes the stores
// of the session's tasks, under any handler still running, and the state
// directory (releasing its lock), within a second. It returns an error
// naming the tasks whose handler was still running, nil when none was.
func (r *Runtime) forceClose(closeMgr func()) error {
	r.mu.Lock()
	s := r.sess
	r.mu.Unlock()
	result := make(chan []int32, 1)
	go func() {
		var running []int32
		if s != nil {
			running = s.m.forceClose()
		}
		closeMgr()
		result <- running
	}()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case running := <-result:
		if len(running) == 0 {
			return nil
		}
		return fmt.Errorf("processor %s: shutdown did not finish within shutdown.timeout.ms (%v): the handler of tasks %v was still running (it ignores its context); their stores were closed under it, and its store reads and writes fail with ErrTaskClosed",
			r.topo.appID, r.opts.ShutdownTimeout, running)
	case <-t.C:
		return fmt.Errorf("processor %s: shutdown did not finish within shutdown.timeout.ms (%v), and closing the stores took over a second more (waiting for %s)",
			r.topo.appID, r.opts.ShutdownTimeout, r.waitingFor())
	}
}

// runSessions runs sessions, rebuilding the Kafka client after fatal
// errors, until ctx is cancelled and the last one has shut down.
func (r *Runtime) runSessions(ctx context.Context, mgr *state.Manager, n int32) error {
	backoff := r.opts.rebuildBackoff
	for {
		started, assigned := time.Now(), r.assignments.Load()
		err := r.runSession(ctx, mgr, n)
		if ctx.Err() != nil {
			return nil
		}
		var se *startError
		if errors.As(err, &se) {
			r.setFatal(err)
			return fmt.Errorf("processor %s: %w", r.topo.appID, err)
		}
		var wait time.Duration
		wait, backoff = rebuildBackoff(backoff, r.opts.rebuildBackoff, r.opts.maxRebuildBackoff,
			time.Since(started), r.assignments.Load() > assigned)
		r.met.rebuilds.Inc()
		r.log.Error("kafka client failed; rebuilding it", "err", err, "backoff", wait)
		r.mu.Lock()
		r.notReady = fmt.Sprintf("rebuilding the Kafka client after: %v", err)
		r.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		r.log.Info("rebuilding the kafka client", "after", wait)
	}
}

// clientOpts are the options of every Kafka client the runtime makes:
// with ClientOptsFor's once the process id is known.
func (r *Runtime) clientOpts() []kgo.Opt {
	opts := append([]kgo.Opt{kgo.SeedBrokers(r.opts.Brokers...), kgo.WithHooks(&r.zones)}, r.opts.ClientOpts...)
	if r.opts.ClientOptsFor != nil {
		if pid := r.ProcessID(); pid != "" {
			opts = append(opts, r.opts.ClientOptsFor(pid)...)
		}
	}
	return opts
}

// prepareTopics checks the partition counts, creates missing repartition
// topics, changelogs and the dead-letter topic, and returns the task count.
func (r *Runtime) prepareTopics(ctx context.Context, mgr *state.Manager) (int32, error) {
	cl, err := kgo.NewClient(r.clientOpts()...)
	if err != nil {
		return 0, fmt.Errorf("processor %s: admin client: %w", r.topo.appID, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	n, err := CheckTopology(ctx, adm, r.topo)
	if err != nil {
		return 0, err
	}
	if err := ensureRepartitionTopics(ctx, adm, r.topo, n, r.opts.ReplicationFactor); err != nil {
		return 0, fmt.Errorf("processor %s: %w", r.topo.appID, err)
	}
	if outs := r.topo.OutputTopics(); len(outs) > 0 {
		counts, err := partitionCounts(ctx, adm, outs)
		if err != nil {
			return 0, fmt.Errorf("processor %s: %w", r.topo.appID, err)
		}
		var missing []string
		for _, o := range outs {
			if counts[o] < 0 {
				missing = append(missing, o)
			}
		}
		if len(missing) > 0 {
			return 0, fmt.Errorf("processor %s: output topics %s do not exist: create them (with %d partitions to keep them co-partitioned with the inputs)",
				r.topo.appID, strings.Join(missing, ", "), n)
		}
	}
	if err := mgr.EnsureChangelogs(ctx, n, r.opts.ReplicationFactor, r.topo.storeSpecs()); err != nil {
		return 0, fmt.Errorf("processor %s: changelogs: %w", r.topo.appID, err)
	}
	if r.opts.ErrorPolicy == PolicyDeadLetter {
		resp, err := adm.CreateTopic(ctx, n, r.opts.ReplicationFactor, nil, r.opts.DLQTopic)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return 0, fmt.Errorf("processor %s: create dead-letter topic %s: %w", r.topo.appID, r.opts.DLQTopic, err)
		}
	}
	return n, nil
}

// storeSpecs declares t's stores to the state directory.
func (t *Topology) storeSpecs() []state.StoreSpec {
	specs := make([]state.StoreSpec, len(t.stores))
	for i, s := range t.stores {
		specs[i] = state.StoreSpec{Name: s.name, Changelog: s.changelog, ChangelogConfigs: s.changelogConfigs}
	}
	return specs
}

func taskLabel(t int32) string { return strconv.Itoa(int(t)) }
