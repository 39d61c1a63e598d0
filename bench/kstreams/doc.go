// Package kstreams runs Rackstream and Kafka Streams 4.4.0 side by side on
// the same stateful job, on the same real Apache Kafka broker, in one run.
//
// The job is a per-key count: every input record increments its key's count
// in a local store with a changelog and the new count goes to an output
// topic. On the Kafka Streams side it is groupByKey().count() materialised in
// RocksDB (the Java program in this directory, built by build.sh with Maven
// and cached by source hash, see [Build]); on Rackstream's it is the same
// topology written with the processor package (LevelDB). Both use
// processing.guarantee=at_least_once, the same commit.interval.ms,
// statestore.cache.max.bytes and num.standby.replicas. With
// RACKSTREAM_KSTREAMS_WINDOW_MS the job is a windowed count instead, per key
// and tumbling window (groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(...))
// .count() against processor.NewWindowedAggregation), over input whose
// timestamps rise evenly over RACKSTREAM_KSTREAMS_SPAN_MS.
//
// The benchmark pre-produces one input topic (12 partitions, murmur2 keys),
// then, round after round and alternating which goes first, runs each side on
// a fresh application id until its group's committed offsets reach the
// input's end, and then times a restore: a new instance on an empty state
// directory rebuilding the store from the changelog until it is running. It
// reports medians and the ratios between the two; docs/lab/kstreams.md records
// a run and reads it.
//
//	deploy/local/kafka.sh status   # the real broker must be running
//	RACKSTREAM_TEST_BROKERS=127.0.0.1:19092 go test -run '^$' -bench . -benchtime 1x -timeout 60m ./bench/kstreams/
//
// Without RACKSTREAM_TEST_BROKERS, java or mvn the benchmark skips with one
// line. It is not part of make test. The environment variables that size the
// run are listed in bench_test.go (RACKSTREAM_KSTREAMS_*).
package kstreams
