package config

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Kafka's keys. A properties file written for a Kafka Streams application
// loads as it is: the keys Rackstream implements have their Java names (in
// the key table), and every other key of Kafka 4.4's StreamsConfig,
// ProducerConfig, ConsumerConfig and AdminClientConfig, with Kafka Streams'
// client prefixes (producer., consumer., main.consumer., restore.consumer.,
// global.consumer., admin.) and topic. for its internal topics, is accepted
// and ignored, with one warning that lists them. Only a key that is nobody's
// is an error.
//
// kafka_keys.txt is generated from the Kafka jars by kafkakeys/gen.sh
// (TestKafkaKeysAreKafkas regenerates it and compares).

//go:embed kafka_keys.txt
var kafkaKeysText string

// kafkaKey is one key of kafka_keys.txt.
type kafkaKey struct {
	owners []string // streams, producer, consumer, admin, topic
	secret bool     // ConfigDef type PASSWORD
}

// kafkaKeys parses kafka_keys.txt once.
var kafkaKeys = sync.OnceValue(func() map[string]kafkaKey {
	m := make(map[string]kafkaKey)
	for i, line := range strings.Split(kafkaKeysText, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			panic(fmt.Sprintf("config: kafka_keys.txt:%d: want name, owners and type separated by tabs", i+1))
		}
		m[f[0]] = kafkaKey{owners: strings.Split(f[1], ","), secret: f[2] == "PASSWORD"}
	}
	return m
})

// kafkaPrefixes are Kafka Streams' prefixes that pass a key to one kind of
// client (or to its internal topics), with the owner the rest must have.
var kafkaPrefixes = []struct{ prefix, owner string }{
	{"main.consumer.", "consumer"},
	{"restore.consumer.", "consumer"},
	{"global.consumer.", "consumer"},
	{"consumer.", "consumer"},
	{"producer.", "producer"},
	{"admin.", "admin"},
	{"topic.", "topic"},
}

// kafkaLookup reports whether key is one of Kafka's keys as a Kafka Streams
// application may set it, and whether Kafka treats its value as a password.
// A bare key must be a Streams or client key (a topic-level key needs the
// topic. prefix); a prefixed one must belong to its prefix's owner.
func kafkaLookup(key string) (known, secret bool) {
	ks := kafkaKeys()
	if k, ok := ks[key]; ok && slices.ContainsFunc(k.owners, func(o string) bool { return o != "topic" }) {
		return true, k.secret
	}
	for _, p := range kafkaPrefixes {
		rest, ok := strings.CutPrefix(key, p.prefix)
		if !ok {
			continue
		}
		if k, ok := ks[rest]; ok && slices.Contains(k.owners, p.owner) {
			return true, k.secret
		}
	}
	return false, false
}

// ignoredWarning is the one warning that lists the Kafka keys a load
// ignored, each with where it was set, or "" for none.
func ignoredWarning(ignored []setting) string {
	if len(ignored) == 0 {
		return ""
	}
	parts := make([]string, len(ignored))
	for i, s := range ignored {
		parts[i] = s.key + " (" + s.src.String() + ")"
	}
	noun := "settings mean"
	if len(ignored) == 1 {
		noun = "setting means"
	}
	return fmt.Sprintf("%d Kafka %s nothing to Rackstream and %s ignored: %s", len(ignored), noun, map[bool]string{true: "is", false: "are"}[len(ignored) == 1], strings.Join(parts, ", "))
}
