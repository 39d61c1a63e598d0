// Package kafkaref checks Rackstream's standby placement against Kafka
// Streams' own, on the same scenarios.
//
// The reference is a small Java program (this directory is also its Maven
// project; build.sh builds it and prints the jar's path) that feeds each
// scenario to Kafka Streams 4.4.0's public KIP-924 utility
// TaskAssignmentUtils.defaultStandbyTaskAssignment, unmodified, through an
// ApplicationState built from the scenario: one KafkaStreamsState per client
// with its client tags and capacity, one stateful task 0_i per partition slot,
// and the actives given by each task's previous_active. One JVM answers a
// stream of scenarios, JSON lines in (the assignor's input shape) and JSON
// lines out (its plan shape); see [Start] and [Reference.Run].
//
// The differential test runs the committed, seeded scenario list
// (testdata/scenarios.jsonl, the output of [GenerateScenarios]) through both
// and requires, for every task, a spread at least as good as Kafka's
// (lexicographically, in the order of rack.aware.assignment.tags) and no more
// missing standbys. With -update it writes the side-by-side figures to
// bench/kafkaref.md; with -scale it also times the 1,000-client,
// 10,000-task scenario through both (see TestScaleAgainstKafka).
//
// The rack-aware differential (TestRackAwareNeverCostsMoreThanKafkas) runs
// a second list, testdata/rack_scenarios.jsonl from [GenerateRackScenarios]:
// fresh groups with partition racks. Rackstream plans each with
// min_traffic; the reference gets today's actives (the plan under strategy
// none) and applies TaskAssignmentUtils.optimizeRackAwareActiveTasks, then
// places standbys and applies optimizeRackAwareStandbyTasks. Both plans are
// scored by Kafka's own cost function ([KafkaCost]). Where Kafka's plan keeps
// our spread on every task, our actives never cost more, and where it also
// keeps every client's standby count, our whole plan never costs more.
//
// Java 17 and Maven are needed; without them the test skips, except under
// CI (CI set to any non-empty value), where it fails.
package kafkaref
