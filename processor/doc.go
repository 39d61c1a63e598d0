// Package processor owns the topology API and its runtime: tasks by
// partition slot, commits at the processed watermark, dead letters and the
// HTTP query server.
package processor
