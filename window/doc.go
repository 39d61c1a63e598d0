// Package window is the pure core of time in Rackstream: window
// definitions, window arithmetic, stream time, lateness and final results,
// the windowed aggregations' store operations, store key encodings,
// retention segments and durable timers, all as deterministic functions of
// explicit state, with Kafka Streams' semantics.
package window
