package chaos

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
)

// waitStore waits until every key of the processor's store reads n (the
// last sequence number under at-least-once, the count under exactly-once)
// and returns the keys that never did, with what they read (waitCounts).
func (r *run) waitStore(n int) map[string]string {
	return r.waitCounts(r.wantEach(n))
}

// wantEach returns n for every key of the writer's.
func (r *run) wantEach(n int) map[string]int {
	want := make(map[string]int, len(r.keys))
	for _, k := range r.keys {
		want[k] = n
	}
	return want
}

// waitCounts waits until every key of want reads its value in the
// processor's store and returns the keys that never did, with what they
// read. Under exactly-once it stops early when a count passed its value
// (a record counted twice: waiting cannot mend it) or when the short keys
// have read the same for a minute with every instance ready (an update
// lost: nothing more will come), so that the evidence is gathered while
// the group still runs.
func (r *run) waitCounts(want map[string]int) map[string]string {
	t := r.t
	t.Helper()
	start, changed := time.Now(), time.Now()
	var last map[string]string
	for {
		lags := r.storeLags(want)
		if len(lags) == 0 {
			t.Logf("every key of %s at its value: took %v", r.store, time.Since(start).Round(time.Millisecond))
			return nil
		}
		if fmt.Sprint(lags) != fmt.Sprint(last) {
			last, changed = lags, time.Now()
		}
		switch {
		case r.eos && overshot(lags, want):
			t.Errorf("exactly-once: keys of %s counted past their records: %v (want %v)", r.store, lags, want)
			return lags
		case r.eos && time.Since(changed) > time.Minute && r.allReady():
			t.Errorf("exactly-once: keys of %s stuck below their counts for a minute with every instance ready: %v (want %v)", r.store, lags, want)
			return lags
		case time.Since(start) > deadline:
			t.Errorf("store %s: keys not at their values after %v: %v (want %v)", r.store, deadline, lags, want)
			return lags
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// storeLags is Group.StoreLags with a value per key: the keys whose value
// in the store is not want's, with what they read.
func (r *run) storeLags(want map[string]int) map[string]string {
	byValue := map[int][]string{}
	for k, n := range want {
		byValue[n] = append(byValue[n], k)
	}
	lags := map[string]string{}
	for n, keys := range byValue {
		slices.Sort(keys)
		maps.Copy(lags, r.g.StoreLags(r.store, keys, n, len(keys)))
	}
	return lags
}

// readCommitted reads the output topic, read committed, until complete
// says its records are (outputs are flushed at commit points) or a minute
// has passed, and returns the last read.
func (r *run) readCommitted(complete func([]cluster.Record) bool) []cluster.Record {
	start := time.Now()
	for {
		out := cluster.ReadTopic(r.t, []string{broker.Addr}, r.output, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		if complete(out) || time.Since(start) > time.Minute {
			return out
		}
		time.Sleep(time.Second)
	}
}

// activeBound is the longest a key may go unread from an active: the
// session timeout + 5 s, the bound. Under exactly-once the
// predecessor's open transaction (an instance killed, frozen or cut
// mid-transaction) pins the changelog's last stable offset until it ends,
// and the new active's restore must wait for that to read committed state
// (docs/design.md §7). A predecessor that comes back under its process id fences
// and aborts it at once; one that does not (killed for good, or restarted
// with its state directory, and so its process id, gone) leaves it to the
// transaction coordinator, which aborts a transaction past its timeout
// when its periodic check next runs: up to the transaction timeout plus
// the check's interval after the transaction began. There the bound is the
// longer of the session timeout and that + 5 s (25 s; 15.6 s was seen in
// the disk scenario, whose restarted instance has a new process id).
func (r *run) activeBound() time.Duration {
	if r.eos {
		return max(r.p.session, processor.TransactionTimeout+brokerTxnAbortInterval) + 5*time.Second
	}
	return r.p.session + 5*time.Second
}

// brokerTxnAbortInterval is the suite broker's
// transaction.abort.timed.out.transaction.cleanup.interval.ms: Kafka's
// default, which kafka.sh keeps (a broker that lowers it shortens
// exactly-once failovers by as much).
const brokerTxnAbortInterval = 10 * time.Second

// overshot reports whether a value read is a number above the key's in
// want.
func overshot(read map[string]string, want map[string]int) bool {
	for k, v := range read {
		if c, err := strconv.Atoi(v); err == nil && c > want[k] {
			return true
		}
	}
	return false
}

func (r *run) allReady() bool {
	for _, in := range r.ins {
		if !in.Ready() {
			return false
		}
	}
	return true
}

// evidence logs what a failed exact check needs for a diagnosis, per
// affected key (at most 5): its partition (task), what the store reads,
// its last output records with their offsets, its input records' count
// and last offsets, and which instance holds the task now; then every
// instance's log lines about aborted transactions, fencing, lost
// partitions and client rebuilds.
func (r *run) evidence(short map[string]string, seqs cluster.Sequences, out []cluster.Record, want map[string]int) {
	t := r.t
	t.Helper()
	keys := map[string]bool{}
	for k := range short {
		keys[k] = true
	}
	for _, m := range seqs.Missing {
		keys[m[:strings.LastIndex(m, "@")]] = true
	}
	if r.eos && seqs.Duplicated+seqs.OutOfOrder != 0 {
		for _, k := range slices.Sorted(maps.Keys(want)) { // the keys whose output is not 1..n in order
			prev := 0
			for _, rec := range out {
				if rec.Key == k {
					v, _ := strconv.Atoi(rec.Value)
					if v != prev+1 {
						keys[k] = true
					}
					prev = v
				}
			}
		}
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) > 5 {
		names = names[:5]
	}
	in := cluster.ReadTopic(t, r.kafka, r.input)
	md, _, mdErr := r.g.Metadata()
	tasks := map[int32]bool{} // the affected keys' tasks
	for _, k := range names {
		task := partition.Murmur2().Partition([]byte(k), int32(r.p.partitions))
		var outs, ins, breaks []string
		inCount, prev, prevAt := 0, 0, int64(-1)
		for _, rec := range out {
			if rec.Key == k {
				outs = append(outs, fmt.Sprintf("%s@%d", rec.Value, rec.Offset))
				v, _ := strconv.Atoi(rec.Value)
				if v != prev+1 {
					breaks = append(breaks, fmt.Sprintf("%d@%d then %d@%d", prev, prevAt, v, rec.Offset))
				}
				prev, prevAt = v, rec.Offset
			}
		}
		for _, rec := range in {
			if r.countedKey(rec) == k {
				inCount++
				ins = append(ins, fmt.Sprintf("%s@%d", rec.Value, rec.Offset))
			}
		}
		active := "?"
		if mdErr == nil && int(task) < len(md.Tasks) {
			active = md.Tasks[task].Active
			for _, in := range r.ins {
				if in.ID() == active {
					active += " (" + in.Name + ")"
				}
			}
		}
		read := short[k]
		if read == "" {
			read = strconv.Itoa(want[k])
		}
		t.Logf("evidence: key %s partition %d: store reads %s of %d; %d input records (last: %s); %d output records (value@offset, last: %s; breaks in 1..n: %v); active now %s",
			k, task, read, want[k], inCount, lastOf(ins, 5), len(outs), lastOf(outs, 8), breaks, active)
		tasks[task] = true
	}
	// Each instance's lines about the affected tasks (assignments holding
	// them actively, their activation and restore) and about aborts,
	// fencing and rebuilds.
	words := []string{"transaction aborted", "aborted transaction", "partitions lost", "rebuilding", "fenc", "UNKNOWN_MEMBER", "panic"}
	for task := range tasks {
		words = append(words, fmt.Sprintf(`"task":%d,`, task), fmt.Sprintf(`"task":%d}`, task))
	}
	for _, in := range r.ins {
		var lines []string
		for _, l := range strings.Split(in.Logs(), "\n") {
			if activeIn(l, tasks) {
				lines = append(lines, l[:min(len(l), 400)])
				continue
			}
			for _, w := range words {
				if strings.Contains(l, w) {
					lines = append(lines, l[:min(len(l), 400)])
					break
				}
			}
		}
		if len(lines) > 0 {
			t.Logf("evidence: %s (%s) logged:\n%s", in.Name, in.ID(), strings.Join(lastOf(lines, 30), "\n"))
		}
	}
}

// countedKey returns the key an input record counts for: its own, or the
// value of the field the count groups by.
func (r *run) countedKey(rec cluster.Record) string {
	if r.field == "" {
		return rec.Key
	}
	counts, _ := cluster.FieldCounts([]cluster.Record{rec}, r.field)
	for k := range counts {
		return k
	}
	return ""
}

// activeIn reports whether log line l is an assignment whose actives
// include one of tasks.
func activeIn(l string, tasks map[int32]bool) bool {
	i := strings.Index(l, `"active":[`)
	if i < 0 || !strings.Contains(l, `"msg":"assignment"`) {
		return false
	}
	list := l[i+len(`"active":[`):]
	list = list[:max(0, strings.Index(list, "]"))]
	for _, f := range strings.Split(list, ",") {
		if n, err := strconv.Atoi(f); err == nil && tasks[int32(n)] {
			return true
		}
	}
	return false
}

// lastOf returns the last n of s.
func lastOf(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// kill sends kill -9 to ins at once, under exactly-once while the first
// one's transaction is open (midTransaction).
func (r *run) kill(ins ...*cluster.Instance) {
	r.t.Helper()
	r.midTransaction(ins[0])
	for _, in := range ins {
		in.Kill()
	}
}

// midTransaction waits, under exactly-once, until in's transaction is open
// on the broker (it commits every 200 ms, so that is most of the time), so
// that the fault that follows provably lands mid-transaction: the broker
// must abort it once in's successor fences it, and no record of it may be
// counted or reach a read-committed reader. At-least-once: no wait.
func (r *run) midTransaction(in *cluster.Instance) {
	r.t.Helper()
	if !r.eos {
		return
	}
	adm := kafkatest.At(r.t, r.kafka...).Admin()
	var state string
	kafkatest.Poll(r.t, deadline, 5*time.Millisecond, in.Name+"'s transaction open", func() bool {
		state = cluster.TransactionState(adm, r.app, in.ID())
		return state == "Ongoing"
	})
	r.t.Logf("%s's transaction is %s: the fault lands mid-transaction", in.Name, state)
}
