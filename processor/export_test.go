package processor

import "time"

// What the external tests (package processor_test) share with the
// internal ones.

// SeriesTasks is seriesTasks, for the runtime tests.
var SeriesTasks = seriesTasks

// The knobs of Options without a configuration key, for the external
// tests; zero keeps a knob's default, as in Options.

func SetHeartbeatInterval(o *Options, d time.Duration) { o.heartbeatInterval = d }
func SetRetry(o *Options, r Retry)                     { o.retry = r }
func SetRebuildBackoff(o *Options, first, max time.Duration) {
	o.rebuildBackoff, o.maxRebuildBackoff = first, max
}
func SetTopologyCheckInterval(o *Options, d time.Duration) { o.topologyCheckInterval = d }
func SetQueues(o *Options, taskQueue, maxPollRecords int) {
	o.taskQueue, o.maxPollRecords = taskQueue, maxPollRecords
}
