package processor

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns a record at offset stamped t0+sec seconds.
func at(offset int64, sec int) *kgo.Record {
	return &kgo.Record{Offset: offset, Timestamp: t0.Add(time.Duration(sec) * time.Second)}
}

func sec(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

// align returns alignment state with one table holding recs, fetched up
// to next with high watermark hwm.
func align(idle time.Duration, next, hwm int64, recs ...*kgo.Record) *tableAlign {
	return &tableAlign{idle: idle, limit: 100, tables: []*tableQueue{{spec: &storeSpec{name: "t"}, recs: recs, next: next, hwm: hwm}}}
}

func TestAlignAppliesTableRecordsUpToTheInputsTimestamp(t *testing.T) {
	a := align(0, 3, 3, at(0, 1), at(1, 2), at(2, 5))
	if step, i := a.decide(sec(2), sec(100), false); step != stepApply || i != 0 {
		t.Fatalf("decide at 2s = %v %d, want apply table 0", step, i)
	}
	run := a.headRun(0, sec(2))
	if len(run) != 2 || run[1].Offset != 1 {
		t.Fatalf("head run at 2s: %d records, want offsets 0 and 1", len(run))
	}
	a.applied(0, len(run))
	// The table's next record (5s) is later than the input (2s): process.
	if step, _ := a.decide(sec(2), sec(100), false); step != stepProcess {
		t.Errorf("decide with the table ahead = %v, want process", step)
	}
	// A record stamped exactly as the table record comes after it.
	if step, _ := a.decide(sec(5), sec(100), false); step != stepApply {
		t.Errorf("decide at the table record's own time = %v, want apply", step)
	}
}

func TestAlignWaitsForTableRecordsKnownToBeOnTheBroker(t *testing.T) {
	// Nothing waiting, fetched up to 3 of 10: wait, whatever the idle time.
	a := align(0, 3, 10)
	if step, _ := a.decide(sec(1), sec(100), false); step != stepWait || !a.until.IsZero() {
		t.Errorf("decide with the table lagging = %v (until %v), want wait without deadline", step, a.until)
	}
	// Unless the task's queue is full: its fetches are paused.
	if step, _ := a.decide(sec(1), sec(100), true); step != stepProcess {
		t.Errorf("decide with the queue full = %v, want process (enforced)", step)
	}
	// Unknown end: caught up (fetches of nothing report no end).
	if step, _ := align(0, 3, -1).decide(sec(1), sec(100), false); step != stepProcess {
		t.Errorf("decide with the table's end unknown = %v, want process", step)
	}
	// Records below the restored checkpoint do not count.
	b := align(0, 3, 10)
	b.tables[0].restored = 10
	if step, _ := b.decide(sec(1), sec(100), false); step != stepProcess {
		t.Errorf("decide with only already-restored records unfetched = %v, want process", step)
	}
}

func TestAlignIdlesForACaughtUpTableThenProcesses(t *testing.T) {
	// Caught up and max.task.idle.ms=0: process at once.
	if step, _ := align(0, 5, 5).decide(sec(1), sec(100), false); step != stepProcess {
		t.Errorf("idle 0 = %v, want process", step)
	}
	a := align(2*time.Second, 5, 5)
	if step, _ := a.decide(sec(1), sec(100), false); step != stepWait || !a.until.Equal(sec(102)) {
		t.Fatalf("idle 2s at 100s = %v until %v, want wait until 102s", step, a.until)
	}
	if step, _ := a.decide(sec(1), sec(101), false); step != stepWait || !a.until.Equal(sec(102)) {
		t.Errorf("at 101s = %v until %v, want still waiting until 102s", step, a.until)
	}
	if step, _ := a.decide(sec(1), sec(102), false); step != stepProcess {
		t.Errorf("at 102s = %v, want process", step)
	}
	// The deadline passed: the next records do not wait again while the
	// table stays quiet (Kafka Streams' deadline per partition)...
	if step, _ := a.decide(sec(2), sec(103), false); step != stepProcess {
		t.Errorf("next record at 103s = %v, want process at once", step)
	}
	// ...until table records arrive: then a new wait starts when it is
	// caught up and empty again.
	a.tables[0].add(kgo.FetchTopicPartition{FetchPartition: kgo.FetchPartition{HighWatermark: 6, Records: []*kgo.Record{at(5, 3)}}})
	if step, i := a.decide(sec(3), sec(104), false); step != stepApply || i != 0 {
		t.Fatalf("with a table record at 3s = %v, want apply", step)
	}
	a.applied(0, 1)
	if step, _ := a.decide(sec(4), sec(104), false); step != stepWait || !a.until.Equal(sec(106)) {
		t.Errorf("caught up again at 104s = %v until %v, want wait until 106s", step, a.until)
	}
}

func TestAlignOffAppliesEverythingFetchedFirst(t *testing.T) {
	a := align(-1, 3, 10, at(0, 50))
	if step, _ := a.decide(sec(1), sec(100), false); step != stepApply || len(a.headRun(0, sec(1))) != 1 {
		t.Errorf("alignment off with a later table record = %v, want it applied", step)
	}
	a.applied(0, 1)
	if step, _ := a.decide(sec(1), sec(100), false); step != stepProcess {
		t.Errorf("alignment off with the table lagging = %v, want process (no waiting)", step)
	}
}

func TestAlignAppliesTheOldestWhenTooManyWait(t *testing.T) {
	a := align(0, 3, 3, at(0, 50), at(1, 51), at(2, 52))
	a.limit = 2
	if step, _ := a.decide(sec(1), sec(100), false); step != stepApply || len(a.headRun(0, sec(1))) != 3 {
		t.Errorf("over the limit = %v, want everything waiting applied", step)
	}
}

func TestAlignTableRecordsAheadOfIdleInputs(t *testing.T) {
	// Nothing delivered from the inputs yet: caught up, apply at once (idle 0).
	a := align(0, 1, 1, at(0, 50))
	if step := a.decideAhead(sec(100)); step != stepApply {
		t.Errorf("idle 0, inputs quiet = %v, want apply", step)
	}
	// An input known to lag: wait for its records.
	a.inputTaken(kgo.FetchTopicPartition{Topic: "in", FetchPartition: kgo.FetchPartition{HighWatermark: 10, Records: []*kgo.Record{at(4, 1)}}})
	if step := a.decideAhead(sec(100)); step != stepWait {
		t.Errorf("input lagging = %v, want wait", step)
	}
	// Caught up, idle 3s: wait until 103s, then apply.
	a.inputTaken(kgo.FetchTopicPartition{Topic: "in", FetchPartition: kgo.FetchPartition{HighWatermark: 10, Records: []*kgo.Record{at(9, 2)}}})
	a.idle = 3 * time.Second
	if step := a.decideAhead(sec(100)); step != stepWait || !a.until.Equal(sec(103)) {
		t.Errorf("idle 3s = %v until %v, want wait until 103s", step, a.until)
	}
	if step := a.decideAhead(sec(103)); step != stepApply {
		t.Errorf("after the idle time = %v, want apply", step)
	}
	// Still quiet: later table records are applied without a new wait.
	if step := a.decideAhead(sec(104)); step != stepApply {
		t.Errorf("inputs still quiet after the deadline = %v, want apply at once", step)
	}
	// Alignment off: apply at once.
	a.idle, a.inputLag["in"] = -1, 5
	if step := a.decideAhead(sec(100)); step != stepApply {
		t.Errorf("alignment off = %v, want apply", step)
	}
}
