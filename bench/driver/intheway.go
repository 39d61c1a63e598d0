package main

import "fmt"

// What the profiles show stands between a figure and its target (issue
// 17: a missed target says by how much and what is in the way). Each names
// the document where the profile and its measurements are; the figures
// themselves are the run's, in the targets table.
const (
	// inTheWayCount is the count's CPU per record: against the fair pipe,
	// goka and Kafka Streams.
	inTheWayCount = "docs/lab/profile-count.md (\"Where the time goes\", \"Changes\"): beyond the fetch and the produces, " +
		"which the fair pipe pays too, the count's CPU per record is its store (a write-buffer lookup and insert per " +
		"record, the commit's LevelDB batch) and the record path (decoding, the handler's staging, the task's lock); " +
		"where the machine's CPU is short, records/s follow CPU per record."
	// inTheWayGokaRate adds that goka's rounds are the noisiest figures.
	inTheWayGokaRate = inTheWayCount + " goka's own records/s moves the most between rounds (bench/README.md, \"goka\")."
	// inTheWayRestore is the restore against goleveldb's batch load.
	inTheWayRestore = "docs/lab/profile-count.md (\"Restore\"): the restore's CPU per record is about the goleveldb " +
		"ceiling's own (the sorted memtable inserts and level-0 flushes, since 4f33684), and it fetches the next batch " +
		"while it writes one (since 7b32852); but the ceiling alone keeps about 1.7 of the two cores busy, and the " +
		"restore adds the fetch, the decode and, on the real broker, the broker serving it on the same cores."
	// inTheWayKill is a kill -9's failover.
	inTheWayKill = "docs/lab/profile-count.md (\"Failover\"): the session timeout passes before the group notices the " +
		"owner is gone; the rest is the rebalance (one cooperative round or two, and where the survivors' heartbeats " +
		"are in their interval) and the moved task's first record and commit. Across runs it moves by more than a second."
	// inTheWaySIGTERM is a clean shutdown's handover.
	inTheWaySIGTERM = "docs/lab/profile-count.md (\"Failover\"): the stopped owner's shutdown commit under the load, then " +
		"the survivors' rebalance and the moved task's first commit."
	// inTheWayFreshness is the freshness tail at a short commit interval.
	inTheWayFreshness = "docs/lab/freshness.md (last sections): under the same load the p99 is 15-20 ms at the default 30 s; " +
		"what 1 s adds is the commit's work every second in each instance (the record cache written through, its changelog " +
		"and output records, the standbys applying them, the stores' LevelDB batches) on the two cores the broker and the " +
		"driver share: without the record cache the instances fall behind. Execution traces of the instances (-trace-dir, " +
		"bench/tracegaps) show each instance's tasks all waiting for records two thirds of the time, and the long waits at " +
		"the same moments in every instance, while the broker does not answer (on Kafka 4.4 its stop-the-world collections " +
		"among them). The half load is half a sustained maximum the driver's producer may be what limits (the cluster section " +
		"says when): a lighter cluster leaves the driver more CPU and raises it. The driver's log lists the slowest probes, " +
		"with when each was sent, its acknowledgement and its partition."
	// inTheWayWindowed is the windowed count's CPU per record.
	inTheWayWindowed = "bench/README.md (\"Windows and timers\"): each record reads its key's windows through its task's " +
		"uncommitted writes, and that read walks all of them (state's writeBuffer.appendRange on the unsorted reader path, a " +
		"string conversion per key compared): 74% of the windowed count's CPU in a 50k-record profile, a cost per record " +
		"that grows with the writes since the last commit. Its changelog also takes up to three records per update (the " +
		"window, its time-index entry, the aggregation's stream time when it moves) and two deletes per expired window, " +
		"where Kafka Streams writes one per update."
	// inTheWayLookups is the query path against a bare handler.
	inTheWayLookups = "docs/lab/query.md: the lookup's routing, the store read and " +
		"(forwarded) the second HTTP hop, on cores shared with the load."
	// inTheWayEOS is exactly-once's transactions.
	inTheWayEOS = "the transaction's commit markers and the gate that holds every task for the commit (processor/txn.go)."
	// inTheWayRSS is the count's memory against goka's.
	inTheWayRSS = "docs/lab/profile-count.md (\"The memory budget's default\"): state.memory.bytes sizes the " +
		"memtables, block caches and the record cache."
)

// gokaRateAgainstPipe says how 8x goka's records/s compares with the plain
// franz-go pipe's, which fetches and produces one record per input and
// does nothing else: the ceiling of a count with one write per input
// (the count without output, the one compared with goka), on the same
// broker and cores. Where 8x goka is above it, no count can reach the
// target on this machine in this run; "" when either is missing.
func gokaRateAgainstPipe(goka, pipe1 float64) string {
	if !(goka > 0) || !(pipe1 > 0) {
		return ""
	}
	want := 8 * goka
	if want <= pipe1 {
		return fmt.Sprintf(" 8x goka's records/s is %s records/s here, %.2f of the pipe writing 1 record per input (%s records/s).",
			thousands(want), want/pipe1, thousands(pipe1))
	}
	return fmt.Sprintf(" 8x goka's records/s is %s records/s here, %.2fx the pipe writing 1 record per input (%s records/s, "+
		"the ceiling of a count with one write per input on this broker and these cores): above what any count could reach in this run.",
		thousands(want), want/pipe1, thousands(pipe1))
}
