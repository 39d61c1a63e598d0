package processor

import "time"

// rebuildBackoff decides the wait before the next rebuild of a failed Kafka
// client, and the backoff after it, from the current backoff cur, the
// first and max of Options.rebuildBackoff/maxRebuildBackoff, how long the
// failed session ran and whether it received an assignment.
//
// Consecutive failures double the wait up to max, so that a broker that is
// down is not hammered. A session that received an assignment, or ran for
// twice max, was healthy: its failure is a new episode and waits only
// first. Why the assignment matters: two broker outages a minute apart used
// to leave an instance that had rejoined and worked in between waiting out
// a doubled backoff (16-30 s, seen under exactly-once, whose sessions end on
// a broker outage) after the second, although the broker was back.
func rebuildBackoff(cur, first, max, ranFor time.Duration, assigned bool) (wait, next time.Duration) {
	wait = cur
	if assigned || ranFor > 2*max {
		wait = first
	}
	return wait, min(2*wait, max)
}
