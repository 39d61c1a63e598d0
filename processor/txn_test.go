package processor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
)

// The exactly-once commit path (txn.go) with no broker: the harness's
// fake producer behind a fake transactional client that records what the
// commit does, can refuse the offsets (a fenced zombie), the commit, the
// abort or the next transaction's begin, and keeps what a read_committed
// reader would see.

type fakeTxn struct {
	k          *fakeKafka
	mu         sync.Mutex
	calls      []string // begin, offsets, commit, abort
	offsets    []map[string]map[int32]kgo.EpochOffset
	offsetsErr error
	endErr     error
	abortErr   error
	beginErr   error
	mark       int        // records produced before the open transaction
	visible    []produced // what read_committed sees: committed transactions' records
	onCommit   func()     // runs inside a commit's EndTransaction
}

func (f *fakeTxn) call(c string) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
}

func (f *fakeTxn) BeginTransaction() error {
	f.mu.Lock()
	beginErr := f.beginErr
	f.mu.Unlock()
	if beginErr != nil {
		f.call("begin failed")
		return beginErr
	}
	f.k.mu.Lock()
	n := len(f.k.records)
	f.k.mu.Unlock()
	f.mu.Lock()
	f.mark = n
	f.mu.Unlock()
	f.call("begin")
	return nil
}

func (f *fakeTxn) EndTransaction(_ context.Context, commit kgo.TransactionEndTry) error {
	f.mu.Lock()
	endErr, abortErr, onCommit := f.endErr, f.abortErr, f.onCommit
	f.mu.Unlock()
	if !commit {
		if abortErr != nil {
			f.call("abort failed")
			return abortErr
		}
		f.call("abort")
		return nil
	}
	if endErr != nil {
		f.call("commit failed")
		return endErr
	}
	if onCommit != nil {
		onCommit()
	}
	f.k.mu.Lock()
	recs := slices.Clone(f.k.records)
	f.k.mu.Unlock()
	f.mu.Lock()
	f.visible = append(f.visible, recs[f.mark:]...)
	f.mu.Unlock()
	f.call("commit")
	return nil
}

func (f *fakeTxn) AbortBufferedRecords(ctx context.Context) error { return f.k.Flush(ctx) }

func (f *fakeTxn) TxnCommitOffsets(_ context.Context, offsets map[string]map[int32]kgo.EpochOffset) error {
	f.mu.Lock()
	err := f.offsetsErr
	f.mu.Unlock()
	if err != nil {
		f.call("offsets refused")
		return err
	}
	f.mu.Lock()
	f.offsets = append(f.offsets, offsets)
	f.mu.Unlock()
	f.call("offsets")
	return nil
}

func (f *fakeTxn) ProducedInTransaction() bool {
	f.k.mu.Lock()
	defer f.k.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.k.records) > f.mark
}

func (f *fakeTxn) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// outputs returns the output values read_committed sees for key, in order.
func (f *fakeTxn) outputs(key string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.visible {
		if r.topic == harnessOutput && r.key == key {
			out = append(out, r.value)
		}
	}
	return out
}

// transactional makes h's commits exactly-once over a fake transactional
// client, as the session does under exactly_once_v2; call it before
// starting tasks. rewound receives the tasks an abort suspended.
func transactional(h *harness) *fakeTxn {
	f := &fakeTxn{k: h.kafka}
	gate := new(sync.RWMutex)
	h.env.gate = gate
	h.c.eos = &txnCommits{
		txn: f, gate: gate, abortTimeout: 5 * time.Second, pauseTimeout: h.opts.ShutdownTimeout,
		live:    h.m.live,
		onAbort: func(ts []*task) { h.m.suspend(ts, func() {}) },
	}
	if err := f.BeginTransaction(); err != nil {
		h.t.Fatal(err)
	}
	return f
}

// restart restarts the suspended tasks as the poll loop does, returning
// the offsets they rewind to.
func (h *harness) restart() map[string]map[int32]kgo.EpochOffset {
	h.t.Helper()
	var ready []int32
	var offsets map[string]map[int32]kgo.EpochOffset
	eventually(h.t, "suspended tasks stopped", func() bool {
		ready, offsets = h.m.rewinds()
		return len(ready) > 0
	})
	h.start(ready...)
	return offsets
}

// counts decodes the outputs of the counting handler.
func counts(t *testing.T, vs []string) []int64 {
	t.Helper()
	out := make([]int64, len(vs))
	for i, v := range vs {
		n, err := codec.Int64().Decode([]byte(v))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = n
	}
	return out
}

// TestExactlyOnceWritesTheStoresOnlyAfterTheTransactionCommits: the
// handler's reads see its earlier writes (counts 1..3 within one
// transaction), but LevelDB does not until the commit: inside
// EndTransaction the committed count is still 0, after it 3. The offsets
// go into the transaction at the processed watermark, then the commit,
// then the next transaction begins.
func TestExactlyOnceWritesTheStoresOnlyAfterTheTransactionCommits(t *testing.T) {
	h := newHarness(t, exactlyOnce)
	f := transactional(h)
	h.start(0)
	tk := h.feed(0, 0, "k", "a", "b", "c")
	h.waitProcessed(tk, 3)
	var during int64 = -1
	f.onCommit = func() { during = h.count(0, "k") }
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	if during != 0 {
		t.Errorf("committed count %d while the transaction committed; the store must wait for it", during)
	}
	if n := h.count(0, "k"); n != 3 {
		t.Errorf("committed count %d after the transaction, want 3", n)
	}
	if got, want := f.log(), []string{"begin", "offsets", "commit", "begin"}; !slices.Equal(got, want) {
		t.Errorf("transaction calls %v, want %v", got, want)
	}
	if got := f.offsets[0][harnessInput][0].Offset; got != 3 {
		t.Errorf("offset %d in the transaction, want 3", got)
	}
	if ck := tk.st.Store(harnessStore).Checkpoint(); ck != 3 {
		t.Errorf("checkpoint %d, want 3 (after the 3 changelog records)", ck)
	}
	if got := f.outputs("k"); len(got) != 3 {
		t.Errorf("read_committed sees %d outputs, want 3", len(got))
	}
	// Nothing new: no transaction, no call.
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	if n := len(f.log()); n != 4 {
		t.Errorf("an empty commit called the transactional client: %v", f.log())
	}
}

// TestExactlyOnceFencedOffsetsAbortAndTheTaskRestartsFromItsLastCommit:
// TxnOffsetCommit refused with ILLEGAL_GENERATION (a zombie whose group
// moved on, KIP-447) aborts the transaction: no output is visible, the
// store keeps its last commit, and the task restarts from its last
// committed offset; processing the same records again counts them once.
func TestExactlyOnceFencedOffsetsAbortAndTheTaskRestartsFromItsLastCommit(t *testing.T) {
	h := newHarness(t, exactlyOnce)
	f := transactional(h)
	h.start(0)
	tk := h.feed(0, 0, "k", "a", "b")
	h.waitProcessed(tk, 2)
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	h.feed(0, 2, "k", "c", "d")
	h.waitProcessed(tk, 4)
	f.offsetsErr = kerr.IllegalGeneration
	err := h.c.commit(h.ctx, h.m.live())
	var aborted *txnAbortedError
	if !errors.As(err, &aborted) || !errors.Is(err, kerr.IllegalGeneration) || !errorsAsOffsetCommit(err) {
		t.Fatalf("commit = %v; want an aborted transaction naming ILLEGAL_GENERATION, retried by the session", err)
	}
	if got := f.log(); !slices.Equal(got[len(got)-3:], []string{"offsets refused", "abort", "begin"}) {
		t.Errorf("transaction calls %v; want the refused offsets, an abort, and the next transaction", got)
	}
	if n := h.count(0, "k"); n != 2 {
		t.Errorf("committed count %d after the abort, want 2 (the last commit)", n)
	}
	if got := f.outputs("k"); len(got) != 2 {
		t.Errorf("read_committed sees %d outputs after the abort, want 2", len(got))
	}
	f.offsetsErr = nil
	at := h.restart()
	if got := at[harnessInput][0].Offset; got != 2 {
		t.Fatalf("task 0 rewinds to offset %d, want 2 (its last commit)", got)
	}
	tk = h.feed(0, 2, "k", "c", "d")
	h.waitProcessed(tk, 4)
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	if n := h.count(0, "k"); n != 4 {
		t.Errorf("count %d after processing again, want 4: nothing doubled", n)
	}
	if got, want := counts(t, f.outputs("k")), []int64{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("read_committed outputs %v, want the counts 1..4", got)
	}
}

// TestExactlyOnceAFailedChangelogRecordAbortsTheTransaction: franz-go
// commits what was acknowledged; a transaction missing a changelog
// record must abort instead.
func TestExactlyOnceAFailedChangelogRecordAbortsTheTransaction(t *testing.T) {
	h := newHarness(t, exactlyOnce)
	f := transactional(h)
	h.kafka.failTopic, h.kafka.failErr = "harness-counts-changelog", errors.New("not leader")
	h.start(0)
	tk := h.feed(0, 0, "k", "a")
	h.waitProcessed(tk, 1)
	err := h.c.commit(h.ctx, h.m.live())
	if !errors.As(err, new(*txnAbortedError)) || !strings.Contains(err.Error(), "not leader") {
		t.Fatalf("commit = %v; want the transaction aborted for the changelog record", err)
	}
	if slices.Contains(f.log(), "commit") || slices.Contains(f.log(), "offsets") {
		t.Errorf("transaction calls %v: no offsets and no commit after a failed changelog record", f.log())
	}
}

// TestExactlyOnceAnUnknownCommitOutcomeEndsTheSession: an EndTxn whose
// outcome is unknown (a connection cut) is no abort: the stores are not
// written, and the error is not one the session retries.
func TestExactlyOnceAnUnknownCommitOutcomeEndsTheSession(t *testing.T) {
	h := newHarness(t, exactlyOnce)
	f := transactional(h)
	f.endErr = errors.New("connection reset")
	h.start(0)
	tk := h.feed(0, 0, "k", "a")
	h.waitProcessed(tk, 1)
	err := h.c.commit(h.ctx, h.m.live())
	if err == nil || errorsAsOffsetCommit(err) || !strings.Contains(err.Error(), "outcome unknown") {
		t.Fatalf("commit = %v; want an error that ends the session", err)
	}
	if n := h.count(0, "k"); n != 0 {
		t.Errorf("committed count %d after a commit of unknown outcome", n)
	}
}

// TestExactlyOnceARevokeCommitsEveryTasksWork: the transaction is
// shared, so revoking task 0 commits task 1's work with it; a loss aborts
// it and task 1 restarts from its last commit.
func TestExactlyOnceARevokeCommitsEveryTasksWork(t *testing.T) {
	h := newHarness(t, exactlyOnce)
	f := transactional(h)
	h.start(0, 1)
	h.waitProcessed(h.feed(0, 0, "k", "a"), 1)
	h.waitProcessed(h.feed(1, 0, "k", "a", "b"), 2)
	h.m.revoke(h.ctx, []int32{0})
	if len(f.offsets) != 1 || f.offsets[0][harnessInput][0].Offset != 1 || f.offsets[0][harnessInput][1].Offset != 2 {
		t.Fatalf("offsets in the revoke's transaction %v; want task 0's and task 1's", f.offsets)
	}
	if h.count(1, "k") != 2 {
		t.Errorf("task 1's count not committed by the revoke's transaction")
	}
	h.waitProcessed(h.feed(1, 2, "k", "c"), 3)
	h.m.assign([]int32{2}, nil)
	h.m.lose([]int32{2})
	if got := f.log(); got[len(got)-2] != "abort" {
		t.Fatalf("transaction calls %v; a loss must abort the open transaction", got)
	}
	if at := h.restart(); at[harnessInput][1].Offset != 2 {
		t.Errorf("task 1 rewinds to %v, want offset 2", at)
	}
	if n := h.count(1, "k"); n != 2 {
		t.Errorf("task 1's committed count %d, want 2", n)
	}
}

// exactlyOnce is the harness's options tweak for exactly-once.
func exactlyOnce(o *Options) {
	o.Guarantee, o.CommitInterval = ExactlyOnceV2, DefaultCommitIntervalExactlyOnce
}

// TestExactlyOnceAHandlerStuckPastTheShutdownTimeoutEndsTheSession: a
// handler that does not return from its record holds the gate every
// record and every commit needs. The commit gives up after
// shutdown.timeout.ms instead of stalling the instance silently: the
// stuck task fails (a task failure counted, the instance not ready), no
// transaction is committed, and the error ends the session (it is no
// offset commit error that the next commit retries).
func TestExactlyOnceAHandlerStuckPastTheShutdownTimeoutEndsTheSession(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		exactlyOnce(o)
		o.ShutdownTimeout = 300 * time.Millisecond
	})
	f := transactional(h)
	release := h.block()
	defer release()
	h.start(0, 1)
	h.waitProcessed(h.feed(1, 0, "k", "a"), 1)
	stuck := h.feed(0, 0, "k", "block")
	<-h.inGate
	done := make(chan error, 1)
	go func() { done <- h.c.background(h.m.live(), false) }()
	var err error
	eventually(t, "the commit to give up on the stuck handler", func() bool {
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	})
	if err == nil || errorsAsOffsetCommit(err) || !strings.Contains(err.Error(), "shutdown.timeout.ms") || !strings.Contains(err.Error(), "stuck in tasks [0]") {
		t.Fatalf("commit = %v; want an error ending the session that names the stuck task 0", err)
	}
	if stuck.getErr() == nil {
		t.Error("the stuck task did not fail")
	}
	if ready, why := h.m.readiness(); ready || !strings.Contains(why, "shutdown.timeout.ms") {
		t.Errorf("readiness = %v %q; want not ready, naming the stuck handler", ready, why)
	}
	if n := gathered(t, h, "rackstream_task_failures_total"); n != 1 {
		t.Errorf("task failures = %v, want 1", n)
	}
	if slices.Contains(f.log(), "commit") || slices.Contains(f.log(), "offsets") {
		t.Errorf("transaction calls %v: nothing may commit while a handler is in its record", f.log())
	}
}

// gathered sums the counter name in h's registry.
func gathered(t *testing.T, h *harness, name string) float64 {
	t.Helper()
	fams, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestExactlyOnceAnAbandonedHandlerWritesNothingIntoALaterTransaction: a
// lost task whose handler is stuck past shutdown.timeout.ms is abandoned;
// when the handler returns at last, its writes must not reach the
// transaction open then (it commits the other tasks' work, without the
// lost task's offsets): no state update and no output of its record is
// ever read committed, and the record counts as not processed.
func TestExactlyOnceAnAbandonedHandlerWritesNothingIntoALaterTransaction(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		exactlyOnce(o)
		o.ShutdownTimeout = 300 * time.Millisecond
	})
	f := transactional(h)
	h.c.eos.abortTimeout = 300 * time.Millisecond
	release := h.block()
	defer release()
	h.start(0, 1)
	stuck := h.feed(0, 0, "k0", "block")
	<-h.inGate
	h.m.lose([]int32{0}) // abandons task 0 in its handler
	if h.failed() == nil {
		t.Error("a loss that cannot abort the transaction (a handler holds the gate) did not end the session")
	}
	release()
	<-stuck.done
	if got := processed(stuck); got != 0 {
		t.Errorf("the abandoned record counts as processed (next offset %d)", got)
	}
	h.waitProcessed(h.feed(1, 0, "k1", "a"), 1)
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	if got := f.outputs("k0"); len(got) != 0 {
		t.Errorf("read_committed sees the abandoned handler's outputs %v", got)
	}
	for _, r := range h.kafka.records {
		if r.key == "k0" {
			t.Errorf("the abandoned handler's write reached the producer: %+v", r)
		}
	}
	if got := f.outputs("k1"); len(got) != 1 {
		t.Errorf("read_committed sees task 1's outputs %v, want its one count", got)
	}
}

// TestExactlyOnceAFailedTaskAbortsTheTransaction: a task that failed has
// records since the last commit in the shared transaction, and its
// offsets cannot go with them: the transaction aborts, nothing is
// committed, and only the healthy task restarts from its last commit.
func TestExactlyOnceAFailedTaskAbortsTheTransaction(t *testing.T) {
	h := newHarness(t, exactlyOnce)
	f := transactional(h)
	h.start(0, 1)
	t0 := h.feed(0, 0, "k", "a")
	h.waitProcessed(t0, 1)
	h.waitProcessed(h.feed(1, 0, "k", "a", "b"), 2)
	t0.setErr(errors.New("handler gave up"))
	err := h.c.commit(h.ctx, h.m.live())
	if !errors.As(err, new(*txnAbortedError)) || !errorsAsOffsetCommit(err) || !strings.Contains(err.Error(), "task 0 failed: handler gave up") {
		t.Fatalf("commit = %v; want the transaction aborted for failed task 0, retried by the session", err)
	}
	if got, want := f.log(), []string{"begin", "abort", "begin"}; !slices.Equal(got, want) {
		t.Errorf("transaction calls %v, want %v: no offsets and no commit", got, want)
	}
	if n := h.count(1, "k"); n != 0 {
		t.Errorf("task 1's count %d committed by an aborted transaction", n)
	}
	if got := f.outputs("k"); len(got) != 0 {
		t.Errorf("read_committed sees %v after the abort", got)
	}
	var ready []int32
	eventually(t, "the aborted transaction's tasks stopped", func() bool {
		ready, _ = h.m.rewinds()
		return len(ready) > 0
	})
	if !slices.Equal(ready, []int32{1}) {
		t.Errorf("tasks %v restart, want [1]: the failed task stays failed", ready)
	}
}

// TestExactlyOnceAnAbortableCommitAbortsAndTheTasksRestart: an EndTxn
// refused as abortable is no unknown outcome: the transaction is
// aborted, the session goes on, and the task restarts from its last
// commit and counts its records once.
func TestExactlyOnceAnAbortableCommitAbortsAndTheTasksRestart(t *testing.T) {
	h := newHarness(t, exactlyOnce)
	f := transactional(h)
	f.endErr = kerr.TransactionAbortable
	h.start(0)
	h.waitProcessed(h.feed(0, 0, "k", "a"), 1)
	err := h.c.commit(h.ctx, h.m.live())
	if !errors.As(err, new(*txnAbortedError)) || !errors.Is(err, kerr.TransactionAbortable) || !errorsAsOffsetCommit(err) {
		t.Fatalf("commit = %v; want an aborted transaction naming TRANSACTION_ABORTABLE, retried by the session", err)
	}
	if got := f.log(); !slices.Equal(got[len(got)-3:], []string{"commit failed", "abort", "begin"}) {
		t.Errorf("transaction calls %v; want the refused commit, an abort, and the next transaction", got)
	}
	f.endErr = nil
	if at := h.restart(); at[harnessInput][0].Offset != 0 {
		t.Fatalf("task 0 rewinds to %v, want offset 0 (nothing committed)", at)
	}
	h.waitProcessed(h.feed(0, 0, "k", "a"), 1)
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	if got, want := counts(t, f.outputs("k")), []int64{1}; !slices.Equal(got, want) {
		t.Errorf("read_committed outputs %v, want %v", got, want)
	}
}

// TestExactlyOnceAFailedAbortEndsTheSession: a transaction that cannot be
// aborted may still be open with the tasks' records: the error is not one
// the session retries, and it names both the abort's failure and its
// cause.
func TestExactlyOnceAFailedAbortEndsTheSession(t *testing.T) {
	h := newHarness(t, exactlyOnce)
	f := transactional(h)
	f.offsetsErr = kerr.IllegalGeneration
	f.abortErr = errors.New("coordinator unreachable")
	h.start(0)
	h.waitProcessed(h.feed(0, 0, "k", "a"), 1)
	err := h.c.commit(h.ctx, h.m.live())
	if err == nil || errorsAsOffsetCommit(err) || !strings.Contains(err.Error(), "abort the transaction") ||
		!strings.Contains(err.Error(), "coordinator unreachable") || !strings.Contains(err.Error(), "ILLEGAL_GENERATION") {
		t.Fatalf("commit = %v; want an error ending the session, naming the abort's failure and its cause", err)
	}
	if n := h.count(0, "k"); n != 0 {
		t.Errorf("committed count %d after a failed abort", n)
	}
}

// TestExactlyOnceANextTransactionThatCannotBeginEndsTheSession: the
// transaction committed, so its stores and offsets are; but with no open
// transaction the tasks cannot go on: they stop, and the error ends the
// session.
func TestExactlyOnceANextTransactionThatCannotBeginEndsTheSession(t *testing.T) {
	h := newHarness(t, exactlyOnce)
	f := transactional(h)
	h.start(0)
	tk := h.feed(0, 0, "k", "a")
	h.waitProcessed(tk, 1)
	f.beginErr = errors.New("producer fenced")
	err := h.c.commit(h.ctx, h.m.live())
	if err == nil || errorsAsOffsetCommit(err) || !strings.Contains(err.Error(), "begin the next transaction: producer fenced") {
		t.Fatalf("commit = %v; want an error ending the session", err)
	}
	if n := h.count(0, "k"); n != 1 {
		t.Errorf("committed count %d, want 1: the transaction committed", n)
	}
	if got := f.outputs("k"); len(got) != 1 {
		t.Errorf("read_committed sees %d outputs, want the committed one", len(got))
	}
	tk.mu.Lock()
	activated := tk.activated
	tk.mu.Unlock()
	if activated || tk.ctx.Err() == nil {
		t.Error("task 0 goes on with no open transaction; it must stop")
	}
}

// TestExactlyOnceACommitWaitingForThePreviousGivesUpWithItsContext: one
// transaction commits at a time; a commit waiting behind one that does
// not finish ends with its own context, and the first then commits.
func TestExactlyOnceACommitWaitingForThePreviousGivesUpWithItsContext(t *testing.T) {
	h := newHarness(t, exactlyOnce)
	f := transactional(h)
	inCommit, finish := make(chan struct{}), make(chan struct{})
	f.onCommit = func() {
		close(inCommit)
		<-finish
	}
	h.start(0)
	h.waitProcessed(h.feed(0, 0, "k", "a"), 1)
	first := make(chan error, 1)
	go func() { first <- h.c.commit(h.ctx, h.m.live()) }()
	<-inCommit
	ctx, cancel := context.WithTimeout(h.ctx, 50*time.Millisecond)
	defer cancel()
	if err := h.c.commit(ctx, h.m.live()); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for the previous commit") {
		t.Fatalf("commit = %v; want it to give up waiting for the previous commit", err)
	}
	close(finish)
	if err := <-first; err != nil {
		t.Fatalf("the first commit = %v", err)
	}
	if n := h.count(0, "k"); n != 1 {
		t.Errorf("committed count %d, want 1", n)
	}
}
