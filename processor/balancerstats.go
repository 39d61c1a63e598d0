package processor

import "github.com/rackstream/rackstream/assignor/balancer"

// BalancerStats returns the group balancer's counters over the whole life
// of the runtime: the sessions that ended (each rebuilt Kafka client has a
// balancer of its own) plus the live one. Counters only grow;
// LastGenerationBytes is the latest session's. service exports
// them as Prometheus metrics at scrape time.
func (r *Runtime) BalancerStats() balancer.Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.balEnded
	if r.sess != nil && r.sess.bal != nil {
		st = addBalancerStats(st, r.sess.bal.Stats())
	}
	return st
}

// addBalancerStats is a + b for the counters; the gauge
// LastGenerationBytes is b's when b has one.
func addBalancerStats(a, b balancer.Stats) balancer.Stats {
	a.RejectedMembers += b.RejectedMembers
	a.RejectedAssignments += b.RejectedAssignments
	a.PlacementsPublished += b.PlacementsPublished
	a.ProbingRebalances += b.ProbingRebalances
	a.EndOffsetFailures += b.EndOffsetFailures
	a.CheckpointsBeyondEnd += b.CheckpointsBeyondEnd
	a.InvalidEndpoints += b.InvalidEndpoints
	if b.RackAwarenessOff != nil {
		a.RackAwarenessOff = b.RackAwarenessOff
	}
	if b.LastGenerationBytes != 0 {
		a.LastGenerationBytes = b.LastGenerationBytes
	}
	return a
}
