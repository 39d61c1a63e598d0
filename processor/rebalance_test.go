package processor

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rackstream/rackstream/state"
)

// The rebalance path on its own (rebalance.go), with no broker: see
// harness_test.go.

// TestRevokeFinishesTheInFlightRecordAndCommitsOnce: a revoke waits for
// the record in its handler, then commits exactly once, at the offset
// after that record (the ones queued behind it go to the next owner), with
// the store's writes of that record, and keeps the stores as a standby.
func TestRevokeFinishesTheInFlightRecordAndCommitsOnce(t *testing.T) {
	h := newHarness(t, nil)
	release := h.block()
	h.start(0)
	tk := h.feed(0, 0, "k", "a", "block", "c", "d")
	<-h.inGate // offset 1 is in its handler
	done := make(chan struct{})
	go func() {
		h.m.revoke(h.ctx, []int32{0})
		close(done)
	}()
	eventually(t, "the revoke to stop the task", func() bool { return tk.ctx.Err() != nil })
	select {
	case <-done:
		t.Fatal("the revoke returned before the in-flight record finished")
	default:
	}
	release()
	<-done
	if cs := h.offsets.commits(); len(cs) != 1 || cs[0][harnessInput][0].Offset != 2 {
		t.Fatalf("offset commits %v; want exactly one, of offset 2 (after the in-flight record)", cs)
	}
	if h.m.task(0) != nil {
		t.Error("task 0 still active after its revoke")
	}
	h.m.mu.Lock()
	st := h.m.standby[0]
	h.m.mu.Unlock()
	if st == nil || st.Role() != state.RoleStandby {
		t.Fatalf("the revoked task's stores are not kept as a standby: %v", st)
	}
	if n := h.count(0, "k"); n != 2 {
		t.Errorf("committed count %d, want 2", n)
	}
	// The next assignment without a standby here closes it before it
	// returns (a later close could close stores the assignment after made
	// active: rebalance.go).
	h.m.assign(nil, nil)
	if st.Role() != state.RoleClosed {
		t.Errorf("standby %s after an assignment without it, want closed", st.Role())
	}
}

// TestRevokeOnShutdownClosesTheStores: while closing, revoked tasks are
// committed and closed, not kept as standbys.
func TestRevokeOnShutdownClosesTheStores(t *testing.T) {
	h := newHarness(t, nil)
	h.start(0)
	tk := h.feed(0, 0, "k", "a")
	h.waitProcessed(tk, 1)
	h.m.setClosing()
	h.m.revoke(h.ctx, []int32{0, 7}) // 7 is not active here: ignored
	if got := h.offsets.committed(0); got != 1 {
		t.Fatalf("committed %d, want 1", got)
	}
	if st := h.mgr.Task(0); st != nil {
		t.Errorf("task 0's stores still open (%s) after a revoke on shutdown", st.Role())
	}
}

// TestLostTasksAreDroppedWithoutCommitting: partitions lost (another
// member may own them already) drop their tasks: no commit, the stores
// closed at their last commit, and the member not ready until the next
// assignment.
func TestLostTasksAreDroppedWithoutCommitting(t *testing.T) {
	h := newHarness(t, nil)
	h.start(0)
	tk := h.feed(0, 0, "k", "a", "b")
	h.waitProcessed(tk, 2)
	h.m.lose([]int32{0})
	if n := len(h.offsets.commits()); n != 0 {
		t.Fatalf("offsets committed for lost tasks: %v", h.offsets.commits())
	}
	if st := h.mgr.Task(0); st != nil {
		t.Fatalf("lost task's stores still open: %s", st.Role())
	}
	if n := h.count(0, "k"); n != 0 {
		t.Errorf("the lost task's uncommitted count %d reached its store", n)
	}
	if ok, why := h.m.readiness(); ok || why != "joining the group" {
		t.Errorf("readiness after a loss: %v %q", ok, why)
	}
	h.m.lose([]int32{0}) // nothing left to lose: no-op
}

// TestARevokeRacingABackgroundCommit: a revoke while a background commit
// waits on the committer aborts it, then commits the revoked tasks
// itself, once.
func TestARevokeRacingABackgroundCommit(t *testing.T) {
	h := newHarness(t, nil)
	h.offsets.block = make(chan struct{})
	h.start(0)
	tk := h.feed(0, 0, "k", "a", "b", "c")
	h.waitProcessed(tk, 3)
	bg := make(chan error, 1)
	go func() { bg <- h.c.background(h.m.live(), false) }()
	<-h.offsets.entered // the background commit is at the committer
	h.offsets.mu.Lock()
	h.offsets.block = nil // the revoke's commit goes through
	h.offsets.mu.Unlock()
	h.m.revoke(h.ctx, []int32{0})
	if err := <-bg; !errors.Is(err, context.Canceled) {
		t.Fatalf("the racing background commit = %v; want it aborted", err)
	}
	if cs := h.offsets.commits(); len(cs) != 1 || cs[0][harnessInput][0].Offset != 3 {
		t.Fatalf("offset commits %v; want exactly the revoke's, of offset 3", cs)
	}
}

// TestShutdownWithAHungProducerEndsByItsDeadline: on shutdown with a
// producer that never acknowledges (brokers gone), the revoke gives up
// after ShutdownTimeout, commits nothing, drops the tasks and ends the
// session; a task stuck in its handler is abandoned, and drops itself
// when it returns.
func TestShutdownWithAHungProducerEndsByItsDeadline(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ShutdownTimeout = 100 * time.Millisecond })
	h.kafka.hang = make(chan struct{})
	defer close(h.kafka.hang)
	release := h.block()
	h.start(0, 1)
	t0 := h.feed(0, 0, "k", "a")
	h.waitProcessed(t0, 1)
	t1 := h.feed(1, 0, "k", "block") // stuck in its handler
	<-h.inGate
	h.m.setClosing()
	done := make(chan struct{})
	go func() {
		h.m.revoke(h.ctx, []int32{0, 1})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second): // a hang, not a timing check
		t.Fatal("the revoke did not end with a hung producer")
	}
	if n := len(h.offsets.commits()); n != 0 {
		t.Fatalf("offsets committed with a hung producer: %v", h.offsets.commits())
	}
	if err := h.failed(); err == nil || !strings.Contains(err.Error(), "commit on revoke") {
		t.Errorf("session failure %v; want the commit on revoke", err)
	}
	if st := h.mgr.Task(0); st != nil {
		t.Errorf("task 0's stores open after the revoke gave up: %s", st.Role())
	}
	if stuck := h.m.waitAbandoned(time.After(10 * time.Millisecond)); stuck != t1 {
		t.Fatalf("abandoned task still running: %v; want task 1", stuck)
	}
	release()
	if stuck := h.m.waitAbandoned(nil); stuck != nil {
		t.Fatalf("task %d still running after its handler returned", stuck.id)
	}
	if st := h.mgr.Task(1); st != nil {
		t.Errorf("the abandoned task did not drop its stores: %s", st.Role())
	}
}

// TestABrokenSessionDropsRevokedTasks: once the session is broken (its
// client failed), revokes drop without committing.
func TestABrokenSessionDropsRevokedTasks(t *testing.T) {
	h := newHarness(t, nil)
	h.start(0)
	tk := h.feed(0, 0, "k", "a")
	h.waitProcessed(tk, 1)
	h.m.setBroken(nil)
	h.m.setBroken(errors.New("later")) // the first one stays
	if ok, why := h.m.readiness(); ok || why != "rebuilding the Kafka client: session ended" {
		t.Errorf("readiness %v %q", ok, why)
	}
	h.m.revoke(h.ctx, []int32{0})
	if n := len(h.offsets.commits()); n != 0 {
		t.Fatalf("a broken session committed: %v", h.offsets.commits())
	}
}

// TestARefusedOffsetCommitOnRevokeDropsButDoesNotFail: a revoke whose
// offset commit is refused drops the tasks (the next owner processes
// their records again) without ending the session.
func TestARefusedOffsetCommitOnRevokeDropsButDoesNotFail(t *testing.T) {
	h := newHarness(t, nil)
	h.offsets.err = errors.New("REBALANCE_IN_PROGRESS")
	h.start(0)
	tk := h.feed(0, 0, "k", "a")
	h.waitProcessed(tk, 1)
	h.m.revoke(h.ctx, []int32{0})
	if err := h.failed(); err != nil {
		t.Errorf("session failed on a refused offset commit: %v", err)
	}
	if st := h.mgr.Task(0); st != nil {
		t.Errorf("task 0's stores open after a failed revoke commit: %s", st.Role())
	}
}

// TestAssignReconcilesStandbysAndReadiness: replicas in the plan open as
// standbys, a standby becomes the active task it is assigned (promoted,
// not reopened), the member is ready once every active task runs, and a
// broken topology stops every task and starts none.
func TestAssignReconcilesStandbysAndReadiness(t *testing.T) {
	h := newHarness(t, nil)
	if ok, why := h.m.readiness(); ok || why != "joining the group" {
		t.Errorf("readiness before an assignment: %v %q", ok, why)
	}
	h.m.assign(nil, []int32{2, 3})
	// The replicas open after assign returns (replicas.go).
	eventually(t, "standbys 2 and 3 tailing", func() bool {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		st2 := h.m.standby[2]
		return len(h.m.standby) == 2 && st2 != nil && st2.Role() == state.RoleStandby
	})
	h.m.assign([]int32{2}, []int32{3})
	eventually(t, "task 2 running", func() bool { tk := h.m.task(2); return tk != nil && tk.running.Load() })
	h.mu.Lock()
	promoted := h.promoted
	h.mu.Unlock()
	if len(promoted) != 1 || promoted[0] != 2 {
		t.Errorf("tasks started from their standby: %v; want task 2 (promoted, not reopened)", promoted)
	}
	if ok, why := h.m.readiness(); !ok {
		t.Errorf("not ready with every task running: %s", why)
	}
	if !h.kafka.paused[3] && len(h.kafka.paused) > 0 {
		t.Errorf("paused partitions %v", h.kafka.paused)
	}
	tk := h.feed(2, 0, "k", "a")
	h.waitProcessed(tk, 1)
	broken := errors.New("partition counts differ")
	h.m.stopEvery(broken)
	if got := h.offsets.committed(2); got != 1 {
		t.Errorf("stopEvery committed %d, want 1", got)
	}
	if ok, why := h.m.readiness(); ok || why != broken.Error() {
		t.Errorf("readiness %v %q; want the topology error", ok, why)
	}
	h.m.assign([]int32{0}, nil)
	if h.m.task(0) != nil {
		t.Error("a task started with a broken topology")
	}
}

// TestTaskSeriesLeaveWithTheTask: a task's series
// (records, latency, lag, dead letters) are collected from the live tasks
// at scrape time, so a task revoked or lost here has no series left for
// an alert to fire on.
func TestTaskSeriesLeaveWithTheTask(t *testing.T) {
	h := newHarness(t, nil)
	h.start(0, 1)
	for _, id := range []int32{0, 1} {
		h.waitProcessed(h.feed(id, 0, "k", "a"), 1)
		h.m.task(id).stats.lag.WithLabelValues(harnessInput).Set(3)
	}
	if got := seriesTasks(t, h.reg); got["rackstream_process_records_total"] != "0,1" || got["rackstream_consumer_lag_records"] != "0,1" {
		t.Fatalf("series before any move: %v", got)
	}
	h.m.revoke(h.ctx, []int32{1})
	if got := seriesTasks(t, h.reg); got["rackstream_process_records_total"] != "0" || got["rackstream_consumer_lag_records"] != "0" || got["rackstream_process_latency_seconds"] != "0" {
		t.Fatalf("series after task 1 was revoked: %v; want task 0's only", got)
	}
	h.m.lose([]int32{0})
	if got := seriesTasks(t, h.reg); len(got) != 0 {
		t.Fatalf("series after every task was lost: %v; want none", got)
	}
}

// seriesTasks maps each per-task family to its tasks (or partitions),
// comma-separated in order.
func seriesTasks(t *testing.T, reg *prometheus.Registry) map[string]string {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for _, f := range fams {
		var ids []string
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "task" || l.GetName() == "partition" {
					ids = append(ids, l.GetValue())
				}
			}
		}
		if len(ids) > 0 {
			out[f.GetName()] = strings.Join(ids, ",")
		}
	}
	return out
}

// TestForceCloseClosesTheStoresUnderAStuckHandler: when the shutdown gives
// up, the stores of a task whose handler ignores its context close anyway;
// the handler's store reads fail with ErrTaskClosed once it goes on, and
// its record is neither processed nor dead-lettered.
func TestForceCloseClosesTheStoresUnderAStuckHandler(t *testing.T) {
	h := newHarness(t, nil)
	release := h.block()
	h.start(0, 1)
	h.waitProcessed(h.feed(1, 0, "k", "a"), 1)
	tk := h.feed(0, 0, "k", "block")
	<-h.inGate
	if running := h.m.forceClose(); len(running) != 1 || running[0] != 0 {
		t.Fatalf("forceClose reports handlers running in tasks %v; want [0]", running)
	}
	for _, id := range []int32{0, 1} {
		if st := h.mgr.Task(id); st != nil {
			t.Errorf("task %d's stores open (%s) after forceClose", id, st.Role())
		}
	}
	if err := tk.commitStores(); !errors.Is(err, ErrTaskClosed) {
		t.Errorf("a commit of the closed task's stores = %v; want ErrTaskClosed", err)
	}
	release()
	<-tk.done
	if got := processed(tk); got != 0 {
		t.Errorf("the stuck record counts as processed (next offset %d)", got)
	}
	for _, r := range h.kafka.records {
		if r.topic == h.opts.DLQTopic {
			t.Errorf("the stuck record was dead-lettered: %+v", r)
		}
	}
}

// TestAMovedTaskAsksForItsCommitAfterItsFirstRecord: a task that moved here
// asks for its prompt commit (worked with promoted) once its first record
// is processed, not after its whole first batch, which after a failover is
// a fetch's worth of backlog; the rest of the batch follows as usual.
func TestAMovedTaskAsksForItsCommitAfterItsFirstRecord(t *testing.T) {
	h := newHarness(t, nil)
	var mu sync.Mutex
	var asked []int64 // records processed when a moved task asked
	h.env.worked = func(t *task, promoted bool) {
		if promoted {
			mu.Lock()
			asked = append(asked, processed(t))
			mu.Unlock()
		}
	}
	h.start(0) // the instance's first tasks: not moved
	h.m.assign([]int32{0, 1}, nil)
	eventually(t, "task 1 running", func() bool { tk := h.m.task(1); return tk != nil && tk.running.Load() })
	if !h.m.task(1).moved {
		t.Fatal("task 1, assigned after the first tasks started, is not marked moved")
	}
	release := h.block()
	defer release()
	task := h.feed(1, 0, "k", "a", "b", "block", "c")
	eventually(t, "the moved task's commit asked for", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(asked) > 0
	})
	mu.Lock()
	got := slices.Clone(asked)
	mu.Unlock()
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("asked for its commit with %v records processed; want once, after the first (the batch still held at its third)", got)
	}
	release()
	h.waitProcessed(task, 4)
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 {
		t.Fatalf("asked %d times; want once", len(asked))
	}
}

// TestATaskRevokedAndReassignedInOneGenerationIsPromotedFromItsStandby: a
// revoke keeps the committed task as a standby, and an assignment in the
// same generation that gives the task back promotes that standby, not a
// fresh open. The count goes on from the revoke's commit, and the moved
// task commits after its first record.
func TestATaskRevokedAndReassignedInOneGenerationIsPromotedFromItsStandby(t *testing.T) {
	h := newHarness(t, nil)
	h.start(0, 1)
	h.waitProcessed(h.feed(0, 0, "k", "a", "b"), 2)
	h.m.revoke(h.ctx, []int32{0})
	h.m.assign([]int32{0}, nil)
	eventually(t, "task 0 running again", func() bool { tk := h.m.task(0); return tk != nil && tk.running.Load() })
	h.mu.Lock()
	promoted := slices.Clone(h.promoted)
	h.mu.Unlock()
	if !slices.Equal(promoted, []int32{0}) {
		t.Fatalf("tasks started from a standby held here: %v; want [0]", promoted)
	}
	tk := h.m.task(0)
	if !tk.moved {
		t.Error("the reassigned task is not marked moved: its first commit would wait for the interval")
	}
	h.waitProcessed(h.feed(0, 2, "k", "c"), 3)
	if err := h.c.commit(h.ctx, []*task{tk}); err != nil {
		t.Fatal(err)
	}
	if n := h.count(0, "k"); n != 3 {
		t.Errorf("committed count %d after the task came back, want 3", n)
	}
	h.m.mu.Lock()
	n := len(h.m.standby)
	h.m.mu.Unlock()
	if n != 0 {
		t.Errorf("%d standbys held after the task came back; want 0", n)
	}
}

// TestARevokeLogsItsStopAndItsCommitApart: the revoke's line says how long
// the in-flight records took to finish and how long the commit took, so a
// slow hand-off names its cause.
func TestARevokeLogsItsStopAndItsCommitApart(t *testing.T) {
	logs := new(logRecords)
	h := newHarness(t, func(o *Options) { o.Logger = slog.New(logs) })
	h.start(0)
	h.waitProcessed(h.feed(0, 0, "k", "a"), 1)
	began := time.Now()
	h.m.revoke(h.ctx, []int32{0})
	took := time.Since(began)
	attrs := logs.find("revoked")
	if attrs == nil {
		t.Fatal("no revoked line logged")
	}
	var sum time.Duration
	for _, key := range []string{"stop", "commit"} {
		v, ok := attrs[key]
		if !ok || v.Kind() != slog.KindDuration {
			t.Fatalf("the revoked line's %s is %v; want a duration (line %v)", key, v, attrs)
		}
		sum += v.Duration()
	}
	if sum > took {
		t.Errorf("stop and commit add up to %v, longer than the revoke's %v", sum, took)
	}
}

// logRecords is a slog.Handler keeping every record, for tests that check
// a log line's fields.
type logRecords struct {
	mu   sync.Mutex // guards recs
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }

func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}

// find returns the attributes of the last record with message msg, nil
// when there is none.
func (l *logRecords) find(msg string) map[string]slog.Value {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.recs) - 1; i >= 0; i-- {
		if l.recs[i].Message != msg {
			continue
		}
		attrs := make(map[string]slog.Value)
		l.recs[i].Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value
			return true
		})
		return attrs
	}
	return nil
}
