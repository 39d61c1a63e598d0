package processor

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// atMostOnce makes h's tasks commit ahead, as the session does under
// processing.guarantee=at_most_once.
func atMostOnce(h *harness) {
	h.env.ahead = func(t *task, records []*kgo.Record) bool { return h.c.commitAhead(t.ctx, t, records) }
}

// TestAtMostOnceCommitsABatchBeforeItsHandlerRuns: the committer sees the
// offset after the batch's last record before the handler sees its first
// record; the periodic commit then writes the stores and commits no
// input offset again.
func TestAtMostOnceCommitsABatchBeforeItsHandlerRuns(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Guarantee = AtMostOnce })
	atMostOnce(h)
	release := h.block()
	h.start(0)
	tk := h.feed(0, 0, "k", "block", "b", "c")
	<-h.inGate // the handler of the batch's first record runs
	if got := h.offsets.committed(0); got != 3 {
		t.Fatalf("committed offset %d when the handler ran; want 3 (after the whole batch) before it", got)
	}
	release()
	h.waitProcessed(tk, 3)
	if err := h.c.commit(h.ctx, h.m.live()); err != nil {
		t.Fatal(err)
	}
	if n := len(h.offsets.commits()); n != 1 {
		t.Errorf("%d offset commits; the periodic commit must not commit the input again: %v", n, h.offsets.commits())
	}
	if n := h.count(0, "k"); n != 3 {
		t.Errorf("committed count %d, want 3 (the stores are still committed)", n)
	}
}

// TestAtMostOnceProcessesNothingUntilTheCommitSucceeds: a refused commit
// (a rebalance in progress) is retried, and the batch waits for it; a
// stopped task gives up without processing.
func TestAtMostOnceProcessesNothingUntilTheCommitSucceeds(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Guarantee = AtMostOnce })
	atMostOnce(h)
	h.offsets.err = errors.New("REBALANCE_IN_PROGRESS")
	h.start(0, 1)
	tk := h.feed(0, 0, "k", "a", "b")
	eventually(t, "the commit tried twice", func() bool {
		h.offsets.mu.Lock()
		defer h.offsets.mu.Unlock()
		return h.offsets.tries >= 2
	})
	if n := processed(tk); n != 0 {
		t.Fatalf("%d records processed while their offsets could not be committed", n)
	}
	h.offsets.mu.Lock()
	h.offsets.err = nil
	h.offsets.mu.Unlock()
	h.waitProcessed(tk, 2)
	if got := h.offsets.committed(0); got != 2 {
		t.Fatalf("committed %d, want 2", got)
	}

	// Task 1 is revoked while its commit is refused: it stops with its
	// batch unprocessed and uncommitted (the next owner reads it).
	h.offsets.mu.Lock()
	h.offsets.err = errors.New("REBALANCE_IN_PROGRESS")
	tries := h.offsets.tries
	h.offsets.mu.Unlock()
	t1 := h.feed(1, 0, "k", "x")
	eventually(t, "task 1's commit tried", func() bool {
		h.offsets.mu.Lock()
		defer h.offsets.mu.Unlock()
		return h.offsets.tries > tries
	})
	h.m.lose([]int32{1})
	if n := processed(t1); n != 0 {
		t.Errorf("task 1 processed %d records without their commit", n)
	}
	if got := h.offsets.committed(1); got != -1 {
		t.Errorf("task 1 committed %d", got)
	}
}
