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
// first. So an instance that rejoined and worked between two broker
// outages never waits out a doubled backoff after the second.
func rebuildBackoff(cur, first, max, ranFor time.Duration, assigned bool) (wait, next time.Duration) {
	wait = cur
	if assigned || ranFor > 2*max {
		wait = first
	}
	return wait, min(2*wait, max)
}
