package state

import (
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// TestRestoreReadCommittedWaitsForTheOpenTransaction is a zombie's lost
// update, at the state layer. An exactly-once instance may freeze after
// its TxnOffsetCommit passed KIP-447's generation check, and before its
// EndTxn. It leaves a transaction open on the changelog, which will commit
// when it thaws. The input offsets it commits are what the new owner's
// offset fetch (RequireStable) waits for and then returns. A restore that
// stopped at the last stable offset, before that transaction, would hand
// the new owner a store without its updates, while its input resumes
// after them. So a read_committed restore catches up to the high
// watermark seen when it starts. It ends only once every transaction open
// then has ended: committed and applied, or aborted and skipped.
func TestRestoreReadCommittedWaitsForTheOpenTransaction(t *testing.T) {
	e := newEnv(t, 1, "s")
	m := e.open(t.TempDir(), func(o *Options) { o.ReadCommitted = true })
	p := e.producer(kgo.TransactionalID(e.c.Name("zombie")), kgo.TransactionTimeout(time.Minute))
	task := e.activeTask(m, 0, p)
	s := task.Store("s")
	want := map[string]string{}
	for round, commit := range []bool{true, true} {
		must(t, p.BeginTransaction())
		for i := range 10 {
			k, v := "k"+strconv.Itoa(i), "r"+strconv.Itoa(round)
			must(t, s.Put([]byte(k), []byte(v)))
			want[k] = v
		}
		must(t, p.Flush(e.ctx()))
		if round == 0 {
			must(t, p.EndTransaction(e.ctx(), kgo.TransactionEndTry(commit)))
			must(t, task.Commit())
		}
	}
	// The second transaction is open: the "zombie" is frozen before its
	// EndTxn. The new owner restores meanwhile.
	fresh := e.open(t.TempDir(), func(o *Options) { o.ReadCommitted = true })
	ft, err := fresh.OpenTask(0, e.stores)
	must(t, err)
	restored := make(chan error, 1)
	go func() { restored <- ft.Restore(e.ctx()) }()
	fs := ft.Store("s")
	var early error
	returned := false
	kafkatest.Poll(t, time.Minute, 5*time.Millisecond, "the restore to list the changelog's end offsets", func() bool {
		select {
		case early = <-restored:
			returned = true
		default:
		}
		return returned || fs.Lag() >= 0
	})
	if fs.Lag() < 0 {
		t.Fatalf("the restore never listed the changelog's end offsets (returned %v: %v)", returned, early)
	}
	// The zombie thaws and commits.
	must(t, p.EndTransaction(e.ctx(), kgo.TryCommit))
	must(t, task.Commit())
	if !returned {
		early = <-restored
	}
	must(t, early)
	if got := viewContent(t, fs.View()); !maps.Equal(got, want) {
		t.Fatalf("restore started while a transaction was open, which then committed: store = %v, want its updates %v", got, want)
	}
	ends, err := e.c.Admin().ListEndOffsets(e.ctx(), fs.Changelog())
	must(t, err)
	end, _ := ends.Lookup(fs.Changelog(), 0)
	if ck := fs.Checkpoint(); ck < end.Offset-1 {
		t.Fatalf("checkpoint after the restore = %d, want past the committed transaction's records (end offset %d)", ck, end.Offset)
	}
}
