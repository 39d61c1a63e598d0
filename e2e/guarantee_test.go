package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
)

// The delivery guarantees with real `rackstream run` processes killed by
// SIGKILL (and frozen with SIGSTOP), on kfake or the real broker: the
// built-in count processor with an output topic and the record cache off,
// so that every input record makes exactly one state update and one
// output record (the running count), as Kafka's own EOS system test
// checks.
//
// The short form runs in `make test`. The long form (100k records over 1k
// keys, 5 instances, 6 kills) runs with
//
//	go test ./e2e -run TestExactlyOnceSurvivesKills -timeout 30m -args -eos.long
var eosLong = flag.Bool("eos.long", false, "run the exactly-once kill test's long form (100k records over 1k keys, 5 instances, 6 SIGKILLs)")

// guaranteeGroup starts n `rackstream run` instances counting input into
// output under guarantee.
func guaranteeGroup(t *testing.T, c *kafkatest.Cluster, n int, guarantee, input, output string) (*cluster.Group, []*cluster.Instance) {
	t.Helper()
	g := cluster.NewGroup(t, binary, t.TempDir(), map[string]string{
		"application.id":             c.Name("e2e-" + strings.ReplaceAll(guarantee, "_", "-")),
		"bootstrap.servers":          strings.Join(c.Brokers, ","),
		"processor.type":             "count",
		"processor.input.topic":      input,
		"processor.output.topic":     output,
		"processing.guarantee":       guarantee,
		"statestore.cache.max.bytes": "0",
		"session.timeout.ms":         "3000",
		"shutdown.timeout.ms":        "15000",
		"replication.factor":         "1",
		"num.stream.threads":         "1",
		"log.format":                 "json",
	})
	base := cluster.FreePorts(t, n)
	var ins []*cluster.Instance
	for i := range n {
		ins = append(ins, g.Add(fmt.Sprintf("i%d", i), "127.0.0.1:"+strconv.Itoa(base+i), nil))
	}
	for _, in := range ins {
		in.Start()
	}
	for _, in := range ins {
		in.WaitStarted(2 * time.Minute)
	}
	for _, in := range ins {
		in.WaitReady(3 * time.Minute)
	}
	return g, ins
}

// countsOf reads output (read_committed): the count processor's running
// counts, decimal, for cluster.CheckSequences (a key's counts must be
// 1..n in order).
func countsOf(t *testing.T, c *kafkatest.Cluster, output string) []cluster.Record {
	t.Helper()
	var out []cluster.Record
	for _, r := range c.ConsumeAll(output, kgo.FetchIsolationLevel(kgo.ReadCommitted())) {
		out = append(out, cluster.Record{Key: string(r.Key), Value: string(r.Value)})
	}
	return out
}

// openTransaction reports whether the transaction of process id pid's
// producer is open on the broker (kadm DescribeTransactions).
func openTransaction(adm *kadm.Client, app, pid string) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id := processor.TransactionalID(app, pid)
	d, err := adm.DescribeTransactions(ctx, id)
	if err != nil {
		return false, err.Error()
	}
	tx, ok := d[id]
	if !ok || tx.Err != nil {
		return false, fmt.Sprint(tx.Err)
	}
	return tx.State == "Ongoing", tx.State
}

// withOffsets reports whether the transaction of process id pid's
// producer is open and holds input offsets already (AddOffsetsToTxn
// added the group's offsets partition): its TxnOffsetCommit is sent or
// about to be, and its EndTxn is not.
func withOffsets(adm *kadm.Client, app, pid string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id := processor.TransactionalID(app, pid)
	d, err := adm.DescribeTransactions(ctx, id)
	if err != nil {
		return false
	}
	tx, ok := d[id]
	if !ok || tx.Err != nil || tx.State != "Ongoing" {
		return false
	}
	_, ok = tx.Topics["__consumer_offsets"]
	return ok
}

// killMidTransaction SIGKILLs in while its transaction is open.
func killMidTransaction(t *testing.T, adm *kadm.Client, app string, in *cluster.Instance) {
	t.Helper()
	var state string
	kafkatest.Poll(t, time.Minute, 5*time.Millisecond, in.Name+" in an open transaction", func() bool {
		var open bool
		open, state = openTransaction(adm, app, in.ID())
		if open {
			in.Kill()
		}
		return open
	})
	t.Logf("killed %s (%s) with its transaction %s", in.Name, in.ID(), state)
}

// TestExactlyOnceSurvivesKillsWithNoDuplicateAndNoGap: 3 instances count
// 20k records over 200 keys under exactly_once_v2 while two of them, one
// after the other, are SIGKILLed with a transaction open and restarted.
// Every key's final count is exactly the number of its records, and the
// output, read committed, holds per key the counts 1..n in order: no
// duplicate, no gap. The restarted instances restore only what their
// changelogs hold after their checkpoints: no store is wiped.
func TestExactlyOnceSurvivesKillsWithNoDuplicateAndNoGap(t *testing.T) {
	instances, keys, records, kills := 3, 200, 20_000, 2
	if *eosLong {
		instances, keys, records, kills = 5, 1000, 100_000, 6
	}
	c := kafkatest.New(t)
	input, output := c.Name("e2e-eos-in"), c.Name("e2e-eos-out")
	c.CreateTopic(input, 6, nil)
	c.CreateTopic(output, 6, nil)
	g, ins := guaranteeGroup(t, c, instances, "exactly_once_v2", input, output)
	app := readConfig(t, g, "application.id")
	adm := c.Admin()
	keyNames := cluster.Keys(keys)
	prod := cluster.StartProducer(t, c.Brokers, input, keyNames, 1500)
	for k := range kills {
		victim := ins[k%len(ins)]
		at := int64(records) * int64(k+1) / int64(kills+1)
		kafkatest.Poll(t, 5*time.Minute, 50*time.Millisecond, fmt.Sprintf("%d records produced", at), func() bool { return prod.Acked() >= at })
		killMidTransaction(t, adm, app, victim)
		victim.StartReady(3 * time.Minute)
	}
	kafkatest.Poll(t, 5*time.Minute, 50*time.Millisecond, "every record produced", func() bool { return prod.Acked() >= int64(records) })
	n, err := prod.Stop(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	g.WaitStore("count", keyNames, n, 5*time.Minute)
	seqs := cluster.CheckSequences(countsOf(t, c, output), keyNames, n)
	t.Logf("%d keys x %d records: output lost %d, duplicated %d, out of order %d, garbage %d",
		keys, n, seqs.Lost, seqs.Duplicated, seqs.OutOfOrder, seqs.Garbage)
	if seqs.Lost+seqs.Duplicated+seqs.OutOfOrder+seqs.Garbage != 0 {
		t.Errorf("the output is not exactly the counts 1..%d per key: missing %v", n, seqs.Missing)
	}
	for _, in := range ins {
		if !in.Running() {
			t.Errorf("%s exited (code %d) without being killed:\n%s", in.Name, in.Proc().Code(), cluster.Tail(in.Proc().Err.String(), 20))
		}
		if l := cluster.JSONLogLines(in.Logs(), "state: DAMAGED STORE moved aside; rebuilding it from the changelog from the start"); len(l) > 0 {
			t.Errorf("%s rebuilt a store: %v", in.Name, l)
		}
	}
}

// TestExactlyOnceRestartRestoresOnlyAfterItsCheckpoint: one instance
// counts 3000 records, is SIGKILLed mid-stream with a transaction open,
// and restarts: its restore (the restore counter,
// rackstream_state_restored_records_total) covers at most what its
// changelog holds after its checkpoints, far less than the changelog, and
// the counts are exact.
func TestExactlyOnceRestartRestoresOnlyAfterItsCheckpoint(t *testing.T) {
	c := kafkatest.New(t)
	input, output := c.Name("e2e-eos-restore-in"), c.Name("e2e-eos-restore-out")
	c.CreateTopic(input, 2, nil)
	c.CreateTopic(output, 2, nil)
	g, ins := guaranteeGroup(t, c, 1, "exactly_once_v2", input, output)
	in := ins[0]
	app := readConfig(t, g, "application.id")
	keyNames := cluster.Keys(30)
	prod := cluster.StartProducer(t, c.Brokers, input, keyNames, 1000)
	kafkatest.Poll(t, 5*time.Minute, 50*time.Millisecond, "3000 records produced", func() bool { return prod.Acked() >= 3000 })
	kafkatest.Poll(t, 3*time.Minute, 200*time.Millisecond, "key-0 counted 90 times", func() bool { return countsAt(t, g, keyNames[:1])["key-0"] >= 90 })
	// Checkpoints only grow: those read now are at most those at the kill.
	var st cluster.Status
	if code, err := cluster.GetJSON(in.URL()+"/v1/status", &st); err != nil || code != 200 {
		t.Fatalf("status before the kill: %d %v", code, err)
	}
	checkpoints := map[int32]int64{}
	for _, r := range st.Replicas {
		checkpoints[r.Task] = r.Position
	}
	killMidTransaction(t, c.Admin(), app, in)
	n, err := prod.Stop(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing writes the changelog until the restart has restored: what
	// it may restore is at most what lies after the checkpoints.
	var total, after int64
	for p, end := range c.EndOffsets(app + "-count-changelog") {
		total += end
		after += end - checkpoints[p]
	}
	in.StartReady(3 * time.Minute)
	fams, err := cluster.Scrape(in.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var restored float64
	for _, m := range fams["rackstream_state_restored_records_total"].GetMetric() {
		restored += m.GetCounter().GetValue()
	}
	t.Logf("the changelog held %d offsets at the kill, %d after the checkpoints %v; the restart restored %v records (rackstream_state_restored_records_total)",
		total, after, checkpoints, restored)
	if restored > float64(after) || after >= total/2 {
		t.Errorf("the restart restored %v records, more than the %d changelog offsets after its checkpoints %v (of %d): the store was rebuilt, not resumed from its checkpoint", restored, after, checkpoints, total)
	}
	g.WaitStore("count", keyNames, n, 3*time.Minute)
	if seqs := cluster.CheckSequences(countsOf(t, c, output), keyNames, n); seqs.Lost+seqs.Duplicated+seqs.OutOfOrder+seqs.Garbage != 0 {
		t.Errorf("output lost %d, duplicated %d, out of order %d, garbage %d", seqs.Lost, seqs.Duplicated, seqs.OutOfOrder, seqs.Garbage)
	}
}

// TestExactlyOnceZombieIsFenced: an instance frozen (SIGSTOP) past its
// session timeout with a transaction open loses its tasks to the other;
// thawed (SIGCONT), it must neither double nor lose an update. It is
// frozen once its transaction holds the group's offsets partition
// (AddOffsetsToTxn done; on kfake, which does not describe that, once one
// is open): the freeze then lands on either side of its TxnOffsetCommit.
// Before it, the thawed instance's TxnOffsetCommit carries a generation
// the group has left and is refused (KIP-447), or
// its heartbeat learns its partitions are lost: it aborts. After it, the
// offsets passed the generation check while it was a member, and the
// transaction commits when it thaws (its epoch is still valid): the new
// owner's offset fetch (RequireStable) and its changelog restore must
// both wait for that transaction. A restore that stopped at the last
// stable offset lost its updates (issue 14: 5 keys one count short).
func TestExactlyOnceZombieIsFenced(t *testing.T) {
	c := kafkatest.New(t)
	input, output := c.Name("e2e-eos-zombie-in"), c.Name("e2e-eos-zombie-out")
	c.CreateTopic(input, 4, nil)
	c.CreateTopic(output, 4, nil)
	g, ins := guaranteeGroup(t, c, 2, "exactly_once_v2", input, output)
	app := readConfig(t, g, "application.id")
	zombie, other := ins[0], ins[1]
	adm := c.Admin()
	keyNames := cluster.Keys(40)
	prod := cluster.StartProducer(t, c.Brokers, input, keyNames, 500)
	kafkatest.Poll(t, 5*time.Minute, 50*time.Millisecond, "1000 records produced", func() bool { return prod.Acked() >= 1000 })
	// kfake's DescribeTransactions does not list the offsets partition:
	// there, any open transaction.
	holding, what := withOffsets, "holding its offsets"
	if !c.Real() {
		holding, what = func(adm *kadm.Client, app, pid string) bool {
			open, _ := openTransaction(adm, app, pid)
			return open
		}, "open (kfake)"
	}
	kafkatest.Poll(t, time.Minute, 2*time.Millisecond, zombie.Name+" in a transaction "+what, func() bool {
		if holding(adm, app, zombie.ID()) {
			zombie.Freeze()
			return true
		}
		return false
	})
	frozenAt := len(zombie.Proc().Err.String())
	// The group moves on without it: the other instance owns every task.
	kafkatest.Poll(t, 2*time.Minute, 200*time.Millisecond, "the group without the frozen instance", func() bool {
		var md cluster.Metadata
		code, err := cluster.GetJSON(other.URL()+"/v1/metadata", &md)
		if code != 200 || err != nil {
			return false
		}
		ep, _ := md.Client(zombie.ID())
		return ep == "" && md.WholeProblem(4, 1) == ""
	})
	more := prod.Acked() + 1000
	kafkatest.Poll(t, 2*time.Minute, 200*time.Millisecond, "1000 more records for the other instance", func() bool {
		return prod.Acked() >= more
	})
	zombie.Thaw()
	// Its transaction ends: aborted after its TxnOffsetCommit is refused
	// (the generation check) or its partitions are lost, or committed if
	// its TxnOffsetCommit passed before the freeze; either way its
	// client then learns it left the group, and rejoins.
	var seen []string
	kafkatest.Poll(t, 2*time.Minute, 200*time.Millisecond, "the thawed instance to learn it left the group", func() bool {
		seen = nil
		after := zombie.Proc().Err.String()[frozenAt:]
		for _, msg := range []string{"transaction aborted; its tasks restart from their last commit", "partitions lost; tasks dropped without commit", "kafka client failed; rebuilding it"} {
			for _, l := range cluster.JSONLogLines(after, msg) {
				seen = append(seen, fmt.Sprintf("%s: %v", msg, l["cause"])+fmt.Sprint(l["err"]))
			}
		}
		return len(seen) > 0
	})
	t.Logf("the thawed instance: %v", seen)
	n, err := prod.Stop(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	g.WaitStore("count", keyNames, n, 3*time.Minute)
	seqs := cluster.CheckSequences(countsOf(t, c, output), keyNames, n)
	if seqs.Lost+seqs.Duplicated+seqs.OutOfOrder+seqs.Garbage != 0 {
		t.Errorf("output lost %d, duplicated %d, out of order %d, garbage %d: missing %v", seqs.Lost, seqs.Duplicated, seqs.OutOfOrder, seqs.Garbage, seqs.Missing)
	}
}

// TestAtMostOnceNeverCountsARecordTwice: under at_most_once, SIGKILLs
// mid-stream may lose records but never repeat one: no key's count
// exceeds the number of its records, and no count repeats in the output.
func TestAtMostOnceNeverCountsARecordTwice(t *testing.T) {
	c := kafkatest.New(t)
	input, output := c.Name("e2e-amo-in"), c.Name("e2e-amo-out")
	c.CreateTopic(input, 4, nil)
	c.CreateTopic(output, 4, nil)
	g, ins := guaranteeGroup(t, c, 2, "at_most_once", input, output)
	keyNames := cluster.Keys(40)
	prod := cluster.StartProducer(t, c.Brokers, input, keyNames, 1000)
	for k, at := range []int64{1500, 3000} {
		kafkatest.Poll(t, 5*time.Minute, 50*time.Millisecond, "records produced", func() bool { return prod.Acked() >= at })
		ins[k].Kill()
		ins[k].StartReady(3 * time.Minute)
	}
	n, err := prod.Stop(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// A fence record on every partition, after the last round: once each
	// is counted, every record before it was processed (or skipped).
	fences := fenceKeys(4)
	cl := c.Client(kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())))
	for _, k := range fences {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: input, Key: []byte(k), Value: []byte("1")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	g.WaitStore("count", fences, 1, 3*time.Minute)
	over := 0
	for k, v := range countsAt(t, g, keyNames) {
		if v > n {
			over++
			t.Errorf("key %s counted %d of its %d records", k, v, n)
		}
	}
	seqs := cluster.CheckSequences(countsOf(t, c, output), keyNames, n)
	t.Logf("at-most-once after 2 kills: %d keys over, output duplicated %d, lost %d (records skipped: allowed)", over, seqs.Duplicated, seqs.Lost)
	if seqs.Duplicated != 0 {
		t.Errorf("a count was emitted twice: %d duplicates", seqs.Duplicated)
	}
}

// countsAt reads every key's count over HTTP from the running instances.
func countsAt(t *testing.T, g *cluster.Group, keys []string) map[string]int {
	t.Helper()
	out := map[string]int{}
	up := g.Up()
	for i, k := range keys {
		var ans cluster.KeyAnswer
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			code, err := cluster.GetJSON(up[i%len(up)].URL()+"/v1/stores/count/keys/"+k, &ans)
			if err == nil && (code == 200 || code == 404) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("reading %s: %d %v", k, code, err)
			}
		}
		v, _ := strconv.Atoi(string(ans.Value))
		out[k] = v
	}
	return out
}

// fenceKeys returns one key per partition of n, murmur2 as the
// instances route them.
func fenceKeys(n int32) []string {
	keys := make([]string, n)
	for i, found := 0, int32(0); found < n; i++ {
		k := "fence-" + strconv.Itoa(i)
		if p := partition.Murmur2().Partition([]byte(k), n); keys[p] == "" {
			keys[p] = k
			found++
		}
	}
	return keys
}

// mustRead returns the content of file.
func mustRead(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readConfig returns key's value from g's base configuration.
func readConfig(t *testing.T, g *cluster.Group, key string) string {
	t.Helper()
	for _, l := range strings.Split(mustRead(t, g.Config), "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return v
		}
	}
	t.Fatalf("%s not in %s", key, g.Config)
	return ""
}
