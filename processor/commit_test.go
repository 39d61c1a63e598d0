package processor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The commit path on its own (commit.go), with no broker: see
// harness_test.go.

// TestCommitIsAtTheProcessedWatermarkWhateverTheAckOrder: the producer
// acknowledges the changelog and output records last first; the commit
// still commits the offset after the last processed record, and the
// store's checkpoint after its last changelog record, once every record is
// acknowledged. A commit with nothing new commits nothing again.
func TestCommitIsAtTheProcessedWatermarkWhateverTheAckOrder(t *testing.T) {
	h := newHarness(t, nil)
	h.start(0)
	tk := h.feed(0, 0, "k", "a", "b", "c", "d", "e")
	h.waitProcessed(tk, 5)
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	if got := h.offsets.committed(0); got != 5 {
		t.Fatalf("committed offset %d, want 5 (after the last processed record)", got)
	}
	st := tk.st.Store(harnessStore)
	if ck := st.Checkpoint(); ck != 5 {
		t.Errorf("store checkpoint %d, want 5 (after the 5th changelog record, acknowledged last)", ck)
	}
	if n := h.count(0, "k"); n != 5 {
		t.Errorf("committed count %d, want 5", n)
	}
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	if n := len(h.offsets.commits()); n != 1 {
		t.Errorf("%d offset commits; a commit with nothing new must not commit again", n)
	}
	// More records, one more commit, at the new watermark.
	h.feed(0, 5, "k", "f", "g")
	h.waitProcessed(tk, 7)
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	if got := h.offsets.committed(0); got != 7 {
		t.Fatalf("committed offset %d, want 7", got)
	}
}

// TestAFailedOutputProduceStopsTheCommit: an output record the producer
// could not deliver fails the commit: no offset and no store batch is
// committed, and every later commit of the session fails too.
func TestAFailedOutputProduceStopsTheCommit(t *testing.T) {
	h := newHarness(t, nil)
	h.kafka.failTopic, h.kafka.failErr = harnessOutput, errors.New("broker says no")
	h.start(0)
	tk := h.feed(0, 0, "k", "a", "b")
	h.waitProcessed(tk, 2)
	err := h.c.commit(h.ctx, h.m.live())
	if err == nil || !strings.Contains(err.Error(), "produce to out: broker says no") {
		t.Fatalf("commit = %v; want the produce error", err)
	}
	if n := len(h.offsets.commits()); n != 0 {
		t.Fatalf("%d offset commits after a failed produce", n)
	}
	if ck := tk.st.Store(harnessStore).Checkpoint(); ck != 0 {
		t.Errorf("store checkpoint %d moved after a failed produce", ck)
	}
	if err := h.c.commit(h.ctx, h.m.live()); err == nil {
		t.Error("a later commit succeeded; the failed record is lost to it")
	}
}

// TestAFailedChangelogProduceStopsTheTasksCommit: a changelog record that
// failed fails the task's store commit: the task stops, its offsets are
// not committed, and the others' are.
func TestAFailedChangelogProduceStopsTheTasksCommit(t *testing.T) {
	h := newHarness(t, nil)
	h.kafka.failTopic, h.kafka.failErr = "harness-counts-changelog", errors.New("not leader")
	h.start(0)
	tk := h.feed(0, 0, "k", "a")
	h.waitProcessed(tk, 1)
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatalf("commit: %v (the task fails, not the commit)", err)
	}
	if n := len(h.offsets.commits()); n != 0 {
		t.Fatalf("offsets committed for a task whose changelog write failed: %v", h.offsets.commits())
	}
	if err := tk.getErr(); err == nil || !strings.Contains(err.Error(), "not leader") {
		t.Fatalf("task error %v; want the changelog produce error", err)
	}
	if ok, why := h.m.readiness(); ok || !strings.Contains(why, "not leader") {
		t.Errorf("readiness %v %q; want not ready naming the error", ok, why)
	}
}

// TestAProducerThatDoesNotAcknowledgeCommitsNothing: a commit waiting for
// records stuck on unreachable brokers ends with its context; nothing is
// committed.
func TestAProducerThatDoesNotAcknowledgeCommitsNothing(t *testing.T) {
	h := newHarness(t, nil)
	h.kafka.hang = make(chan struct{})
	defer close(h.kafka.hang)
	h.start(0)
	tk := h.feed(0, 0, "k", "a")
	h.waitProcessed(tk, 1)
	ctx, cancel := context.WithTimeout(h.ctx, 50*time.Millisecond)
	defer cancel()
	if err := h.c.commit(ctx, h.m.live()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("commit = %v; want the wait's deadline", err)
	}
	if n := len(h.offsets.commits()); n != 0 {
		t.Fatalf("%d offset commits with records unacknowledged", n)
	}
}

// TestATaskGoesOnWhileItsCommitWaits: a commit holds a task only for its
// cut. While the commit waits for the producer, the task processes more
// records; the commit then commits the offsets and the store state of its
// cut, not of what came after, and the next commit the rest.
func TestATaskGoesOnWhileItsCommitWaits(t *testing.T) {
	h := newHarness(t, nil)
	hang := make(chan struct{})
	h.kafka.hang = hang
	h.start(0)
	tk := h.feed(0, 0, "k", "a", "b")
	h.waitProcessed(tk, 2)
	committed := make(chan error, 1)
	go func() { committed <- h.c.commit(h.ctx, h.m.live()) }()
	// The cut is taken once the task's epoch moves; then feed more.
	eventually(t, "the commit to cut the task", func() bool {
		tk.mu.Lock()
		defer tk.mu.Unlock()
		return tk.acks.cur == 1
	})
	h.feed(0, 2, "k", "c", "d", "e")
	h.waitProcessed(tk, 5) // processed while the commit waits
	select {
	case err := <-committed:
		t.Fatalf("the commit returned (%v) with its records unacknowledged", err)
	default:
	}
	if v, ok, err := tk.st.Store(harnessStore).Latest().Get([]byte("k")); err != nil || !ok || len(v) == 0 {
		t.Fatalf("latest read during the commit: %q %v %v", v, ok, err)
	}
	close(hang)
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	if got := h.offsets.committed(0); got != 2 {
		t.Fatalf("committed offset %d, want 2 (the cut's, not the records after it)", got)
	}
	if ck := tk.st.Store(harnessStore).Checkpoint(); ck != 2 {
		t.Fatalf("store checkpoint %d, want 2 (after the cut's changelog records)", ck)
	}
	if n := h.count(0, "k"); n != 2 {
		t.Fatalf("committed count %d, want 2", n)
	}
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	if got, n := h.offsets.committed(0), h.count(0, "k"); got != 5 || n != 5 {
		t.Fatalf("the next commit: offset %d and count %d, want 5 and 5", got, n)
	}
}

// TestAFailedOffsetCommitIsRetriedByTheNext: an offset commit refused
// (a rebalance in progress) is an offsetCommitError, and the next commit
// commits the same offsets.
func TestAFailedOffsetCommitIsRetriedByTheNext(t *testing.T) {
	h := newHarness(t, nil)
	h.offsets.err = errors.New("REBALANCE_IN_PROGRESS")
	h.start(0)
	tk := h.feed(0, 0, "k", "a", "b")
	h.waitProcessed(tk, 2)
	err := h.c.commit(h.ctx, h.m.live())
	if !errorsAsOffsetCommit(err) {
		t.Fatalf("commit = %v; want an offsetCommitError", err)
	}
	h.offsets.mu.Lock()
	h.offsets.err = nil
	h.offsets.mu.Unlock()
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	if got := h.offsets.committed(0); got != 2 {
		t.Fatalf("committed %d after the retry, want 2", got)
	}
}

// TestAbortedBackgroundCommitsAndAStoppedCommitter: abort cancels a
// background commit waiting on the committer; after abort(true) no
// background commit starts.
func TestAbortedBackgroundCommitsAndAStoppedCommitter(t *testing.T) {
	h := newHarness(t, nil)
	h.offsets.block = make(chan struct{})
	h.start(0)
	tk := h.feed(0, 0, "k", "a")
	h.waitProcessed(tk, 1)
	done := make(chan error, 1)
	go func() { done <- h.c.background(h.m.live(), false) }()
	<-h.offsets.entered
	h.c.abort(false)
	if err := <-done; !errorsAsOffsetCommit(err) || !errors.Is(err, context.Canceled) {
		t.Fatalf("aborted background commit = %v; want its cancelled offset commit", err)
	}
	h.c.abort(true)
	if err := h.c.background(h.m.live(), false); !errors.Is(err, context.Canceled) {
		t.Fatalf("background commit after abort(true) = %v; want context.Canceled", err)
	}
	close(h.offsets.block)
}

// TestACommitWaitingForATaskGivesUpWithItsContext: a task stuck in its
// record holds its lock; a commit waits for it only as long as its
// context.
func TestACommitWaitingForATaskGivesUpWithItsContext(t *testing.T) {
	h := newHarness(t, nil)
	release := h.block()
	defer release()
	h.start(0, 1)
	h.feed(1, 0, "k", "a")
	h.waitProcessed(h.m.task(1), 1)
	h.feed(0, 0, "k", "block")
	<-h.inGate
	ctx, cancel := context.WithTimeout(h.ctx, 50*time.Millisecond)
	defer cancel()
	err := h.c.commit(ctx, []*task{h.m.task(1), h.m.task(0)})
	if err == nil || !strings.Contains(err.Error(), "waiting for task 0 to finish its record") {
		t.Fatalf("commit = %v; want it to give up on task 0", err)
	}
	// It left task 1 unlocked: a commit of it alone goes through.
	if err := h.c.commit(h.ctx, []*task{h.m.task(1)}); err != nil {
		t.Fatal(err)
	}
	if got := h.offsets.committed(1); got != 1 {
		t.Errorf("task 1 committed at %d, want 1", got)
	}
}

// TestACommitWritesALargeCacheThroughInChunks: a record cache holding more
// than a chunk is written through a chunk per pause of its task before the
// cut (by the task itself, idle here, at the commit's request), so the task
// is never held for the whole cache; everything is committed, every key
// once.
func TestACommitWritesALargeCacheThroughInChunks(t *testing.T) {
	// Two entries a key (the store's write and the output's emit): two
	// chunks ahead, the rest at the cut.
	const keys = cutChunk + 44
	h, tk, pauses := cachedIdle(t, keys)
	before := pauses()
	if err := h.c.commit(h.ctx, []*task{tk}); err != nil {
		t.Fatal(err)
	}
	if n := pauses() - before; n != 3 {
		t.Errorf("the task was paused %d times by the commit, want 3 (two chunks, then the cut)", n)
	}
	if got := h.offsets.committed(0); got != keys {
		t.Fatalf("committed offset %d, want %d", got, keys)
	}
	for _, i := range []int{0, cutChunk, keys - 1} {
		if n := h.count(0, fmt.Sprintf("k%04d", i)); n != 1 {
			t.Fatalf("key %d: committed count %d, want 1", i, n)
		}
	}
}

// TestATaskWorksThroughABatchBetweenTwoChunks: the task writes the chunks
// ahead of the cut itself, one after each batch it takes, so a commit of a
// large cache holds its records for a chunk at a time, never for the whole
// cache.
func TestATaskWorksThroughABatchBetweenTwoChunks(t *testing.T) {
	// 2 x 640 dirty entries (a store write and an emit a key): five
	// chunks ahead, the queued batches adding only key k's two entries.
	const keys, perBatch, batches = 640, 3, 6
	h, tk, release := cachedThenBlocked(t, keys)
	next := int64(keys + 1)
	for range batches {
		h.feed(0, next, "k", "a", "b", "c")
		next += perBatch
	}
	committed := make(chan error, 1)
	go func() { committed <- h.c.commit(h.ctx, []*task{tk}) }()
	eventually(t, "the commit to ask the task for its cache", func() bool { return tk.cacheAsk.Load() != nil })
	release()
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	// The chunks: after the blocked record's batch, and after each of the
	// next four batches; the cut follows the fifth chunk.
	if got, want := h.offsets.committed(0), int64(keys+1+4*perBatch); got < want {
		t.Fatalf("committed offset %d, want at least %d: four batches worked through between the five chunks", got, want)
	}
	h.waitProcessed(tk, next)
	if err := h.c.commit(h.ctx, []*task{tk}); err != nil {
		t.Fatal(err)
	}
	if got, n := h.offsets.committed(0), h.count(0, "k"); got != next || n != 1+batches*perBatch {
		t.Fatalf("the next commit: offset %d and k's count %d, want %d and %d", got, n, next, 1+batches*perBatch)
	}
}

// TestACommitsTasksWriteAheadInTurnWithinOneDeadline: the tasks of a
// commit write their caches ahead in turn, and share one deadline: when the
// first holds the commit past it, the next is not asked, and its cut
// writes its cache whole.
func TestACommitsTasksWriteAheadInTurnWithinOneDeadline(t *testing.T) {
	const keys = 2 * cutChunk
	h := newHarness(t, func(o *Options) {
		o.CacheMaxBytes = 64 << 20
		o.CommitInterval = 100 * time.Millisecond // aheadWait's least
	})
	release := h.block()
	h.start(0, 1)
	t0, t1 := h.m.task(0), h.m.task(1)
	for i := range keys {
		h.feed(0, int64(i), fmt.Sprintf("k%04d", i), "x")
		h.feed(1, int64(i), fmt.Sprintf("j%04d", i), "x")
	}
	h.feed(0, keys, "k", "block")
	<-h.inGate // task 0 in the handler of its blocked record
	h.waitProcessed(t1, keys)
	var before dto.Metric
	if err := h.env.met.commitPause.Write(&before); err != nil {
		t.Fatal(err)
	}
	committed := make(chan error, 1)
	go func() { committed <- h.c.commit(h.ctx, []*task{t0, t1}) }()
	eventually(t, "the commit to ask task 0 for its cache", func() bool { return t0.cacheAsk.Load() != nil })
	if t1.cacheAsk.Load() != nil {
		t.Fatal("task 1 asked for its cache while task 0 was")
	}
	eventually(t, "the commit to give up on task 0 at the deadline", func() bool { return t0.cacheAsk.Load() == nil })
	release()
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	var after dto.Metric
	if err := h.env.met.commitPause.Write(&after); err != nil {
		t.Fatal(err)
	}
	if n := after.GetHistogram().GetSampleCount() - before.GetHistogram().GetSampleCount(); n != 2 {
		t.Errorf("the tasks were paused %d times by the commit, want 2 (the cuts: task 1 not asked after the deadline)", n)
	}
	for _, id := range []int32{0, 1} {
		if got := h.offsets.committed(id); got < keys {
			t.Errorf("task %d committed at %d, want at least %d", id, got, keys)
		}
	}
}

// TestAPromptCommitWritesTheCacheAtTheCut: a moved task's first commit
// (commitPromptly) does not ask the task to write its cache ahead: the cut
// writes it whole, in one pause, and the commit waits for no batch.
func TestAPromptCommitWritesTheCacheAtTheCut(t *testing.T) {
	const keys = 3 * cutChunk
	h, tk, pauses := cachedIdle(t, keys)
	before := pauses()
	if err := h.c.commitPromptly(h.ctx, []*task{tk}); err != nil {
		t.Fatal(err)
	}
	if n := pauses() - before; n != 1 {
		t.Errorf("the task was paused %d times by a prompt commit, want 1 (the cut)", n)
	}
	if got := h.offsets.committed(0); got != keys {
		t.Fatalf("committed offset %d, want %d", got, keys)
	}
	if n := h.count(0, fmt.Sprintf("k%04d", keys-1)); n != 1 {
		t.Fatalf("the last key's committed count %d, want 1", n)
	}
}

// cachedIdle starts task 0 with a large record cache, keys keys written
// once each (offsets 0 to keys-1), and waits until it is idle; pauses
// counts the commits' pauses of tasks so far.
func cachedIdle(t *testing.T, keys int) (h *harness, tk *task, pauses func() uint64) {
	t.Helper()
	h = newHarness(t, func(o *Options) { o.CacheMaxBytes = 64 << 20 })
	h.start(0)
	tk = h.m.task(0)
	for i := range keys {
		h.feed(0, int64(i), fmt.Sprintf("k%04d", i), "x")
	}
	h.waitProcessed(tk, int64(keys))
	return h, tk, func() uint64 {
		var m dto.Metric
		if err := h.env.met.commitPause.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
}

// cachedThenBlocked starts task 0 with a large record cache, keys keys
// written once each (offsets 0 to keys-1), and leaves it in the handler of
// a record of key k (offset keys) until release.
func cachedThenBlocked(t *testing.T, keys int) (h *harness, tk *task, release func()) {
	t.Helper()
	h = newHarness(t, func(o *Options) { o.CacheMaxBytes = 64 << 20 })
	release = h.block()
	h.start(0)
	tk = h.m.task(0)
	for i := range keys {
		h.feed(0, int64(i), fmt.Sprintf("k%04d", i), "x")
	}
	h.feed(0, int64(keys), "k", "block")
	<-h.inGate
	return h, tk, release
}

// TestACommitWritingACacheAheadGivesUpWithItsContext: a task stuck in its
// record while the commit writes its cache through in chunks holds the
// commit only as long as the commit's context; nothing is committed, and
// the cache's entries are all still there for the next commit.
func TestACommitWritingACacheAheadGivesUpWithItsContext(t *testing.T) {
	const keys = cutChunk + 44
	h, tk, release := cachedThenBlocked(t, keys)
	ctx, cancel := context.WithTimeout(h.ctx, 50*time.Millisecond)
	defer cancel()
	err := h.c.commit(ctx, []*task{tk})
	if err == nil || !strings.Contains(err.Error(), "waiting for task 0 to write its record cache through") {
		t.Fatalf("commit = %v; want it to give up on task 0", err)
	}
	if n := len(h.offsets.commits()); n != 0 {
		t.Fatalf("%d offset commits by a commit that gave up", n)
	}
	release()
	h.waitProcessed(tk, keys+1)
	if err := h.c.commit(h.ctx, []*task{tk}); err != nil {
		t.Fatal(err)
	}
	if got, n := h.offsets.committed(0), h.count(0, fmt.Sprintf("k%04d", keys-1)); got != keys+1 || n != 1 {
		t.Fatalf("the next commit: offset %d and the last key's count %d, want %d and 1", got, n, keys+1)
	}
}

// TestCommitsOfOtherTasksRunAtOnce: at-least-once commits lock their
// tasks, not the committer: while a commit waits for its task's records,
// a commit of another task (a moved task's prompt commit) goes through;
// one that includes the waiting commit's task waits for it.
func TestCommitsOfOtherTasksRunAtOnce(t *testing.T) {
	h := newHarness(t, nil)
	h.kafka.hold(h.topo.ChangelogTopics()[0], 0) // task 0's changelog
	h.start(0, 1)
	t0, t1 := h.feed(0, 0, "k", "a"), h.feed(1, 0, "j", "b")
	h.waitProcessed(t0, 1)
	h.waitProcessed(t1, 1)
	first := make(chan error, 1)
	go func() { first <- h.c.commit(h.ctx, []*task{t0}) }()
	eventually(t, "the first commit to cut task 0", func() bool {
		t0.mu.Lock()
		defer t0.mu.Unlock()
		return t0.acks.cur == 1
	})
	ctx, cancel := context.WithTimeout(h.ctx, time.Minute)
	defer cancel()
	if err := h.c.commit(ctx, []*task{t1}); err != nil {
		t.Fatalf("the commit of task 1 beside the waiting one: %v", err)
	}
	if got := h.offsets.committed(1); got != 1 {
		t.Fatalf("task 1's committed offset %d, want 1", got)
	}
	select {
	case err := <-first:
		t.Fatalf("the first commit returned (%v) with its records held", err)
	default:
	}
	short, cancelShort := context.WithTimeout(h.ctx, 50*time.Millisecond)
	defer cancelShort()
	err := h.c.commit(short, []*task{t1, t0})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "earlier commit of task 0") {
		t.Fatalf("a commit of both tasks = %v; want it to wait for the first commit of task 0", err)
	}
	h.kafka.release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got, n := h.offsets.committed(0), h.count(0, "k"); got != 1 || n != 1 {
		t.Fatalf("task 0: offset %d, count %d; want 1 and 1", got, n)
	}
}

// TestAMovedTasksCommitIsItsOwn: the commit a moved task asks for after its
// first batch commits the tasks that asked, not every live task (whose
// records it would wait for); a commit that is due, or a zero interval,
// commits every live task.
func TestAMovedTasksCommitIsItsOwn(t *testing.T) {
	h := newHarness(t, nil)
	h.start(0, 1, 2)
	s := &session{r: &Runtime{opts: Options{CommitInterval: time.Second}}, m: h.m, log: h.opts.Logger}
	moved := h.m.task(1)
	s.worked(moved, true)
	s.worked(h.m.task(2), false)
	if got := ids(s.toCommit(true)); fmt.Sprint(got) != "[1]" {
		t.Errorf("the asked commit commits tasks %v, want [1]", got)
	}
	if got := ids(s.toCommit(true)); len(got) != 3 {
		t.Errorf("asked again with no moved task: tasks %v, want all 3", got)
	}
	s.worked(moved, true)
	if got := ids(s.toCommit(false)); len(got) != 3 {
		t.Errorf("a due commit commits tasks %v, want all 3", got)
	}
	// The prompt commit runs beside the regular ones: a due commit does
	// not forget who asked.
	if got := ids(s.toCommit(true)); fmt.Sprint(got) != "[1]" {
		t.Errorf("asked after a due commit: tasks %v, want [1]", got)
	}
	s.r.opts.CommitInterval = 0
	s.worked(moved, true)
	if got := ids(s.toCommit(true)); len(got) != 3 {
		t.Errorf("with a zero interval: tasks %v, want all 3", got)
	}
}

// TestPromptCommitsOfMovedTasksRunAtOnce: a moved task's prompt commit does
// not wait for another moved task's prompt commit still in flight (its
// records held by the broker here): each ask commits on its own goroutine.
func TestPromptCommitsOfMovedTasksRunAtOnce(t *testing.T) {
	h := newHarness(t, nil)
	h.kafka.hold(h.topo.ChangelogTopics()[0], 0) // task 0's changelog
	h.start(0, 1)
	ctx, cancel := context.WithCancel(h.ctx)
	failed, fail := context.WithCancelCause(context.Background())
	defer fail(nil)
	s := &session{
		r: &Runtime{opts: Options{CommitInterval: time.Hour}}, m: h.m, c: h.c, log: h.opts.Logger,
		ctx: ctx, failed: failed, fail: fail, commitWanted: make(chan time.Time, 1),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.promptCommits()
	}()
	t0 := h.feed(0, 0, "k", "a")
	h.waitProcessed(t0, 1)
	s.worked(t0, true)
	eventually(t, "task 0's prompt commit to cut it", func() bool {
		t0.mu.Lock()
		defer t0.mu.Unlock()
		return t0.acks.cur == 1
	})
	t1 := h.feed(1, 0, "j", "b")
	h.waitProcessed(t1, 1)
	s.worked(t1, true)
	eventually(t, "task 1's prompt commit beside task 0's held one", func() bool { return h.offsets.committed(1) == 1 })
	if got := h.offsets.committed(0); got >= 1 {
		t.Fatalf("task 0 committed offset %d with its changelog record held", got)
	}
	h.kafka.release()
	eventually(t, "task 0's prompt commit once its record is acknowledged", func() bool { return h.offsets.committed(0) == 1 })
	cancel()
	<-done
}

// TestTheFirstPeriodicCommitIsAtARandomPhase: instances started together
// commit at different moments of the interval (session.commitLoop).
func TestTheFirstPeriodicCommitIsAtARandomPhase(t *testing.T) {
	const every = time.Second
	seen := make(map[time.Duration]bool)
	for range 1000 {
		d := commitPhase(every)
		if d <= 0 || d > every {
			t.Fatalf("commitPhase(%v) = %v: want within (0, %v]", every, d, every)
		}
		seen[d/(every/10)] = true
	}
	if len(seen) < 8 {
		t.Fatalf("1000 phases fell in %d of the interval's tenths: want them spread over it", len(seen))
	}
	if d := commitPhase(1); d != 1 {
		t.Fatalf("commitPhase(1ns) = %v, want 1ns", d)
	}
}
