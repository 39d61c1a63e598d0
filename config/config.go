package config

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/internal/textsafe"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/tags"
)

// Config is the effective configuration of one Rackstream instance. [Load]
// builds it from defaults, a properties file, the environment and flags; the
// fields are typed and already validated. Durations are the *.ms keys.
//
// Config masks its secrets wherever it is printed or logged: String,
// GoString and LogValue (it is a slog.LogValuer) never show them, and secret
// fields have the type [Secret], which masks itself too.
type Config struct {
	ApplicationID    string   // application.id
	BootstrapServers []string // bootstrap.servers

	ClientTags tags.Set // client.tag.<key>
	// Placement are num.standby.replicas, rack.aware.assignment.tags,
	// acceptable.recovery.lag, max.warmup.replicas, the rack-aware
	// strategy and costs, and client.rack.tag: the settings that shape the
	// group's plan, in the type every layer shares.
	Placement                assignor.Settings
	ProbingRebalanceInterval time.Duration // probing.rebalance.interval.ms
	NumStreamThreads         int           // num.stream.threads
	ApplicationServer        string        // application.server (host:port)

	StateDir                string        // state.dir
	StateCleanupDelay       time.Duration // state.cleanup.delay.ms
	LevelDB                 LevelDB
	StatestoreCacheMaxBytes int64 // statestore.cache.max.bytes
	StateMemoryBytes        int64 // state.memory.bytes

	CommitInterval             time.Duration    // commit.interval.ms
	ProcessingGuarantee        Guarantee        // processing.guarantee
	ReplicationFactor          int              // replication.factor
	RepartitionPurgeInterval   time.Duration    // repartition.purge.interval.ms
	ChangelogLeaderAlignment   bool             // changelog.leader.alignment
	SessionTimeout             time.Duration    // session.timeout.ms
	ShutdownTimeout            time.Duration    // shutdown.timeout.ms
	MaxTaskIdle                time.Duration    // max.task.idle.ms
	Partitioner                Partitioner      // partitioner
	ProcessingExceptionHandler ExceptionHandler // processing.exception.handler
	DeadLetterQueueTopic       string           // errors.dead.letter.queue.topic.name

	Security  Security
	HTTP      HTTP
	LogFormat LogFormat  // log.format
	LogLevel  slog.Level // log.level
	Processor Processor

	sources  map[string]Source // every set key's source, client tags included
	warnings []string
}

// LevelDB holds the state stores' LevelDB options (state.leveldb.*).
type LevelDB struct {
	BlockCacheBytes  int64       // state.leveldb.block.cache.bytes
	WriteBufferBytes int64       // state.leveldb.write.buffer.bytes
	BloomBits        int         // state.leveldb.bloom.bits; 0 = no bloom filter
	Compression      Compression // state.leveldb.compression
}

// Security holds the Kafka clients' security settings.
type Security struct {
	// OAUTHBEARER's client-credentials flow (sasl.mechanism=OAUTHBEARER).
	OAuthTokenEndpointURL string // sasl.oauthbearer.token.endpoint.url
	OAuthClientID         string // sasl.oauthbearer.client.credentials.client.id
	OAuthClientSecret     Secret // sasl.oauthbearer.client.credentials.client.secret
	OAuthScope            string // sasl.oauthbearer.scope

	Protocol               SecurityProtocol // security.protocol
	SASLMechanism          SASLMechanism    // sasl.mechanism
	SASLUsername           string           // sasl.username
	SASLPassword           Secret           // sasl.password
	SSLCALocation          string           // ssl.ca.location
	SSLCertificateLocation string           // ssl.certificate.location
	SSLKeyLocation         string           // ssl.key.location

	// Kafka's Java names (sasl.jaas.config, key and trust stores).
	SASLJAASConfig                     Secret    // sasl.jaas.config
	SSLEndpointIdentificationAlgorithm string    // ssl.endpoint.identification.algorithm: "https" or ""
	SSLKeyPassword                     Secret    // ssl.key.password
	SSLKeystoreCertificateChain        Secret    // ssl.keystore.certificate.chain
	SSLKeystoreKey                     Secret    // ssl.keystore.key
	SSLKeystoreLocation                string    // ssl.keystore.location
	SSLKeystorePassword                Secret    // ssl.keystore.password
	SSLKeystoreType                    StoreType // ssl.keystore.type
	SSLTruststoreCertificates          Secret    // ssl.truststore.certificates
	SSLTruststoreLocation              string    // ssl.truststore.location
	SSLTruststorePassword              Secret    // ssl.truststore.password
	SSLTruststoreType                  StoreType // ssl.truststore.type
}

// StoreType is ssl.keystore.type and ssl.truststore.type.
type StoreType string

const (
	StoreJKS    StoreType = "JKS" // Kafka's default: read as PKCS12 when it is one
	StorePKCS12 StoreType = "PKCS12"
	StorePEM    StoreType = "PEM"
)

// SASLCredentials returns the SASL user name and password: those of the
// login module in sasl.jaas.config when it is set, else sasl.username and
// sasl.password. Load has checked that exactly one of the two is set under
// a SASL protocol.
func (s Security) SASLCredentials() (user string, password Secret) {
	if s.SASLJAASConfig != "" {
		if j, err := ParseJAAS(s.SASLJAASConfig.Reveal()); err == nil {
			return j.Options["username"], Secret(j.Options["password"])
		}
		return "", ""
	}
	return s.SASLUsername, s.SASLPassword
}

// VerifyHostname reports whether TLS checks that a broker's certificate
// names the broker (ssl.endpoint.identification.algorithm=https).
func (s Security) VerifyHostname() bool { return s.SSLEndpointIdentificationAlgorithm != "" }

// UsesSASL reports whether the protocol authenticates with SASL.
func (s Security) UsesSASL() bool {
	return s.Protocol == SASLPlaintext || s.Protocol == SASLSSL
}

// UsesTLS reports whether the protocol encrypts with TLS.
func (s Security) UsesTLS() bool { return s.Protocol == SSL || s.Protocol == SASLSSL }

// HTTP holds the query server's and peer forwarding's settings (http.*).
type HTTP struct {
	Listen    string   // http.listen
	Auth      HTTPAuth // http.auth
	AuthToken Secret   // http.auth.token
	TLSCert   string   // http.tls.cert
	TLSKey    string   // http.tls.key
	TLSCA     string   // http.tls.ca
	// TLSClientAuth is http.tls.client.auth: none, request or require.
	TLSClientAuth string
	TLSClientCA   string // http.tls.client.ca
	Pprof         bool   // http.pprof
}

// HTTPAuth is http.auth: whether an HTTP server reachable from other hosts
// must authenticate its clients.
type HTTPAuth string

const (
	// HTTPAuthToken: beyond loopback, http.auth.token is required.
	HTTPAuthToken HTTPAuth = "token"
	// HTTPAuthNone: no authentication, chosen explicitly.
	HTTPAuthNone HTTPAuth = "none"
)

// Processor holds the built-in processor's settings (processor.*).
type Processor struct {
	Type           ProcessorType // processor.type; "" = none (library use)
	InputTopic     string        // processor.input.topic
	OutputTopic    string        // processor.output.topic
	SumField       string        // processor.sum.field
	GroupByField   string        // processor.group.by.field; "" = the record's key
	ChangelogTopic string        // processor.changelog.topic
	TableTopic     string        // processor.table.topic
	TableGlobal    bool          // processor.table.global
	Join           JoinType      // processor.join
	JoinKeyField   string        // processor.join.key.field
	TimestampField string        // processor.timestamp.field; "" = the record's timestamp
	Window         Window        // processor.window.*
}

// Window holds a windowed count or sum's settings (processor.window.*),
// durations in milliseconds, 0 where a key is unset.
type Window struct {
	Type      WindowType // processor.window.type; "" = not windowed
	Size      int64      // processor.window.size.ms
	Advance   int64      // processor.window.advance.ms
	Gap       int64      // processor.window.gap.ms
	Grace     int64      // processor.window.grace.ms
	Retention int64      // processor.window.retention.ms; 0 = the minimum
	Emit      WindowEmit // processor.window.emit
}

// WindowType is processor.window.type.
type WindowType string

const (
	WindowTumbling WindowType = "tumbling"
	WindowHopping  WindowType = "hopping"
	WindowSliding  WindowType = "sliding"
	WindowSession  WindowType = "session"
)

// WindowEmit is processor.window.emit.
type WindowEmit string

const (
	WindowEmitUpdate WindowEmit = "update" // every update of a window
	WindowEmitFinal  WindowEmit = "final"  // each window once, when it closes
)

// JoinType is processor.join: how the built-in join treats a record whose
// key the table does not have.
type JoinType string

const (
	JoinInner JoinType = "inner" // drop it
	JoinLeft  JoinType = "left"  // emit it with a null table value
)

// Guarantee is processing.guarantee: the processor's type (one definition,
// documented there), so a loaded config passes straight to the runtime.
type Guarantee = processor.Guarantee

const (
	AtLeastOnce   = processor.AtLeastOnce
	ExactlyOnceV2 = processor.ExactlyOnceV2
	AtMostOnce    = processor.AtMostOnce
)

// Partitioner is the function that maps a key to its partition slot.
type Partitioner string

const (
	Murmur2 Partitioner = "murmur2" // Kafka's Java clients, franz-go
	FNV1a   Partitioner = "fnv1a"   // goka, sarama
	CRC32   Partitioner = "crc32"   // librdkafka's consistent
)

// ExceptionHandler is what happens to a record that fails to decode or process.
type ExceptionHandler string

const (
	HandlerDLQ  ExceptionHandler = "dlq"  // send it to the dead-letter topic
	HandlerSkip ExceptionHandler = "skip" // log, count and go on ("continue" is an alias)
	HandlerFail ExceptionHandler = "fail" // stop the task, mark the instance not ready
)

// SecurityProtocol is security.protocol.
type SecurityProtocol string

const (
	Plaintext     SecurityProtocol = "PLAINTEXT"
	SSL           SecurityProtocol = "SSL"
	SASLPlaintext SecurityProtocol = "SASL_PLAINTEXT"
	SASLSSL       SecurityProtocol = "SASL_SSL"
)

// SASLMechanism is sasl.mechanism.
type SASLMechanism string

const (
	Plain       SASLMechanism = "PLAIN"
	ScramSHA256 SASLMechanism = "SCRAM-SHA-256"
	ScramSHA512 SASLMechanism = "SCRAM-SHA-512"
	OAuthBearer SASLMechanism = "OAUTHBEARER"
)

// Compression is state.leveldb.compression.
type Compression string

const (
	CompressionSnappy Compression = "snappy"
	CompressionNone   Compression = "none"
)

// LogFormat is log.format.
type LogFormat string

const (
	LogText LogFormat = "text"
	LogJSON LogFormat = "json"
)

// ProcessorType is processor.type: a built-in processor of `rackstream run`.
type ProcessorType string

const (
	ProcessorLatest ProcessorType = "latest" // last value per key
	ProcessorCount  ProcessorType = "count"  // records per key
	ProcessorSum    ProcessorType = "sum"    // sum of a number per key
	ProcessorJoin   ProcessorType = "join"   // each record enriched with a table's value
)

// Secret is a configuration value that must not be shown: it prints, logs
// and marshals as "[hidden]" (as Kafka prints its passwords) unless it is
// empty. Reveal returns the value itself.
type Secret string

const masked = "[hidden]"

// Reveal returns the secret value, for the one place that needs it.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) mask() string {
	if s == "" {
		return ""
	}
	return masked
}

func (s Secret) String() string               { return s.mask() }
func (s Secret) GoString() string             { return fmt.Sprintf("%q", s.mask()) }
func (s Secret) LogValue() slog.Value         { return slog.StringValue(s.mask()) }
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.mask()), nil }

// IsSecret reports whether a key's value must never be shown. For a key of
// the table the table's secret flag decides (sasl.password,
// http.auth.token, ...); for another of Kafka's keys, Kafka's (a PASSWORD
// type). A key outside both (a client tag, a misspelt or unknown key) is
// treated as secret when its name looks like one: it
// contains "password", "secret", "token", "credential" or "jaas", or ends in
// ".key"; better to mask a harmless value than to show a password under a
// misspelt key.
func IsSecret(key string) bool {
	if d := lookup(key); d != nil {
		return d.secret
	}
	if _, secret := kafkaLookup(key); secret {
		return true // a password to Kafka (ConfigDef type PASSWORD)
	}
	return looksSecret(key)
}

// looksSecret is IsSecret's guess for a key outside the table.
func looksSecret(key string) bool {
	k := strings.ToLower(key)
	for _, word := range []string{"password", "secret", "token", "credential", "jaas"} {
		if strings.Contains(k, word) {
			return true
		}
	}
	return strings.HasSuffix(k, ".key")
}

// ExactlyOnce reports whether processing.guarantee is exactly_once_v2.
func (c *Config) ExactlyOnce() bool { return c.ProcessingGuarantee == ExactlyOnceV2 }

// ClientRack returns the Kafka client.rack (KIP-392) of this instance: the
// value of the client tag named by client.rack.tag, or "" when there is none.
func (c *Config) ClientRack() string {
	if c.Placement.ClientRackTag == "" {
		return ""
	}
	return c.ClientTags.Value(c.Placement.ClientRackTag)
}

// Source returns where key's effective value came from. Keys that were
// never set, client tags included, come from the default.
func (c *Config) Source(key string) Source {
	if s, ok := c.sources[key]; ok {
		return s
	}
	return Source{}
}

// SourceKind says which layer a value came from.
type SourceKind uint8

const (
	FromDefault SourceKind = iota
	FromFile
	FromEnv
	FromFlag
)

// Source is where a value came from: a default, a line of a file, an
// environment variable or a --set flag.
type Source struct {
	Kind SourceKind
	File string // FromFile: the path
	Line int    // FromFile: the line, from 1
	Env  string // FromEnv: the variable's name
	// Note explains a default that depends on other keys:
	// "under processing.guarantee=exactly_once_v2".
	Note string
}

// String returns "default", "FILE:LINE", "env NAME" or "flag --set".
func (s Source) String() string {
	switch s.Kind {
	case FromFile:
		return fmt.Sprintf("%s:%d", textsafe.Short(s.File), s.Line)
	case FromEnv:
		return "env " + textsafe.Short(s.Env)
	case FromFlag:
		return "flag --set"
	}
	if s.Note != "" {
		return "default (" + s.Note + ")"
	}
	return "default"
}

// Error is one problem with the configuration: the key at fault, where its
// value came from, and what is wrong. Msg names the key (in Kafka's words
// where Kafka has a message) and, for a bad value, the value and what is
// allowed; secret values are masked.
type Error struct {
	Key    string
	Source Source
	Msg    string
}

// Error returns "FILE:LINE: message", "env NAME: message", "flag --set:
// message", or the message alone for a key that was not set: one line,
// escaped and at most maxMessage bytes of message (Msg shortens the values
// it quotes; this bounds what it could not).
func (e *Error) Error() string {
	msg := textsafe.Bounded(e.Msg, maxMessage)
	if e.Source.Kind == FromDefault {
		return msg
	}
	return e.Source.String() + ": " + msg
}

// maxMessage bounds one error's message as Error prints it.
const maxMessage = 1 << 10

// Errors is every problem [Load] found, in the order a reader meets them:
// file lines top to bottom, then environment variables, flags, and last the
// keys that were not set.
type Errors []*Error

// Error lists the errors one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual errors, for errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
