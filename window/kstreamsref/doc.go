// Package kstreamsref runs Kafka Streams' windowed aggregations as the
// reference Rackstream's windows are compared with, record for record.
//
// The reference is a small Java program (this directory is also its Maven
// project; build.sh builds it and prints the jar's path) that runs each
// [Scenario] through Kafka Streams 4.4.0 in kafka-streams-test-utils'
// TopologyTestDriver, without a broker: groupByKey, windowedBy the
// scenario's tumbling, hopping, sliding or session windows with grace, then
// count or a sum of the values, emitting on every update or only final
// results (EmitStrategy.onWindowClose). Each partition runs in its own
// driver, as each partition is its own task: its own stream time and
// stores. One JVM answers a stream of scenarios, JSON lines in and [Result]
// lines out; see [Start] and [Reference.Run].
//
// Rackstream answers the same scenarios twice, in the same [Result] shape:
// [RunCore] with its pure core, package window, driven as a task drives
// it; [RunProcessor] through the runtime's path, a
// processor.NewWindowedAggregation as an input's handler in processor's
// TestDriver, with its stores, staged writes, windowed output and late
// count. TestWindowCoreEqualsKafkaStreams and TestRuntimeEqualsKafkaStreams
// compare each with Kafka on every generated scenario, on part of them
// again with Kafka's default retention, and on the hand-computed cases:
// output record for record in both emit modes, the final store, and
// dropped-records-total per partition. The runtime's output is compared
// without timestamps: it stamps a result with its input record's time,
// which RunProcessor checks. TestRuntimeOnKafkaEqualsKafkaStreams runs one
// session scenario through a processor.Runtime on a Kafka cluster (the
// real broker in make test's second pass) in both emit modes, and compares
// the output topics read back, the committed stores and the late-window
// metric with Kafka's answer.
//
// The output depends on the input alone. The record cache is off, so every
// update is emitted. The emit-final throttle
// (__emit.interval.ms.kstreams.windowed.aggregation__, 1000 ms of wall
// clock by default) is 0 and the driver's wall clock never moves. Kafka
// emits final results only when a record arrives, so [GenerateScenarios]
// ends each partition's input with a record that closes every window.
//
// Retention is part of Kafka's semantics, not only of its storage: a window
// past retention is invisible to processing too. With Kafka's default
// retention, a record far ahead of stream time expires windows before
// their final result is emitted, and a late record cannot merge into a
// session past retention. The generated scenarios set a retention that
// keeps every window to the end; TestReferenceIsKafkaStreams pins both
// behaviours on small inputs, with the other surprises a matching
// implementation must reproduce or document.
//
// A [GroupByScenario] is a groupBy count instead: Kafka Streams'
// groupBy(...).count() through its repartition topic, which
// TestGroupByCountEqualsKafkaStreams compares with Rackstream's GroupBy and
// NewRepartition on the TestDriver ([Reference.RunGroupBy]).
//
// Java 17 and Maven are needed; without them the tests skip, except under
// CI (CI set to any non-empty value), where they fail.
package kstreamsref
