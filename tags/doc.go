// Package tags owns client tags and the rack-awareness keys of KIP-708:
// parsing `client.tag.<key>=<value>` and `rack.aware.assignment.tags`,
// validating them against Kafka Streams' limits, and encoding a tag set
// deterministically for the wire.
//
// It imports no other package of this module.
package tags
