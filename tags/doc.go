// Package tags owns client tags and the rack-awareness keys of KIP-708:
// parsing `client.tag.<key>=<value>` and `rack.aware.assignment.tags`,
// validating them against Kafka Streams' limits, and encoding a tag set
// deterministically for the wire.
//
// A client (one Rackstream instance) describes where it runs with up to five
// tags, for example zone=eu-central-1a and cluster=k8s-cluster1. The ordered
// list of keys in rack.aware.assignment.tags says which of those dimensions
// standby placement spreads over, highest priority first. A [Set] is an
// immutable, validated tag set kept sorted by key; [Keys] is the ordered key
// list.
//
// # Limits
//
// The limits are Kafka Streams' (StreamsConfig, KIP-708): at most [MaxTags]
// client tags, a key of at most [MaxKeyLen] characters, a value of at most
// [MaxValueLen] characters, and at most [MaxKeys] entries in
// rack.aware.assignment.tags, each a configured client tag key. Lengths are
// counted in characters (Unicode code points, runes), not bytes; Java counts
// UTF-16 code units, so a key made of characters outside the Basic
// Multilingual Plane (emoji) that Java rejects may pass here. [Check] returns
// Kafka's messages, in the order Kafka checks them.
//
// Rackstream is stricter than Kafka in three places, because each of them is
// a misconfiguration in practice: a tag key or value may not be empty (an
// unset shell variable in `client.tag.zone=$ZONE` would otherwise make every
// such client look like one zone), keys and values must be valid UTF-8, and
// rack.aware.assignment.tags may not name a key twice.
//
// # Encoding
//
// [Set.AppendBinary] and [Decode] define the tag set's wire form, which
// travels in group join metadata written by other processes: the decoder
// treats its input as hostile and rejects anything that is not the canonical
// encoding of a valid set. See [Set.AppendBinary] for the layout.
//
// It imports no other package of this module.
package tags
