// Package config owns the service configuration: read from a Java
// properties file, overridden by the environment and by flags, validated as
// a whole with errors that name the key, the source and the line.
//
// # One table
//
// Every key is defined once, in this package's key table: its name (Kafka
// Streams' where Kafka has one), default, type and allowed range, meaning,
// and whether it is secret. Parsing, validation, the printed effective
// configuration ([Config.WriteEffective], `rackstream validate`) and the
// configuration reference in docs/configuration.md ([Reference]; a test
// fails when the page drifts) are all derived from it. The client.tag.<key> family is the
// one key outside the table; the tags package owns its rules.
//
// # Sources
//
// [Load] applies, in order, the defaults, a properties file (read as
// java.util.Properties reads one: [ParseProperties]), the environment, and
// --set key=value flags; a later source wins, and each value remembers where
// it came from ([Config.Source]). The environment is a parameter
// ([Sources].Env), never read from the process here, so that tests are
// hermetic. A key's variable is RACKSTREAM_ followed by the key upper-cased
// with dots and dashes as underscores ([EnvName]); RACKSTREAM_CLIENT_TAG_<KEY>
// sets client.tag.<key> with <KEY> lower-cased ([KeyForEnv]). Other
// RACKSTREAM_ variables belong to scripts and tests and are ignored, but a
// near miss of a real one is reported by [Config.Warnings].
//
// The file is read with a bound ([MaxFileSize], 1 MiB) and, through
// [LoadContext], interruptibly: a command passes the context that SIGINT and
// SIGTERM cancel, so a read from a silent FIFO does not hang it.
//
// # Kafka Streams files
//
// A properties file written for a Kafka Streams application loads as it is.
// The keys Rackstream implements have Kafka's names; every other key of
// Kafka 4.4's StreamsConfig, ProducerConfig, ConsumerConfig and
// AdminClientConfig, bare or with Kafka Streams' client prefixes (producer.,
// consumer., main.consumer., restore.consumer., global.consumer., admin.),
// and every TopicConfig key with topic., is accepted and ignored, and one
// warning lists them with where each was set. The list, kafka_keys.txt, is
// generated from the Kafka jars by kafkakeys/gen.sh (a test regenerates and
// compares it when Java is installed). Kafka's Java security settings
// (sasl.jaas.config, parsed by [ParseJAAS]; ssl.truststore.* and
// ssl.keystore.*; ssl.endpoint.identification.algorithm) are keys of the
// table; config/kclient reads the stores they name.
//
// # Errors
//
// Load reports every problem at once, as [Errors]: an unknown key with the
// nearest known key, a bad value with what is allowed (in Kafka's words:
// "Invalid value -1 for configuration num.standby.replicas: Value must be at
// least 0"), missing required keys, Kafka Streams' client tag limits, and
// inconsistent combinations (SASL without credentials, a certificate
// without its key). Each error carries the file and line, variable or flag.
//
// # Secrets
//
// The key table marks the secret keys (sasl.password, http.auth.token, ...;
// [IsSecret], which also masks unknown keys whose names look secret). Their
// values are never shown: secret fields have the type [Secret], which prints
// and logs as "[hidden]"; Config's String, GoString and LogValue mask them;
// and no error or warning quotes them, whatever their source: a bad value is
// shown as [hidden], a bad escape in the file is located by line and
// character rather than quoted, and a --set argument without '=' is shown
// only when it starts with a key that is not secret.
package config
