package chaos

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

// Scenario 9 counts per value of a JSON field of the input's values, so
// that every record crosses from the task of its input key to the task
// of its new key through the repartition topic.
const groupField = "country"

// countries are the values of groupField: eight, so that the records of
// every input partition go to several count tasks.
var countries = []string{"at", "be", "ch", "de", "es", "fr", "it", "nl"}

// purgeInterval is repartition.purge.interval.ms: short, so that many
// purges run, and every kill lands between two.
const purgeInterval = 2 * time.Second

// purgeLook is how often the purge watch looks at the repartition topic.
const purgeLook = 250 * time.Millisecond

// groupKeys make the count a count per value of groupField.
var groupKeys = map[string]string{
	"processor.group.by.field":      groupField,
	"repartition.purge.interval.ms": strconv.FormatInt(purgeInterval.Milliseconds(), 10),
}

// groupedValue returns the writer's values for keys keys: record i (key
// i%keys, sequence number i/keys+1) is {"seq":N,"country":C}, C turning
// with the key and the sequence number, so that every key's records go to
// every country.
func groupedValue(keys int) func(i int) []byte {
	return func(i int) []byte {
		k, seq := i%keys, i/keys+1
		return fmt.Appendf(nil, `{"seq":%d,%q:%q}`, seq, groupField, countries[(k+seq)%len(countries)])
	}
}

// purgeBound is how long after the group's committed offsets stop moving
// the repartition topic's log start may take to reach them on every
// partition: the purge falls due at most one interval after the last,
// runs after the next commit, and its DeleteRecords takes one round trip
// (5 s allowed, with the watch's period, as the other bounds allow).
func purgeBound() time.Duration {
	return purgeInterval + eosCommit + 5*time.Second
}

// TestRepartitionedCountExactlyOnce is scenario 9: the built-in count
// grouped by a JSON field of the value (processor.group.by.field), under
// exactly_once_v2, with a purge of the repartition topic every 2 s. An
// instance is killed (kill -9) while its transaction is open, and in the
// long form a zone after it. Every country's final count must equal its
// number of input records, the output, read committed, must hold its
// counts 1..n once each and in order, no purge may delete a record above
// the group's committed offset, and once the load stops the log start of
// every repartition partition must reach the committed offset within
// purgeBound.
func TestRepartitionedCountExactlyOnce(t *testing.T) {
	needMode(t, false)
	r := beginWith(t, "repartition", setup{eos: true, grouped: true})
	topic := processor.RepartitionTopic(r.app, r.store)
	watch := cluster.WatchPurge(t, []string{broker.Addr}, topic, r.app, purgeLook)

	victim := r.ins[2]
	r.kill(victim)
	r.backAfterKill(victim)
	if mode == "long" {
		r.settle()
		zone := r.zone("zone-a")
		r.kill(zone...)
		r.backAfterKill(zone...)
	}
	r.settle()
	r.endGrouped(topic, watch)
}

// endGrouped ends scenario 9: it stops the load, checks the counts and
// the output against the input as written, waits for the last purge and
// checks the repartition topic's offsets throughout.
func (r *run) endGrouped(topic string, watch *cluster.PurgeWatch) {
	t := r.t
	t.Helper()
	n := r.stopLoad()
	in := cluster.ReadTopic(t, []string{broker.Addr}, r.input)
	want, without := cluster.FieldCounts(in, groupField)
	if without != 0 || len(in) != n*len(r.keys) {
		t.Errorf("the input holds %d records, %d without %s; want %d, each with it", len(in), without, groupField, n*len(r.keys))
	}
	short := r.waitCounts(want)
	// The counts are read committed: the transaction that made them
	// committed the repartition topic's last offsets too.
	settled := time.Now()
	act, lag := r.active.Stop(), r.lagged.Stop()

	var seqs cluster.Sequences
	recs := r.readCommitted(func(out []cluster.Record) bool {
		seqs = cluster.CheckCounts(out, want)
		return seqs.Lost == 0
	})
	if seqs.Lost != 0 || seqs.Garbage != 0 || seqs.Duplicated != 0 || seqs.OutOfOrder != 0 {
		t.Errorf("exactly-once: %s (read committed) is not each country's counts 1..n once, in order: %d lost (e.g. %v), %d duplicated, %d out of order, %d no count of a country",
			r.output, seqs.Lost, seqs.Missing, seqs.Duplicated, seqs.OutOfOrder, seqs.Garbage)
	}
	if len(short) > 0 || seqs.Lost+seqs.Duplicated+seqs.OutOfOrder != 0 {
		r.evidence(short, seqs, recs, want)
	}

	// The last purge: every partition's log start at its committed offset.
	var last cluster.PurgeReport
	kafkatest.Poll(t, deadline, purgeLook, "the repartition topic purged up to the committed offsets", func() bool {
		s, err := watch.Look()
		if err != nil {
			return false
		}
		last = cluster.CheckPurge([]cluster.PurgeSample{s})
		return len(last.Behind) == 0
	})
	purgedIn := time.Since(settled)
	watch.Stop()
	samples, _ := watch.Samples()
	rep := cluster.CheckPurge(samples)
	for _, o := range append(rep.Overpurged, last.Overpurged...) {
		t.Errorf("%s: a purge deleted records the group had not handled: %s", topic, o)
	}
	if purgedIn > purgeBound() {
		t.Errorf("%s: the log start reached the committed offsets %v after the counts were final, longer than %v (one purge interval, a commit and 5 s)",
			topic, purgedIn.Round(time.Millisecond), purgeBound())
	}
	t.Logf("%s: %d looks; end offsets %d and log start offsets %d summed over the partitions; at most %d handled records kept on a partition, longest %v before a committed offset was purged",
		topic, rep.Samples, last.Written, last.Purged, rep.MaxBehind, rep.MaxLag.Round(time.Millisecond))
	r.finish(r.activeBound(), act, lag, fmt.Sprintf("produced=%d lost=%d duplicated=%d repartition_end=%d repartition_start=%d purge_lag_max=%.1fs purged_in=%.1fs",
		len(in), seqs.Lost, seqs.Duplicated, last.Written, last.Purged, rep.MaxLag.Seconds(), purgedIn.Seconds()))
}
