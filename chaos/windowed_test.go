package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
)

// The windows of scenario 8: short, so that many close during a run, with
// a grace period that out-of-order records use. The retention is longer
// than the minimum (size + grace) so that the records that close the last
// windows at the end, one window and a grace ahead, hide none of them.
const (
	winSize      = 3 * time.Second
	winGrace     = time.Second
	winRetention = time.Minute
)

var tumbling = cluster.Tumbling{Size: winSize.Milliseconds(), Grace: winGrace.Milliseconds()}

// windowKeys turn the count into a count per tumbling window with final
// results only.
var windowKeys = map[string]string{
	"processor.window.type":         "tumbling",
	"processor.window.size.ms":      strconv.FormatInt(winSize.Milliseconds(), 10),
	"processor.window.grace.ms":     strconv.FormatInt(winGrace.Milliseconds(), 10),
	"processor.window.retention.ms": strconv.FormatInt(winRetention.Milliseconds(), 10),
	"processor.window.emit":         "final",
}

// stamp returns the writer's timestamps for keys keys: the wall clock, so
// that windows open and close as the scenario runs, but for some records
// of some keys half a grace period earlier (out of order, still counted,
// often in the window before) and a window and a grace earlier (late:
// dropped, no result may count them).
func stamp(keys int) func(i int) time.Time {
	return func(i int) time.Time {
		now := time.Now()
		k, seq := i%keys, i/keys+1
		switch {
		case k%4 == 0 && seq%7 == 0:
			return now.Add(-winSize - winGrace - time.Second)
		case k%4 == 1 && seq%3 == 0:
			return now.Add(-winGrace / 2)
		}
		return now
	}
}

// TestWindowedFinalsExactlyOnce is scenario 8: the built-in count per
// tumbling window with final results only, under exactly_once_v2, the
// writer's records stamped so that windows open and close throughout
// (some out of order within grace, some late). An instance is killed
// (kill -9) the moment its first final result of a closing window
// reaches the output uncommitted, while it emits that window's results
// and the next windows are open. The long form first kills an instance
// between two closes, and then a zone during final results too. At the
// end every partition gets a record one window and a grace past the
// last, closing every window. The output, read committed, must hold the
// final result of every (key, window) that closed exactly once, none
// missing, each counting the key's records in the window that were not
// late, and nothing for a window no record reached in time or still
// open. It takes 30 to 60 s in the short form (make test) and 60 to 150 s
// in the long one, as loaded as the machine is.
func TestWindowedFinalsExactlyOnce(t *testing.T) {
	needMode(t, false)
	r := beginWith(t, "windowed", setup{eos: true, windowed: true})

	victims := [][]*cluster.Instance{{r.ins[5]}}
	if mode == "long" {
		victim := r.ins[1]
		waitWindowPhase(winGrace + winSize/2)
		r.kill(victim)
		r.backAfterKill(victim)
		r.settle()
		victims = append(victims, r.zone("zone-a"))
	}
	var caught []cluster.Record
	for _, v := range victims {
		caught = append(caught, r.killDuringFinals(v...))
		r.backAfterKill(v...)
		r.settle()
	}
	r.endWindowed(caught)
}

// waitWindowPhase waits until the wall clock, which the writer's
// timestamps follow, is phase into a window.
func waitWindowPhase(phase time.Duration) {
	into := time.Duration(time.Now().UnixMilli()%winSize.Milliseconds()) * time.Millisecond
	time.Sleep((phase - into + winSize) % winSize)
}

// killDuringFinals kills victims at once (kill -9) as soon as one of them
// has written a final result of the next window to close to the output,
// read uncommitted: while its transaction holding that window's results
// is open, most likely with more of them to come. It returns that result;
// the end checks whether the kill aborted it.
func (r *run) killDuringFinals(victims ...*cluster.Instance) cluster.Record {
	t := r.t
	t.Helper()
	ids := map[string]bool{}
	for _, in := range victims {
		ids[in.ID()] = true
	}
	// A task's results go to the output partition of its number: both
	// topics have p.partitions partitions, and the count keeps the input
	// key, partitioned with murmur2 as the writer's.
	held := map[int32]kgo.Offset{}
	kafkatest.Poll(t, deadline, 200*time.Millisecond, "the victims' active tasks", func() bool {
		md, _, err := r.g.Metadata()
		if err != nil {
			return false
		}
		clear(held)
		for task, tk := range md.Tasks {
			if ids[tk.Active] {
				held[int32(task)] = kgo.NewOffset().AtEnd()
			}
		}
		return len(held) > 0
	})
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(broker.Addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{r.output: held}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
		kgo.FetchMaxWait(50*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("uncommitted reader of %s: %v", r.output, err)
	}
	defer cl.Close()
	// The first window to close a second from now or later (its end plus
	// grace): the reader is at the partitions' ends by then.
	size, grace := winSize.Milliseconds(), winGrace.Milliseconds()
	end := (time.Now().UnixMilli() + 1000 - grace + size - 1) / size * size
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no final result of a window ending at %d or later from %v's tasks %v within %v", end, ids, held, deadline)
		}
		var hit *kgo.Record
		fs.EachRecord(func(rec *kgo.Record) {
			var v struct {
				End int64 `json:"end"`
			}
			if hit == nil && json.Unmarshal(rec.Value, &v) == nil && v.End >= end {
				hit = rec
			}
		})
		if hit == nil {
			continue
		}
		for _, in := range victims {
			in.Kill()
		}
		t.Logf("killed %v as the final result %s of %s reached partition %d at offset %d uncommitted",
			names(victims), hit.Value, hit.Key, hit.Partition, hit.Offset)
		return cluster.Record{Key: string(hit.Key), Value: string(hit.Value), Partition: hit.Partition, Offset: hit.Offset, Timestamp: hit.Timestamp}
	}
}

func names(ins []*cluster.Instance) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.Name
	}
	return out
}

// endWindowed ends scenario 8: it stops the load, closes every window with
// a record per partition one window and a grace past the wall clock, and
// checks the final results against the input as the writer stamped it
// (cluster.Tumbling.Check); caught are the results the kills during final
// results caught uncommitted, which should be aborted.
func (r *run) endWindowed(caught []cluster.Record) {
	t := r.t
	t.Helper()
	n := r.stopLoad()
	closer := time.Now().Add(winSize + winGrace)
	var closers []*kgo.Record
	for _, key := range closingKeys(r.p.partitions) {
		closers = append(closers, &kgo.Record{Topic: r.input, Key: []byte(key), Value: []byte("close"), Timestamp: closer})
	}
	kafkatest.At(t, broker.Addr).Produce(closers...)
	in := cluster.ReadTopic(t, []string{broker.Addr}, r.input)
	due := tumbling.Expect(in)
	var (
		out []cluster.Record
		f   cluster.Finals
	)
	start := time.Now()
	for {
		out = cluster.ReadTopic(t, []string{broker.Addr}, r.output, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		f = tumbling.Check(due, out)
		if f.Missing == 0 || time.Since(start) > time.Minute {
			break
		}
		time.Sleep(time.Second)
	}
	act, lag := r.active.Stop(), r.lagged.Stop()
	t.Logf("%d input records (%d late), %d final results due, %d output records, read committed", len(in), due.Late, f.Due, len(out))
	if !f.OK() {
		t.Errorf("exactly-once: the final results in %s (read committed) are not each window's once: %d missing, %d duplicated, %d with a wrong count, %d before their window closed, %d for a window no record reached in time, %d no result; e.g. %v",
			r.output, f.Missing, f.Duplicated, f.WrongCount, f.Early, f.PastGrace, f.Garbage, f.Faults)
	}
	committed := map[[2]int64]bool{}
	for _, rec := range out {
		committed[[2]int64{int64(rec.Partition), rec.Offset}] = true
	}
	aborted := 0
	for _, c := range caught {
		if !committed[[2]int64{int64(c.Partition), c.Offset}] {
			aborted++
		}
	}
	t.Logf("%d of the %d kills during final results aborted the final result they caught uncommitted (the others came after its commit)", aborted, len(caught))
	r.finish(r.activeBound(), act, lag, fmt.Sprintf("produced=%d finals=%d missing=%d duplicated=%d wrong=%d early=%d past_grace=%d late=%d aborted_finals=%d/%d",
		n*len(r.keys), f.Due, f.Missing, f.Duplicated, f.WrongCount, f.Early, f.PastGrace, due.Late, aborted, len(caught)))
}

// closingKeys returns a key for each of n partitions that murmur2 puts
// there, none of them a key of the writer's.
func closingKeys(n int) []string {
	keys := make([]string, n)
	for found, i := 0, 0; found < n; i++ {
		key := "close-" + strconv.Itoa(i)
		p := partition.Murmur2().Partition([]byte(key), int32(n))
		if keys[p] == "" {
			keys[p] = key
			found++
		}
	}
	return keys
}
