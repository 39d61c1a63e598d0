package config

import (
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rackstream/rackstream/internal/textsafe"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/tags"
	"github.com/rackstream/rackstream/window"
)

// keyDef defines one configuration key. The table of them, keys, is the one
// place a key is described: parsing, validation, the printed effective
// configuration and the reference in docs/configuration.md are all derived from it.
type keyDef struct {
	name string
	doc  string
	// def is the default in its textual form, parsed like any value. When
	// derived is set, def is only what the reference shows.
	def      string
	required bool // no default: must be set, and not empty
	nonEmpty bool // has a default, but may not be set to ""
	// secret marks a value that is never shown: not in an error, a log line,
	// a warning or the effective configuration (its field is a Secret).
	secret bool
	// enum lists the allowed values. aliases maps further accepted spellings
	// to one of them; fold accepts any letter case.
	enum    []string
	aliases map[string]string
	fold    bool
	min     int64 // for numbers, with hasMin
	hasMin  bool
	max     int64 // for numbers, with hasMax
	hasMax  bool
	// field returns a pointer to the key's field in c: *string (enum types
	// and Secret as their underlying string), *bool (with the enum false,
	// true), *int, *int64, *time.Duration
	// (milliseconds), *[]string (a list), *tags.Keys or *slog.Level.
	field func(c *Config) any
	// derived computes the default from other keys, after every set value is
	// in c; note says why, for the source.
	derived func(c *Config) (value, note string)
	// check validates a set value beyond type and range; it returns what is
	// allowed, as the rest of "Invalid value V for configuration K: ...".
	check func(v string) string
	// rangeText replaces the generated range in the reference.
	rangeText string
}

// keys is the table of every configuration key but the client.tag.<key>
// family, sorted by name (a test keeps it sorted).
var keys = []*keyDef{
	{name: "acceptable.recovery.lag", def: num(procDefaults.Placement.AcceptableRecoveryLag), min: 0, hasMin: true,
		doc:   "The largest lag (in changelog records) at which a replica counts as caught up and may take over a task as active without a warmup (KIP-441).",
		field: func(c *Config) any { return &c.Placement.AcceptableRecoveryLag }},
	{name: "application.id", required: true, check: checkTopicChars,
		doc:   "Identifies the application: the consumer group id and the prefix of internal topics (`<application.id>-<store>-changelog`, `<application.id>-dlq`). Letters, digits, `.`, `_` and `-`.",
		field: func(c *Config) any { return &c.ApplicationID }},
	{name: "application.server", check: checkHostPort,
		doc:   "The `host:port` at which other instances and clients reach this instance's HTTP server; announced to the group for query routing.",
		field: func(c *Config) any { return &c.ApplicationServer }},
	{name: "bootstrap.servers", required: true, check: checkServers,
		doc:   "Comma-separated `host:port` list of Kafka brokers to bootstrap from.",
		field: func(c *Config) any { return &c.BootstrapServers }},
	{name: "changelog.leader.alignment", def: strconv.FormatBool(procDefaults.ChangelogLeaders == processor.ChangelogLeadersAligned), enum: []string{"false", "true"}, fold: true,
		doc:   "`true`: a changelog topic Rackstream creates gets an explicit replica assignment whose partition i has its preferred leader in the rack of the leader of the first input topic's partition i and its other replicas in other racks, so that an active placed with its input produces its changelog within its zone. Falls back to the broker's placement where a broker has no `broker.rack` or the cluster refuses explicit assignments. Never changes an existing topic. `false`: the broker places the replicas. See docs/placement.md.",
		field: func(c *Config) any { return &c.ChangelogLeaderAlignment }},
	{name: "client.rack.tag", def: "zone",
		doc:   "The client tag whose value is also the Kafka clients' `client.rack` (KIP-392: fetch from a replica in the same rack). Empty for none; no rack is set when the tag is not configured.",
		field: func(c *Config) any { return &c.Placement.ClientRackTag }},
	{name: "commit.interval.ms", def: "`" + ms(procDefaults.CommitInterval) + "`; `" + ms(commitIntervalExactlyOnce) + "` under `exactly_once_v2`", min: 0, hasMin: true,
		doc:   "How often, in milliseconds, a task commits: flushes its changelog and outputs, writes its state and checkpoint, and commits its input offsets. An instance's first commit comes at a random point of the first interval, so that instances started together commit apart. 0 commits after every batch of records a task has worked through.",
		field: func(c *Config) any { return &c.CommitInterval },
		derived: func(c *Config) (string, string) {
			if c.ProcessingGuarantee == ExactlyOnceV2 {
				return ms(commitIntervalExactlyOnce), "under processing.guarantee=exactly_once_v2"
			}
			return ms(procDefaults.CommitInterval), ""
		}},
	{name: "errors.dead.letter.queue.topic.name", def: "`<application.id>-dlq`",
		doc:   "The dead-letter topic for records that fail to decode or process under `processing.exception.handler=dlq` (Kafka Streams' KIP-1034 name).",
		field: func(c *Config) any { return &c.DeadLetterQueueTopic },
		derived: func(c *Config) (string, string) {
			if c.ApplicationID == "" {
				return "", ""
			}
			return deadLetterTopic(c.ApplicationID), "<application.id>-dlq"
		}},
	{name: "http.auth", def: "token", enum: []string{"token", "none"},
		doc:   "`token`: `rackstream run` refuses to start when `http.listen` accepts connections beyond loopback and neither `http.auth.token` nor `http.tls.client.auth=require` authenticates clients. `none`: serve without authentication on purpose (logged as a warning at start); `http.auth.token` must then be empty.",
		field: func(c *Config) any { return (*string)(&c.HTTP.Auth) }},
	{name: "http.auth.token", secret: true, doc: "A bearer token the HTTP server requires on every route but `/healthz` and `/readyz`. It is never sent to a peer: a forwarded query is signed with an HMAC keyed from it, and only a request so signed is treated as a peer's. Empty for none (then no hop is authenticated).",
		field: func(c *Config) any { return (*string)(&c.HTTP.AuthToken) }},
	{name: "http.listen", def: ":8080", nonEmpty: true, check: checkHostPort,
		doc:   "The `host:port` the HTTP server (queries, metrics, health) listens on.",
		field: func(c *Config) any { return &c.HTTP.Listen }},
	{name: "http.pprof", def: "false", enum: []string{"false", "true"}, fold: true,
		doc:   "`true` serves the Go runtime's profiles under `/debug/pprof/` (CPU `profile?seconds=N`, `heap`, `allocs`, `goroutine`, `block`, `mutex`, the execution `trace?seconds=N`: net/http/pprof, read with `go tool pprof` and `go tool trace`), behind `http.auth.token` like every route but `/healthz` and `/readyz`; a profile's seconds must stay under the server's 30 s write timeout. Off by default: a profile shows the process's code and state, and a CPU profile or trace costs CPU while it runs. The command line is never served (it may hold a secret).",
		field: func(c *Config) any { return &c.HTTP.Pprof }},
	{name: "http.tls.ca", doc: "PEM file of the certificate authorities that verify peers when a query is forwarded over HTTPS. Verification is never skipped.",
		field: func(c *Config) any { return &c.HTTP.TLSCA }},
	{name: "http.tls.cert", doc: "PEM certificate file: the HTTP server serves HTTPS when set (with `http.tls.key`).",
		field: func(c *Config) any { return &c.HTTP.TLSCert }},
	{name: "http.tls.client.auth", def: "none", enum: []string{"none", "request", "require"},
		doc:   "Whether the HTTPS server verifies clients' certificates against `http.tls.client.ca`: `none`; `request` (a certificate a client presents must verify; a client may present none); `require` (mutual TLS: a client without a certificate that verifies fails the TLS handshake, `/healthz` and `/readyz` included). Instances present their own `http.tls.cert` when they forward, so it must allow client authentication too. Needs `http.tls.cert`.",
		field: func(c *Config) any { return &c.HTTP.TLSClientAuth }},
	{name: "http.tls.client.ca", doc: "PEM file of the certificate authorities that verify clients' certificates, required unless `http.tls.client.auth` is `none`. Instances forwarding to each other are clients too: it must trust the instances' CA.",
		field: func(c *Config) any { return &c.HTTP.TLSClientCA }},
	{name: "http.tls.key", doc: "PEM private key file of `http.tls.cert`.",
		field: func(c *Config) any { return &c.HTTP.TLSKey }},
	{name: "log.format", def: "text", enum: []string{"text", "json"},
		doc:   "Log output format (log/slog handlers).",
		field: func(c *Config) any { return (*string)(&c.LogFormat) }},
	{name: "log.level", def: "info", enum: []string{"debug", "info", "warn", "error"}, fold: true,
		doc:   "The lowest level logged.",
		field: func(c *Config) any { return &c.LogLevel }},
	{name: "max.task.idle.ms", def: ms(procDefaults.MaxTaskIdle), min: -1, hasMin: true,
		doc:   "How long, in milliseconds, a task that takes its records in timestamp order waits for an input with nothing fetched: with co-partitioned tables, for new table records when its table partition is caught up; with several stream inputs, for the input that has nothing waiting (Kafka Streams' name and default). 0 waits only for records known to be on the broker; -1 turns the timestamp alignment off (records in fetch order).",
		field: func(c *Config) any { return &c.MaxTaskIdle }},
	{name: "max.warmup.replicas", def: num(procDefaults.Placement.MaxWarmupReplicas), min: 1, hasMin: true, max: math.MaxInt32, hasMax: true,
		doc:   "The most warmup replicas (extra standbys that restore a task before it moves to a caught-up owner) the group may have at once (KIP-441).",
		field: func(c *Config) any { return &c.Placement.MaxWarmupReplicas }},
	{name: "num.standby.replicas", def: num(procDefaults.Placement.NumStandbyReplicas), min: 0, hasMin: true, max: math.MaxInt32, hasMax: true,
		doc:   "Standby replicas per task, spread over the `rack.aware.assignment.tags` dimensions. 0 means none.",
		field: func(c *Config) any { return &c.Placement.NumStandbyReplicas }},
	{name: "num.stream.threads", def: "the number of CPUs", min: 1, hasMin: true, max: maxCapacity, hasMax: true,
		doc:   "Tasks processed in parallel, and this instance's capacity weight in placement. Differs from Kafka Streams: there it is the number of threads that share the tasks; here every task has its own goroutine, and the value weighs this instance's share of tasks against the others'.",
		field: func(c *Config) any { return &c.NumStreamThreads },
		derived: func(*Config) (string, string) {
			return num(procDefaults.Capacity), "the number of CPUs"
		}},
	{name: "partitioner", def: procDefaults.Partitioner.Name(), enum: []string{"murmur2", "fnv1a", "crc32"},
		doc:   "The function that maps a key to its partition slot, for every producer, the HTTP router and the startup check: `murmur2` (Kafka's Java clients, franz-go), `fnv1a` (goka, sarama), `crc32` (librdkafka's `consistent`).",
		field: func(c *Config) any { return (*string)(&c.Partitioner) }},
	{name: "probing.rebalance.interval.ms", def: ms(procDefaults.ProbingInterval), min: minProbingMs, hasMin: true,
		doc:   "How long, in milliseconds, to wait before a probing rebalance that checks whether warmups have caught up (KIP-441).",
		field: func(c *Config) any { return &c.ProbingRebalanceInterval }},
	{name: "processing.exception.handler", def: string(procDefaults.ErrorPolicy), enum: []string{"dlq", "skip", "fail"}, aliases: map[string]string{"continue": "skip", "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler": "skip", "org.apache.kafka.streams.errors.LogAndFailProcessingExceptionHandler": "fail"},
		doc:   "What happens to a record that fails to decode or whose handler fails after retries: `dlq` sends it to the dead-letter topic, `skip` (alias `continue`) logs and counts it, `fail` stops the task and marks the instance not ready. Kafka Streams' `org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler` and `LogAndFailProcessingExceptionHandler` mean `skip` and `fail`.",
		field: func(c *Config) any { return (*string)(&c.ProcessingExceptionHandler) }},
	{name: "processing.guarantee", def: "at_least_once", enum: []string{"at_least_once", "exactly_once_v2", "at_most_once"},
		doc:   "`at_least_once` (a crash may process records again), `exactly_once_v2` (each commit interval's changelog records, outputs, dead letters and input offsets in one Kafka transaction; inputs, restore and standbys read committed), or `at_most_once` (ours: a batch's offsets are committed before its records are processed, so a crash may skip records but never repeats one). See docs/delivery.md.",
		field: func(c *Config) any { return (*string)(&c.ProcessingGuarantee) }},
	{name: "processor.changelog.topic", doc: "The built-in processor's store changelog topic; empty for the default `<application.id>-<store>-changelog`.",
		field: func(c *Config) any { return &c.Processor.ChangelogTopic }},
	{name: "processor.group.by.field",
		doc:   "For `processor.type` `count` and `sum`: the top-level JSON field of the record's value (a string or a number) whose value becomes the record's key, so that the count or sum is per value of that field (Kafka Streams' `groupBy`). Records go through the repartition topic `<application.id>-<type>-repartition`, which Rackstream creates; a record without the field follows `processing.exception.handler`. Empty to count or sum by the record's key.",
		field: func(c *Config) any { return &c.Processor.GroupByField }},
	{name: "processor.input.topic", doc: "The built-in processor's input topic (required with `processor.type`).",
		field: func(c *Config) any { return &c.Processor.InputTopic }},
	{name: "processor.join", def: string(JoinLeft), enum: []string{string(JoinInner), string(JoinLeft)},
		doc:   "For `processor.type=join`: `left` emits every record, with a null table value when the table does not have its key; `inner` drops such records.",
		field: func(c *Config) any { return (*string)(&c.Processor.Join) }},
	{name: "processor.join.key.field", doc: "For `processor.type=join` with `processor.table.global=true`: the top-level JSON field of the record's value holding the table key (a string or a number); empty to look up the record's key.",
		field: func(c *Config) any { return &c.Processor.JoinKeyField }},
	{name: "processor.output.topic", doc: "The topic receiving each updated value per key (for `processor.type=join`: each enriched record; required); empty for none.",
		field: func(c *Config) any { return &c.Processor.OutputTopic }},
	{name: "processor.sum.field", doc: "For `processor.type=sum`: the JSON field holding the number; empty when the value itself is a decimal number.",
		field: func(c *Config) any { return &c.Processor.SumField }},
	{name: "processor.table.global", def: "false", enum: []string{"false", "true"}, fold: true,
		doc:   "For `processor.type=join`: `true` holds the whole table on every instance (a global table: the input need not be co-partitioned with it); `false` joins a co-partitioned table (same partition count and partitioner as the input), each task holding its partition.",
		field: func(c *Config) any { return &c.Processor.TableGlobal }},
	{name: "processor.table.topic", doc: "For `processor.type=join` (required): the compacted topic holding the table, key to value.",
		field: func(c *Config) any { return &c.Processor.TableTopic }},
	{name: "processor.timestamp.field", doc: "For every built-in: the top-level JSON field of the record's value holding its time, epoch milliseconds (a number or a string of digits) or an RFC 3339 string; empty for the record's Kafka timestamp. A record without a valid time follows `processing.exception.handler`.",
		field: func(c *Config) any { return &c.Processor.TimestampField }},
	{name: "processor.type", enum: []string{"", "latest", "count", "sum", "join"},
		doc:   "The built-in processor `rackstream run` runs: `latest` (last value per key), `count` (records per key), `sum` (a number summed per key), `join` (each record enriched with a table's value). Empty when Rackstream is used as a library.",
		field: func(c *Config) any { return (*string)(&c.Processor.Type) }},
	{name: "processor.window.advance.ms", def: "0", min: 0, hasMin: true, max: window.MaxDuration, hasMax: true,
		doc:   "For `processor.window.type=hopping` (required): the distance in milliseconds between consecutive window starts, at most `processor.window.size.ms`.",
		field: func(c *Config) any { return &c.Processor.Window.Advance }},
	{name: "processor.window.emit", def: string(WindowEmitUpdate), enum: []string{string(WindowEmitUpdate), string(WindowEmitFinal)},
		doc:   "For a windowed `count` or `sum`: `update` emits a window's result on every record; `final` emits it once, when stream time passes the window's end plus `processor.window.grace.ms` (Kafka Streams' `EmitStrategy.onWindowClose()`).",
		field: func(c *Config) any { return (*string)(&c.Processor.Window.Emit) }},
	{name: "processor.window.gap.ms", def: "0", min: 0, hasMin: true, max: window.MaxDuration, hasMax: true,
		doc:   "For `processor.window.type=session` (required): the inactivity gap in milliseconds that ends a key's session.",
		field: func(c *Config) any { return &c.Processor.Window.Gap }},
	{name: "processor.window.grace.ms", def: "0", min: 0, hasMin: true, max: window.MaxDuration, hasMax: true,
		doc:   "For a windowed `count` or `sum`: how long in milliseconds after a window's end (a session's end plus gap) it still takes late records.",
		field: func(c *Config) any { return &c.Processor.Window.Grace }},
	{name: "processor.window.retention.ms", def: "0", min: 0, hasMin: true, max: window.MaxDuration, hasMax: true,
		doc:   "For a windowed `count` or `sum`: how long in milliseconds the store keeps windows (for queries) after the newest one; 0 for the minimum, the window length plus grace (sliding: twice the size plus grace). It may not be shorter than that minimum.",
		field: func(c *Config) any { return &c.Processor.Window.Retention }},
	{name: "processor.window.size.ms", def: "0", min: 0, hasMin: true, max: window.MaxDuration, hasMax: true,
		doc:   "For `processor.window.type` `tumbling`, `hopping` (the window length) and `sliding` (the largest time difference between two records of a window), required: milliseconds.",
		field: func(c *Config) any { return &c.Processor.Window.Size }},
	{name: "processor.window.type", enum: []string{"", string(WindowTumbling), string(WindowHopping), string(WindowSliding), string(WindowSession)},
		doc:   "For `processor.type` `count` and `sum`: counts or sums each key's records per window of time (store `count` or `sum` a window store, queried at `/v1/stores/<type>/windows/<key>`), or empty for a running total per key. Output values are `{\"start\": ms, \"end\": ms, \"value\": n}` under the input key.",
		field: func(c *Config) any { return (*string)(&c.Processor.Window.Type) }},
	{name: "rack.aware.assignment.non_overlap_cost", def: num(procDefaults.Placement.RackAwareAssignmentNonOverlapCost), min: 0, hasMin: true, max: maxRackCost, hasMax: true,
		doc:   "Under a rack-aware strategy: the cost of moving an active off its previous instance, or placing a standby on an instance holding none of the task's state. Raise it toward `rack.aware.assignment.traffic_cost` to move tasks only for large savings. Kafka Streams' name and default.",
		field: func(c *Config) any { return &c.Placement.RackAwareAssignmentNonOverlapCost }},
	{name: "rack.aware.assignment.strategy", def: procDefaults.Placement.RackAwareAssignmentStrategy, enum: rackStrategies,
		doc:   "Kafka Streams' rack-aware placement of actives and standbys (KIP-925): `none` places by stickiness, caught-up state and load alone; `min_traffic` also minimises the expected cross-zone bytes (inputs fetched and changelogs fetched by standbys from another rack, changelog and output records produced to leaders in another rack) plus the cost of moves, without giving up any guarantee of the placement; `balance_subtopology` is planned as `min_traffic` (a task spans the whole topology). It needs `broker.rack` on the brokers and the `client.rack.tag` tag on the instances, and is off for whatever lacks them. Kafka Streams' default is `none`; ours is `min_traffic`, because a plan it makes is kept only when it costs less than `none`'s. See docs/placement.md.",
		field: func(c *Config) any { return &c.Placement.RackAwareAssignmentStrategy }},
	{name: "rack.aware.assignment.tags",
		doc:   "Comma-separated client tag keys to spread each task's standbys over, highest priority first; each must be set with `client.tag.<key>`. At most 5.",
		field: func(c *Config) any { return &c.Placement.RackAwareAssignmentTags }},
	{name: "rack.aware.assignment.traffic_cost", def: num(procDefaults.Placement.RackAwareAssignmentTrafficCost), min: 0, hasMin: true, max: maxRackCost, hasMax: true,
		doc:   "Under a rack-aware strategy: the cost of one partition flow of mean byte rate crossing zones (a flow with twice the mean rate costs twice as much; with no measured rates every flow costs this). Kafka Streams' name and default.",
		field: func(c *Config) any { return &c.Placement.RackAwareAssignmentTrafficCost }},
	{name: "repartition.purge.interval.ms", def: ms(procDefaults.RepartitionPurgeInterval), min: 0, hasMin: true,
		doc:   "How often, in milliseconds, the owner of a task deletes the records of its repartition topics' partitions below the group's committed offset, after a commit (Kafka Streams' name and default). 0 purges after every commit.",
		field: func(c *Config) any { return &c.RepartitionPurgeInterval }},
	{name: "replication.factor", def: num(procDefaults.ReplicationFactor), min: -1, hasMin: true, max: math.MaxInt16, hasMax: true,
		doc:       "Replication factor of the topics Rackstream creates (changelogs, repartition topics, dead letters, placement); -1 for the broker's default. Producers always use acks=all.",
		rangeText: "-1, or from 1 to 32767.",
		field:     func(c *Config) any { return &c.ReplicationFactor },
		check: func(v string) string {
			if strings.TrimSpace(v) == "0" {
				return "Value must be -1 (the broker's default) or at least 1"
			}
			return ""
		}},
	{name: "sasl.jaas.config", secret: true, check: checkJAAS,
		doc:   "Kafka's JAAS line for SASL, instead of `sasl.username` and `sasl.password`: `org.apache.kafka.common.security.plain.PlainLoginModule required username=\"...\" password=\"...\";` for `sasl.mechanism=PLAIN`, or `org.apache.kafka.common.security.scram.ScramLoginModule` for SCRAM; `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule` for OAUTHBEARER, whose options `clientId`, `clientSecret` and `scope` stand in for the `sasl.oauthbearer.*` keys left empty.",
		field: func(c *Config) any { return (*string)(&c.Security.SASLJAASConfig) }},
	{name: "sasl.mechanism", def: "PLAIN", enum: []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}, fold: true,
		doc:   "The SASL mechanism under `security.protocol` SASL_PLAINTEXT or SASL_SSL.",
		field: func(c *Config) any { return (*string)(&c.Security.SASLMechanism) }},
	{name: "sasl.oauthbearer.client.credentials.client.id",
		doc:   "The OAuth client id of the client-credentials flow under `sasl.mechanism=OAUTHBEARER` (Kafka 4.1's name).",
		field: func(c *Config) any { return &c.Security.OAuthClientID }},
	{name: "sasl.oauthbearer.client.credentials.client.secret", secret: true,
		doc:   "The OAuth client secret of the client-credentials flow under `sasl.mechanism=OAUTHBEARER`.",
		field: func(c *Config) any { return (*string)(&c.Security.OAuthClientSecret) }},
	{name: "sasl.oauthbearer.scope",
		doc:   "The scope the access token is requested for under `sasl.mechanism=OAUTHBEARER`; empty requests none (the identity provider's default).",
		field: func(c *Config) any { return &c.Security.OAuthScope }},
	{name: "sasl.oauthbearer.token.endpoint.url", check: checkTokenEndpoint,
		doc:   "The identity provider's token endpoint under `sasl.mechanism=OAUTHBEARER`: the clients POST the client-credentials grant there (client id and secret as HTTP Basic authentication, as Kafka's clients do) and log in with the access token, fetching a new one before it expires. `https://`; `http://` only to a loopback address.",
		field: func(c *Config) any { return &c.Security.OAuthTokenEndpointURL }},
	{name: "sasl.password", secret: true, doc: "The SASL password.",
		field: func(c *Config) any { return (*string)(&c.Security.SASLPassword) }},
	{name: "sasl.username", doc: "The SASL user name.",
		field: func(c *Config) any { return &c.Security.SASLUsername }},
	{name: "security.protocol", def: "PLAINTEXT", enum: []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}, fold: true,
		doc:   "How the Kafka clients talk to the brokers.",
		field: func(c *Config) any { return (*string)(&c.Security.Protocol) }},
	{name: "session.timeout.ms", def: ms(procDefaults.SessionTimeout), min: minSessionMs, hasMin: true, max: maxSessionMs, hasMax: true,
		doc:   "The consumer group session timeout in milliseconds: how long until a silent instance is considered gone.",
		field: func(c *Config) any { return &c.SessionTimeout }},
	{name: "shutdown.timeout.ms", def: ms(procDefaults.ShutdownTimeout), min: 0, hasMin: true,
		doc:   "The bound, in milliseconds, on a graceful shutdown: finish in-flight records, flush, commit, leave the group, close stores. 0 does not wait: in-flight records are abandoned uncommitted, and processed again by the next owner.",
		field: func(c *Config) any { return &c.ShutdownTimeout }},
	{name: "ssl.ca.location", doc: "PEM file of the certificate authorities that verify the brokers; empty for the system's.",
		field: func(c *Config) any { return &c.Security.SSLCALocation }},
	{name: "ssl.certificate.location", doc: "PEM client certificate file for TLS client authentication (with `ssl.key.location`).",
		field: func(c *Config) any { return &c.Security.SSLCertificateLocation }},
	{name: "ssl.endpoint.identification.algorithm", def: "https", enum: []string{"https", ""}, fold: true,
		doc:   "`https` checks that each broker's certificate names the broker's host, as Kafka's clients do; empty checks only that a trusted authority signed it.",
		field: func(c *Config) any { return &c.Security.SSLEndpointIdentificationAlgorithm }},
	{name: "ssl.key.location", doc: "PEM private key file of `ssl.certificate.location`.",
		field: func(c *Config) any { return &c.Security.SSLKeyLocation }},
	{name: "ssl.key.password", secret: true,
		doc:   "The password of the private key in `ssl.keystore.location` (PKCS12: when it differs from `ssl.keystore.password`, which PKCS12 files written by Java's keytool never do). Encrypted PEM keys are not supported.",
		field: func(c *Config) any { return (*string)(&c.Security.SSLKeyPassword) }},
	{name: "ssl.keystore.certificate.chain", secret: true,
		doc:   "PEM certificate chain of `ssl.keystore.key`, inline (with `ssl.keystore.type=PEM`).",
		field: func(c *Config) any { return (*string)(&c.Security.SSLKeystoreCertificateChain) }},
	{name: "ssl.keystore.key", secret: true,
		doc:   "PEM private key (unencrypted PKCS#8, PKCS#1 or EC) for TLS client authentication, inline (with `ssl.keystore.type=PEM` and `ssl.keystore.certificate.chain`).",
		field: func(c *Config) any { return (*string)(&c.Security.SSLKeystoreKey) }},
	{name: "ssl.keystore.location", doc: "Key store file for TLS client authentication (Kafka's name; `ssl.certificate.location` with `ssl.key.location` is the PEM alternative): a PKCS12 file with `ssl.keystore.password`, or a PEM file holding the private key and its certificate chain.",
		field: func(c *Config) any { return &c.Security.SSLKeystoreLocation }},
	{name: "ssl.keystore.password", secret: true,
		doc:   "The password of the PKCS12 file `ssl.keystore.location`.",
		field: func(c *Config) any { return (*string)(&c.Security.SSLKeystorePassword) }},
	{name: "ssl.keystore.type", def: "JKS", enum: []string{"JKS", "PKCS12", "PEM"}, fold: true,
		doc:   "The format of the key store: `PKCS12`, `PEM`, or `JKS` (Kafka's default), read as PKCS12 when the file is one (as Java 9 and later write them); a real JKS file must be converted (`keytool -importkeystore -deststoretype PKCS12`).",
		field: func(c *Config) any { return (*string)(&c.Security.SSLKeystoreType) }},
	{name: "ssl.truststore.certificates", secret: true,
		doc:   "PEM certificates of the authorities that verify the brokers, inline (with `ssl.truststore.type=PEM`).",
		field: func(c *Config) any { return (*string)(&c.Security.SSLTruststoreCertificates) }},
	{name: "ssl.truststore.location", doc: "Trust store file of the authorities that verify the brokers (Kafka's name for `ssl.ca.location`): PKCS12 (with `ssl.truststore.password` when it has one) or PEM.",
		field: func(c *Config) any { return &c.Security.SSLTruststoreLocation }},
	{name: "ssl.truststore.password", secret: true,
		doc:   "The password of the PKCS12 file `ssl.truststore.location`.",
		field: func(c *Config) any { return (*string)(&c.Security.SSLTruststorePassword) }},
	{name: "ssl.truststore.type", def: "JKS", enum: []string{"JKS", "PKCS12", "PEM"}, fold: true,
		doc:   "The format of the trust store: `PKCS12`, `PEM`, or `JKS` (Kafka's default), read as PKCS12 when the file is one; a real JKS file must be converted (`keytool -importkeystore -deststoretype PKCS12`).",
		field: func(c *Config) any { return (*string)(&c.Security.SSLTruststoreType) }},
	{name: "state.cleanup.delay.ms", def: ms(stateDefaults.CleanupDelay), min: 0, hasMin: true,
		doc:   "How long, in milliseconds, the local state of a task this instance no longer holds is kept before it is deleted.",
		field: func(c *Config) any { return &c.StateCleanupDelay }},
	{name: "state.dir", def: "`<user cache directory>/rackstream`", nonEmpty: true,
		doc:     "Directory of the local state: the process id and one LevelDB per task and store. Instances on one machine need one each. The default is per user, so that `rackstream run` works without root: `$XDG_CACHE_HOME/rackstream` or `~/.cache/rackstream` on Linux, `~/Library/Caches/rackstream` on macOS (Go's `os.UserCacheDir`), `rackstream-state` in the working directory when there is no home directory. The container images set `XDG_CACHE_HOME=/var/lib`, so theirs is `/var/lib/rackstream`.",
		field:   func(c *Config) any { return &c.StateDir },
		derived: func(*Config) (string, string) { return defaultStateDir() }},
	{name: "state.leveldb.block.cache.bytes", def: num(stateDefaults.LevelDB.BlockCacheBytes), min: 0, hasMin: true,
		doc:   "LevelDB block cache per store, in bytes; 0 for none.",
		field: func(c *Config) any { return &c.LevelDB.BlockCacheBytes }},
	{name: "state.leveldb.bloom.bits", def: num(stateDefaults.LevelDB.BloomBits), min: 0, hasMin: true, max: 64, hasMax: true,
		doc:   "Bloom filter bits per key of LevelDB tables; 0 for no filter.",
		field: func(c *Config) any { return &c.LevelDB.BloomBits }},
	{name: "state.leveldb.compression", def: stateDefaults.LevelDB.Compression.String(), enum: []string{"snappy", "none"},
		doc:   "LevelDB block compression.",
		field: func(c *Config) any { return (*string)(&c.LevelDB.Compression) }},
	{name: "state.leveldb.write.buffer.bytes", def: num(stateDefaults.LevelDB.WriteBufferBytes), min: 1, hasMin: true,
		doc:   "LevelDB memtable size per store, in bytes. Larger memtables restore faster, at the cost of memory per open store.",
		field: func(c *Config) any { return &c.LevelDB.WriteBufferBytes }},
	{name: "state.memory.bytes", def: num(stateDefaults.MemoryBytes), min: 0, hasMin: true,
		doc:   "Memory budget of the local state, in bytes: above 0 it overrides `state.leveldb.write.buffer.bytes` and `state.leveldb.block.cache.bytes`, and bounds `statestore.cache.max.bytes` by a quarter of it; the rest is split among the stores as they open, each getting an equal share of the stores this instance expects to hold (tasks assigned, active and standby, times stores per task, recomputed at each assignment; an open store keeps its share until it closes). 0: the per-store sizes apply.",
		field: func(c *Config) any { return &c.StateMemoryBytes }},
	{name: "statestore.cache.max.bytes", def: num(procDefaults.CacheMaxBytes), min: 0, hasMin: true,
		doc:   "Record cache per instance, in bytes, divided among the tasks active on it: writes to one key within a commit interval may be merged before they reach the changelog and outputs, and a store's entries stay cached (clean) after a commit for the next reads; when it is full, clean entries go first, then the least recently written key is written through. 0 turns merging off.",
		field: func(c *Config) any { return &c.StatestoreCacheMaxBytes }},
}

// defaultStateDir is state.dir's default and where it comes from: the
// user's cache directory, which a user without root can write.
func defaultStateDir() (dir, note string) {
	if base, err := os.UserCacheDir(); err == nil {
		return filepath.Join(base, "rackstream"), "the user's cache directory"
	}
	return "rackstream-state", "no home directory: the working directory"
}

// clientTagDoc describes the client.tag.<key> family in the reference.
const clientTagDoc = "A client tag: where this instance runs, e.g. `client.tag.zone=eu-central-1a`. At most 5; key at most 20 characters, value at most 30 (counted in characters), neither empty; no control or format characters (a tag is announced to the group and shown on terminals)."

// draftNames are KIP-708's draft names for rack.aware.assignment.tags.
var draftNames = []string{"task.assignment.rack.awareness", "taskrack.aware.assignment.rack.awarenesstags"}

func lookup(name string) *keyDef {
	i, ok := slices.BinarySearchFunc(keys, name, func(d *keyDef, n string) int { return strings.Compare(d.name, n) })
	if !ok {
		return nil
	}
	return keys[i]
}

// allowed describes the allowed values of an enum, in Kafka's words.
func (d *keyDef) allowed() string {
	var vs []string
	for _, v := range d.enum {
		if v == "" {
			v = `""`
		}
		for _, a := range slices.Sorted(maps.Keys(d.aliases)) {
			// Kafka's Java class names are accepted but not listed: the
			// key's doc names them.
			if d.aliases[a] == v && !strings.Contains(a, ".") {
				v += " (alias " + a + ")"
			}
		}
		vs = append(vs, v)
	}
	return "String must be one of: " + strings.Join(vs, ", ")
}

// set parses v into d's field of c. It returns the reason v is not allowed,
// as the end of Kafka's "Invalid value V for configuration K: REASON", or "".
func (d *keyDef) set(c *Config, v string) string {
	v = strings.TrimSpace(v) // as Kafka's ConfigDef.parseType
	if v == "" && (d.required || d.nonEmpty) {
		return "Value must not be empty"
	}
	if d.enum != nil {
		canon, ok := d.canonical(v)
		if !ok {
			return d.allowed()
		}
		v = canon
	}
	if d.check != nil && v != "" {
		if why := d.check(v); why != "" {
			return why
		}
	}
	switch p := d.field(c).(type) {
	case *string:
		*p = v
	case *bool: // an enum of false and true
		*p = v == "true"
	case *int:
		n, why := d.integer(v, "INT", 32)
		if why != "" {
			return why
		}
		*p = int(n)
	case *int64:
		n, why := d.integer(v, "LONG", 64)
		if why != "" {
			return why
		}
		*p = n
	case *time.Duration:
		n, why := d.integer(v, "LONG", 64)
		if why != "" {
			return why
		}
		if n > math.MaxInt64/int64(time.Millisecond) || n < math.MinInt64/int64(time.Millisecond) {
			return fmt.Sprintf("Value must be no more than %d", math.MaxInt64/int64(time.Millisecond))
		}
		*p = time.Duration(n) * time.Millisecond
	case *[]string:
		*p = nil
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				*p = append(*p, s)
			}
		}
		if len(*p) == 0 && d.required {
			return "Value must not be empty"
		}
	case *tags.Keys:
		*p = tags.ParseKeys(v) // checked with the client tags by tags.Check
	case *slog.Level:
		var l slog.Level
		if err := l.UnmarshalText([]byte(v)); err != nil {
			return d.allowed()
		}
		*p = l
	default:
		panic(fmt.Sprintf("config: key %s has a field of unsupported type %T", d.name, p))
	}
	return ""
}

func (d *keyDef) canonical(v string) (string, bool) {
	if to, ok := d.aliases[v]; ok {
		return to, true
	}
	for _, e := range d.enum {
		if v == e || (d.fold && strings.EqualFold(v, e)) {
			return e, true
		}
	}
	return "", false
}

func (d *keyDef) integer(v, typ string, bits int) (int64, string) {
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		return 0, "Not a number of type " + typ
	}
	if d.hasMin && n < d.min {
		return 0, fmt.Sprintf("Value must be at least %d", d.min)
	}
	if d.hasMax && n > d.max {
		return 0, fmt.Sprintf("Value must be no more than %d", d.max)
	}
	return n, ""
}

// format returns the value of d's field in c as text, secrets unmasked.
func (d *keyDef) format(c *Config) string {
	switch p := d.field(c).(type) {
	case *string:
		return *p
	case *bool:
		return strconv.FormatBool(*p)
	case *int:
		return strconv.Itoa(*p)
	case *int64:
		return strconv.FormatInt(*p, 10)
	case *time.Duration:
		return strconv.FormatInt(p.Milliseconds(), 10)
	case *[]string:
		return strings.Join(*p, ",")
	case *tags.Keys:
		return p.String()
	case *slog.Level:
		return strings.ToLower(p.String())
	}
	panic(fmt.Sprintf("config: key %s has a field of unsupported type %T", d.name, d.field(c)))
}

// rangeDoc describes d's allowed values for the reference, or "".
func (d *keyDef) rangeDoc() string {
	switch {
	case d.rangeText != "":
		return d.rangeText
	case d.enum != nil:
		var vs []string
		for _, v := range d.enum {
			if v != "" {
				vs = append(vs, "`"+v+"`")
			}
		}
		return "One of " + strings.Join(vs, ", ") + "."
	case d.hasMin && d.hasMax && d.max <= 1000: // a real bound, not the type's
		return fmt.Sprintf("From %d to %d.", d.min, d.max)
	case d.hasMin:
		return fmt.Sprintf("At least %d.", d.min)
	}
	return ""
}

func checkHostPort(v string) string {
	if len(v) > maxEndpointBytes || !utf8.ValidString(v) {
		return fmt.Sprintf("Value must be host:port, at most %d bytes of UTF-8", maxEndpointBytes)
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil || port == "" || strings.ContainsAny(host, " /") {
		return "Value must be host:port"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "Value must be host:port with a port from 0 to 65535"
	}
	return ""
}

func checkServers(v string) string {
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if checkHostPort(s) != "" {
			return "Invalid url in bootstrap.servers: " + textsafe.Short(s)
		}
		if host, _, _ := net.SplitHostPort(s); host == "" {
			return "Invalid url in bootstrap.servers: " + textsafe.Short(s)
		}
	}
	return ""
}

// checkTopicChars allows what Kafka allows in topic names: [a-zA-Z0-9._-].
func checkTopicChars(v string) string {
	for _, r := range v {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Sprintf("Value may contain only letters, digits, '.', '_' and '-' (it prefixes topic names), not %q", r)
		}
	}
	if len(v) > 200 {
		return "Value must be at most 200 characters (it prefixes topic names of at most 249)"
	}
	return ""
}
