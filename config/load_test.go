package config

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/tags"
)

// required are the two keys without a default, for tests about other keys.
var required = []string{"application.id=app", "bootstrap.servers=127.0.0.1:9092"}

// writeFile writes a properties file into a fresh directory and returns its path.
func writeFile(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "app.properties")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustLoad(t *testing.T, src Sources) *Config {
	t.Helper()
	c, err := Load(src)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

// loadErrors loads src and returns the error lines, failing if Load succeeds.
func loadErrors(t *testing.T, src Sources) []string {
	t.Helper()
	_, err := Load(src)
	if err == nil {
		t.Fatalf("Load(%+v) succeeded", src)
	}
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("Load error %T is not config.Errors: %v", err, err)
	}
	return strings.Split(err.Error(), "\n")
}

func TestTheKeyTableIsSortedAndComplete(t *testing.T) {
	if !slices.IsSortedFunc(keys, func(a, b *keyDef) int { return strings.Compare(a.name, b.name) }) {
		t.Error("keys is not sorted by name (lookup binary-searches it)")
	}
	var c Config
	fields := map[any]string{}
	for _, d := range keys {
		if d.doc == "" {
			t.Errorf("%s has no doc", d.name)
		}
		if d.required && d.def != "" {
			t.Errorf("%s is required and has a default", d.name)
		}
		p := d.field(&c)
		if other, dup := fields[p]; dup {
			t.Errorf("%s and %s share a field", d.name, other)
		}
		fields[p] = d.name
	}
	// Every exported field of Config (but the client tags, a key family) is
	// some key's field: a field added without a key fails here.
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		for i := range v.NumField() {
			f, sf := v.Field(i), v.Type().Field(i)
			if !sf.IsExported() || sf.Name == "ClientTags" {
				continue
			}
			if f.Kind() == reflect.Struct && (sf.Type.PkgPath() == reflect.TypeFor[Config]().PkgPath() || sf.Type == reflect.TypeFor[assignor.Settings]()) {
				walk(f, path+sf.Name+".")
				continue
			}
			found := false
			for p := range fields {
				if reflect.ValueOf(p).Pointer() == f.Addr().Pointer() && reflect.ValueOf(p).Elem().Type().Size() == f.Type().Size() {
					found = true
				}
			}
			if !found {
				t.Errorf("Config.%s%s has no key in the table", path, sf.Name)
			}
		}
	}
	walk(reflect.ValueOf(&c).Elem(), "")
}

func TestDefaults(t *testing.T) {
	c := mustLoad(t, Sources{Set: required})
	wantStateDir, _ := defaultStateDir()
	checks := []struct {
		name      string
		got, want any
	}{
		{"num.standby.replicas", c.Placement.NumStandbyReplicas, 0},
		{"acceptable.recovery.lag", c.Placement.AcceptableRecoveryLag, int64(10000)},
		{"max.warmup.replicas", c.Placement.MaxWarmupReplicas, 2},
		{"probing.rebalance.interval.ms", c.ProbingRebalanceInterval, 10 * time.Minute},
		{"num.stream.threads", c.NumStreamThreads, runtime.NumCPU()},
		{"state.dir", c.StateDir, wantStateDir},
		{"state.cleanup.delay.ms", c.StateCleanupDelay, 10 * time.Minute},
		{"statestore.cache.max.bytes", c.StatestoreCacheMaxBytes, int64(10485760)},
		{"commit.interval.ms", c.CommitInterval, 30 * time.Second},
		{"processing.guarantee", c.ProcessingGuarantee, AtLeastOnce},
		{"replication.factor", c.ReplicationFactor, -1},
		{"session.timeout.ms", c.SessionTimeout, 10 * time.Second},
		{"shutdown.timeout.ms", c.ShutdownTimeout, 30 * time.Second},
		{"partitioner", c.Partitioner, Murmur2},
		{"processing.exception.handler", c.ProcessingExceptionHandler, HandlerDLQ},
		{"errors.dead.letter.queue.topic.name", c.DeadLetterQueueTopic, "app-dlq"},
		{"client.rack.tag", c.Placement.ClientRackTag, "zone"},
		{"changelog.leader.alignment", c.ChangelogLeaderAlignment, true},
		{"security.protocol", c.Security.Protocol, Plaintext},
		{"sasl.mechanism", c.Security.SASLMechanism, Plain},
		{"http.listen", c.HTTP.Listen, ":8080"},
		{"log.format", c.LogFormat, LogText},
		{"log.level", c.LogLevel, slog.LevelInfo},
		{"state.leveldb.compression", c.LevelDB.Compression, CompressionSnappy},
		{"state.leveldb.bloom.bits", c.LevelDB.BloomBits, 10},
		{"rack.aware.assignment.tags", len(c.Placement.RackAwareAssignmentTags), 0},
		{"client tags", c.ClientTags.Len(), 0},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if got := c.Source("num.standby.replicas"); got.Kind != FromDefault || got.String() != "default" {
		t.Errorf("source of an unset key = %v", got)
	}
	if got := c.Source("num.stream.threads").String(); got != "default (the number of CPUs)" {
		t.Errorf("source of num.stream.threads = %q", got)
	}
}

func TestCommitIntervalDefaultsTo100UnderExactlyOnce(t *testing.T) {
	c := mustLoad(t, Sources{Set: append(slices.Clone(required), "processing.guarantee=exactly_once_v2")})
	if c.CommitInterval != 100*time.Millisecond || !c.ExactlyOnce() {
		t.Errorf("commit interval under EOS = %v", c.CommitInterval)
	}
	if got := c.Source("commit.interval.ms").String(); got != "default (under processing.guarantee=exactly_once_v2)" {
		t.Errorf("source = %q", got)
	}
	c = mustLoad(t, Sources{Set: append(slices.Clone(required), "processing.guarantee=exactly_once_v2", "commit.interval.ms=250")})
	if c.CommitInterval != 250*time.Millisecond {
		t.Errorf("an explicit commit interval under EOS = %v, want 250ms", c.CommitInterval)
	}
	// Each commit interval is a transaction: past the transaction timeout
	// the broker would abort every one. validate refuses what run would.
	_, err := Load(Sources{Set: append(slices.Clone(required), "processing.guarantee=exactly_once_v2", "commit.interval.ms=30000")})
	if err == nil || !strings.Contains(err.Error(), "must be below the transaction timeout (10000 ms)") {
		t.Errorf("commit.interval.ms=30000 under EOS: %v; want it refused naming the transaction timeout", err)
	}
}

func TestDoneWhenExampleIsAcceptedWithItsSources(t *testing.T) {
	file := writeFile(t,
		"# the issue's example",
		"application.id=orders",
		"bootstrap.servers=127.0.0.1:9092",
		"client.tag.zone=eu-central-1a",
		"client.tag.cluster=k8s-cluster1",
		"rack.aware.assignment.tags=zone,cluster",
		"num.standby.replicas=2",
	)
	c := mustLoad(t, Sources{File: file})
	if want := tags.MustSet("zone", "eu-central-1a", "cluster", "k8s-cluster1"); !c.ClientTags.Equal(want) {
		t.Errorf("ClientTags = %v, want %v", c.ClientTags, want)
	}
	if !slices.Equal(c.Placement.RackAwareAssignmentTags, tags.Keys{"zone", "cluster"}) || c.Placement.NumStandbyReplicas != 2 {
		t.Errorf("rack-aware tags %v, standbys %d", c.Placement.RackAwareAssignmentTags, c.Placement.NumStandbyReplicas)
	}
	if got := c.Source("client.tag.zone").String(); got != file+":4" {
		t.Errorf("source of client.tag.zone = %q, want %s:4", got, file)
	}
	if c.ClientRack() != "eu-central-1a" {
		t.Errorf("ClientRack() = %q", c.ClientRack())
	}
}

func TestPrecedenceIsDefaultThenFileThenEnvThenFlags(t *testing.T) {
	file := writeFile(t,
		"application.id=app",
		"bootstrap.servers=127.0.0.1:9092",
		"num.standby.replicas=1",
		"max.warmup.replicas=3",
		"acceptable.recovery.lag=5",
		"client.tag.zone=eu-central-1a",
	)
	env := []string{
		"PATH=/usr/bin",
		"RACKSTREAM_MAX_WARMUP_REPLICAS=4",
		"RACKSTREAM_ACCEPTABLE_RECOVERY_LAG=6",
		"RACKSTREAM_CLIENT_TAG_ZONE=eu-central-1c",
	}
	set := []string{"acceptable.recovery.lag=7", "acceptable.recovery.lag=8"}
	c := mustLoad(t, Sources{File: file, Env: env, Set: set})
	wantStateDir, wantStateNote := defaultStateDir()
	tests := []struct {
		key    string
		got    any
		want   any
		source string
	}{
		{"num.standby.replicas", c.Placement.NumStandbyReplicas, 1, file + ":3"},
		{"max.warmup.replicas", c.Placement.MaxWarmupReplicas, 4, "env RACKSTREAM_MAX_WARMUP_REPLICAS"},
		{"acceptable.recovery.lag", c.Placement.AcceptableRecoveryLag, int64(8), "flag --set"},
		{"client.tag.zone", c.ClientTags.Value("zone"), "eu-central-1c", "env RACKSTREAM_CLIENT_TAG_ZONE"},
		{"state.dir", c.StateDir, wantStateDir, "default (" + wantStateNote + ")"},
	}
	for _, tt := range tests {
		if tt.got != tt.want || c.Source(tt.key).String() != tt.source {
			t.Errorf("%s = %v from %s, want %v from %s", tt.key, tt.got, c.Source(tt.key), tt.want, tt.source)
		}
	}
}

func TestEnvironmentNamesMapBothWays(t *testing.T) {
	if got := EnvName("commit.interval.ms"); got != "RACKSTREAM_COMMIT_INTERVAL_MS" {
		t.Errorf("EnvName(commit.interval.ms) = %q", got)
	}
	if got := EnvName("client.tag.zone"); got != "RACKSTREAM_CLIENT_TAG_ZONE" {
		t.Errorf("EnvName(client.tag.zone) = %q", got)
	}
	if got := EnvName("a.b-c"); got != "RACKSTREAM_A_B_C" {
		t.Errorf("dashes become underscores: %q", got)
	}
	for _, d := range keys {
		if k, ok := KeyForEnv(EnvName(d.name)); !ok || k != d.name {
			t.Errorf("KeyForEnv(EnvName(%q)) = %q, %v", d.name, k, ok)
		}
	}
	for name, want := range map[string]string{
		"RACKSTREAM_CLIENT_TAG_ZONE":      "client.tag.zone",
		"RACKSTREAM_CLIENT_TAG_MY_RACK":   "client.tag.my_rack",
		"RACKSTREAM_NUM_STANDBY_REPLICAS": "num.standby.replicas",
	} {
		if k, ok := KeyForEnv(name); !ok || k != want {
			t.Errorf("KeyForEnv(%s) = %q, %v; want %s", name, k, ok, want)
		}
	}
	for _, name := range []string{"RACKSTREAM_TEST_BROKERS", "RACKSTREAM_KAFKA_PORT", "COMMIT_INTERVAL_MS", "rackstream_commit_interval_ms"} {
		if k, ok := KeyForEnv(name); ok {
			t.Errorf("KeyForEnv(%s) = %q, want no key", name, k)
		}
	}
	// Through Load: every key can be set from the environment.
	c := mustLoad(t, Sources{Env: []string{
		"RACKSTREAM_APPLICATION_ID=app", "RACKSTREAM_BOOTSTRAP_SERVERS=127.0.0.1:9092",
		"RACKSTREAM_STATE_LEVELDB_BLOOM_BITS=12", "RACKSTREAM_CLIENT_TAG_CLUSTER=k8s-cluster2",
	}})
	if c.LevelDB.BloomBits != 12 || c.ClientTags.Value("cluster") != "k8s-cluster2" || c.ApplicationID != "app" {
		t.Errorf("env not applied: bloom %d, tags %v, app %q", c.LevelDB.BloomBits, c.ClientTags, c.ApplicationID)
	}
}

func TestUnrelatedEnvironmentIsIgnoredAndNearMissesWarned(t *testing.T) {
	c := mustLoad(t, Sources{Set: required, Env: []string{
		"RACKSTREAM_TEST_BROKERS=127.0.0.1:1",
		"RACKSTREAM_KAFKA_PORT=9092",
		"RACKSTREAM_NUM_STANDBY_REPLICA=2",
		"HOME=/root",
	}})
	want := []string{"env RACKSTREAM_NUM_STANDBY_REPLICA: not a configuration variable; did you mean RACKSTREAM_NUM_STANDBY_REPLICAS?"}
	if !slices.Equal(c.Warnings(), want) {
		t.Errorf("Warnings() = %q, want %q", c.Warnings(), want)
	}
	if c.Placement.NumStandbyReplicas != 0 {
		t.Errorf("a misspelt variable was applied")
	}
}

func TestUnknownKeys(t *testing.T) {
	tests := []struct {
		name string
		line string
		want string
	}{
		{"a misspelt key suggests the nearest", "num.standby.replica=2", `:3: unknown configuration key "num.standby.replica"; did you mean "num.standby.replicas"?`},
		{"a transposition", "comit.interval.ms=5", `:3: unknown configuration key "comit.interval.ms"; did you mean "commit.interval.ms"?`},
		{"a misspelt tag prefix keeps the tag key", "client.tags.zone=a", `:3: unknown configuration key "client.tags.zone"; did you mean "client.tag.zone"?`},
		{"a truncated key suggests the key it starts", "num.standbys=1", `:3: unknown configuration key "num.standbys"; did you mean "num.standby.replicas"?`},
		{"nothing near: no suggestion", "frobnicate=1", `:3: unknown configuration key "frobnicate"`},
		{"KIP-708 draft name", "task.assignment.rack.awareness=zone", `:3: unknown configuration key "task.assignment.rack.awareness": it is a draft name from KIP-708 that Kafka never shipped; use rack.aware.assignment.tags`},
		{"KIP-708 other draft name", "taskrack.aware.assignment.rack.awarenesstags=zone", `unknown configuration key "taskrack.aware.assignment.rack.awarenesstags": it is a draft name from KIP-708 that Kafka never shipped; use rack.aware.assignment.tags`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, append(slices.Clone(required), tt.line)...)
			errs := loadErrors(t, Sources{File: file})
			if len(errs) != 1 || !strings.HasPrefix(errs[0], file) || !strings.Contains(errs[0], tt.want) {
				t.Errorf("errors %q, want one starting with %s and containing %q", errs, file, tt.want)
			}
			if tt.want == `:3: unknown configuration key "frobnicate"` && strings.Contains(errs[0], "did you mean") {
				t.Errorf("suggested a key for a word unlike any: %q", errs[0])
			}
		})
	}
}

func TestBadValuesNameKeyLineValueAndWhatIsAllowed(t *testing.T) {
	tests := []struct {
		line string
		want string
	}{
		{"num.standby.replicas=-1", "Invalid value -1 for configuration num.standby.replicas: Value must be at least 0"},
		{"num.standby.replicas=two", "Invalid value two for configuration num.standby.replicas: Not a number of type INT"},
		{"num.standby.replicas=99999999999", "Invalid value 99999999999 for configuration num.standby.replicas: Not a number of type INT"},
		{"acceptable.recovery.lag=-5", "Invalid value -5 for configuration acceptable.recovery.lag: Value must be at least 0"},
		{"max.warmup.replicas=0", "Invalid value 0 for configuration max.warmup.replicas: Value must be at least 1"},
		{"probing.rebalance.interval.ms=59999", "Invalid value 59999 for configuration probing.rebalance.interval.ms: Value must be at least 60000"},
		{"commit.interval.ms=1.5", "Invalid value 1.5 for configuration commit.interval.ms: Not a number of type LONG"},
		{"num.stream.threads=0", "Invalid value 0 for configuration num.stream.threads: Value must be at least 1"},
		{"state.leveldb.bloom.bits=65", "Invalid value 65 for configuration state.leveldb.bloom.bits: Value must be no more than 64"},
		{"replication.factor=0", "Invalid value 0 for configuration replication.factor: Value must be -1 (the broker's default) or at least 1"},
		{"replication.factor=-2", "Invalid value -2 for configuration replication.factor: Value must be at least -1"},
		{"security.protocol=TLS", "Invalid value TLS for configuration security.protocol: String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"},
		{"sasl.mechanism=GSSAPI", "Invalid value GSSAPI for configuration sasl.mechanism: String must be one of: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"},
		{"processing.guarantee=exactly_once", "Invalid value exactly_once for configuration processing.guarantee: String must be one of: at_least_once, exactly_once_v2, at_most_once"},
		{"partitioner=random", "Invalid value random for configuration partitioner: String must be one of: murmur2, fnv1a, crc32"},
		{"processing.exception.handler=ignore", "Invalid value ignore for configuration processing.exception.handler: String must be one of: dlq, skip (alias continue), fail"},
		{"log.format=xml", "Invalid value xml for configuration log.format: String must be one of: text, json"},
		{"changelog.leader.alignment=yes", "Invalid value yes for configuration changelog.leader.alignment: String must be one of: false, true"},
		{"log.level=verbose", "Invalid value verbose for configuration log.level: String must be one of: debug, info, warn, error"},
		{"processor.type=fold", `Invalid value fold for configuration processor.type: String must be one of: "", latest, count, sum, join`},
		{"state.dir=", `Invalid value "" for configuration state.dir: Value must not be empty`},
		{"http.listen=8080", "Invalid value 8080 for configuration http.listen: Value must be host:port"},
		{"application.server=host:99999", "Invalid value host:99999 for configuration application.server: Value must be host:port with a port from 0 to 65535"},
		{"application.id=my app", `Invalid value my app for configuration application.id: Value may contain only letters, digits, '.', '_' and '-' (it prefixes topic names), not ' '`},
		{"bootstrap.servers=broker", "Invalid value broker for configuration bootstrap.servers: Invalid url in bootstrap.servers: broker"},
		{"bootstrap.servers= , ", `Invalid value ", " for configuration bootstrap.servers: Value must not be empty`},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			file := writeFile(t, append(slices.Clone(required), tt.line)...)
			errs := loadErrors(t, Sources{File: file})
			if want := file + ":3: " + tt.want; len(errs) != 1 || errs[0] != want {
				t.Errorf("errors:\n %q\nwant:\n %q", errs, want)
			}
		})
	}
}

func TestValuesAreNormalised(t *testing.T) {
	c := mustLoad(t, Sources{Set: append(slices.Clone(required),
		"security.protocol=sasl_ssl", "sasl.mechanism=scram-sha-512", "sasl.username=u", "sasl.password=p",
		"processing.exception.handler=continue", "log.level=DEBUG", "num.standby.replicas= 3 ",
		"bootstrap.servers=a:1, b:2 ,", "client.tag.zone= z1 ",
	)})
	if c.Security.Protocol != SASLSSL || c.Security.SASLMechanism != ScramSHA512 || !c.Security.UsesSASL() || !c.Security.UsesTLS() {
		t.Errorf("security = %+v", c.Security)
	}
	if c.ProcessingExceptionHandler != HandlerSkip {
		t.Errorf("continue is an alias of skip: got %q", c.ProcessingExceptionHandler)
	}
	if c.LogLevel != slog.LevelDebug || c.Placement.NumStandbyReplicas != 3 {
		t.Errorf("log level %v, standbys %d", c.LogLevel, c.Placement.NumStandbyReplicas)
	}
	if !slices.Equal(c.BootstrapServers, []string{"a:1", "b:2"}) {
		t.Errorf("bootstrap servers %q", c.BootstrapServers)
	}
	if c.ClientTags.Value("zone") != "z1" {
		t.Errorf("tag values are trimmed: %q", c.ClientTags.Value("zone"))
	}
}

func TestErrorsComeInSourceOrder(t *testing.T) {
	file := writeFile(t, "max.warmup.replicas=0", "application.id=app", "bootstrap.servers=127.0.0.1:9092", "client.tag.zone=", "bogus=1")
	errs := loadErrors(t, Sources{File: file, Env: []string{"RACKSTREAM_NUM_STANDBY_REPLICAS=-1"}, Set: []string{"log.level=x"}})
	var where []string
	for _, e := range errs {
		where = append(where, strings.SplitN(strings.TrimPrefix(e, file), ": ", 2)[0])
	}
	want := []string{":1", ":4", ":5", "env RACKSTREAM_NUM_STANDBY_REPLICAS", "flag --set"}
	if !slices.Equal(where, want) {
		t.Errorf("errors come from %q, want %q:\n%s", where, want, strings.Join(errs, "\n"))
	}
}

func TestRequiredKeysAreReportedWithEveryOtherError(t *testing.T) {
	file := writeFile(t, "num.standby.replicas=-1", "bogus.key=1")
	errs := loadErrors(t, Sources{File: file})
	want := []string{
		file + ":1: Invalid value -1 for configuration num.standby.replicas: Value must be at least 0",
		file + `:2: unknown configuration key "bogus.key"`,
		`Missing required configuration "application.id" which has no default value.`,
		`Missing required configuration "bootstrap.servers" which has no default value.`,
	}
	if !slices.Equal(errs, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
	}
	file = writeFile(t, "application.id=", "bootstrap.servers=127.0.0.1:9092")
	if errs := loadErrors(t, Sources{File: file}); len(errs) != 1 || errs[0] != file+`:1: Invalid value "" for configuration application.id: Value must not be empty` {
		t.Errorf("empty required value: %q", errs)
	}
}

func TestClientTagLimitsNameTheKeyAndLine(t *testing.T) {
	base := append(slices.Clone(required), "client.tag.zone=eu-central-1a", "client.tag.cluster=k8s-cluster1")
	tests := []struct {
		name  string
		lines []string
		want  []string
	}{
		{
			"a rack-aware key without its client tag",
			[]string{"rack.aware.assignment.tags=zone,rack"},
			[]string{":5: Invalid value [zone, rack] for configuration rack.aware.assignment.tags: Contains invalid value [rack] which doesn't have corresponding tag set via [client.tag.] prefix."},
		},
		{
			"a sixth client tag",
			[]string{"client.tag.a=1", "client.tag.b=2", "client.tag.c=3", "client.tag.d=4"},
			[]string{":8: At most 5 client tags can be specified using client.tag. prefix."},
		},
		{
			"an over-long tag value",
			[]string{"client.tag.region=" + strings.Repeat("x", 31)},
			[]string{":5: client.tag.region: Invalid value " + strings.Repeat("x", 31) + " for configuration client.tag.: Tag value exceeds maximum length of 30."},
		},
		{
			"an over-long tag key",
			[]string{"client.tag.abcdefghijklmnopqrstu=x"},
			[]string{":5: client.tag.abcdefghijklmnopqrstu: Invalid value abcdefghijklmnopqrstu for configuration client.tag.: Tag key exceeds maximum length of 20."},
		},
		{
			"an empty tag value",
			[]string{"client.tag.rack="},
			[]string{`:5: client.tag.rack: Invalid value "" for configuration client.tag.: Tag value must not be empty.`},
		},
		{
			"six rack-aware keys",
			[]string{"client.tag.a=1", "client.tag.b=2", "client.tag.c=3", "rack.aware.assignment.tags=zone,cluster,a,b,c,zone"},
			[]string{
				":8: Invalid value [zone, cluster, a, b, c, zone] for configuration rack.aware.assignment.tags: Contains duplicate value [zone].",
				":8: Invalid value [zone, cluster, a, b, c, zone] for configuration rack.aware.assignment.tags: exceeds maximum list size of [5].",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, append(slices.Clone(base), tt.lines...)...)
			errs := loadErrors(t, Sources{File: file})
			var want []string
			for _, w := range tt.want {
				want = append(want, file+w)
			}
			if !slices.Equal(errs, want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
			}
		})
	}
	// A sixth tag from the environment is blamed on its variable.
	file := writeFile(t, append(slices.Clone(base), "client.tag.a=1", "client.tag.b=2", "client.tag.c=3")...)
	errs := loadErrors(t, Sources{File: file, Env: []string{"RACKSTREAM_CLIENT_TAG_D=4"}})
	if want := "env RACKSTREAM_CLIENT_TAG_D: At most 5 client tags can be specified using client.tag. prefix."; len(errs) != 1 || errs[0] != want {
		t.Errorf("errors %q, want %q", errs, want)
	}
	// Overriding one of five tags is not a sixth.
	mustLoad(t, Sources{File: file, Env: []string{"RACKSTREAM_CLIENT_TAG_ZONE=eu-central-1c"}})
}

func TestCombinationsAreChecked(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		want string
	}{
		{"SASL without credentials", []string{"security.protocol=SASL_PLAINTEXT"}, "flag --set: security.protocol=SASL_PLAINTEXT requires sasl.username and sasl.password (or sasl.jaas.config)"},
		{"SASL without a password", []string{"security.protocol=SASL_SSL", "sasl.username=u"}, "flag --set: security.protocol=SASL_SSL requires sasl.password (or sasl.jaas.config)"},
		{"a client certificate without its key", []string{"ssl.certificate.location=/c.pem"}, "flag --set: ssl.certificate.location is set but ssl.key.location is not: both or neither"},
		{"an HTTP key without its certificate", []string{"http.tls.key=/k.pem"}, "flag --set: http.tls.key is set but http.tls.cert is not: both or neither"},
		{"client certificates over plain HTTP", []string{"http.tls.client.auth=require", "http.tls.client.ca=/ca.pem"}, "flag --set: http.tls.client.auth=require requires http.tls.cert and http.tls.key (client certificates are verified over HTTPS only)"},
		{"client certificates without their CA", []string{"http.tls.cert=/c.pem", "http.tls.key=/k.pem", "http.tls.client.auth=request"}, "flag --set: http.tls.client.auth=request requires http.tls.client.ca"},
		{"a client CA without client certificates", []string{"http.tls.cert=/c.pem", "http.tls.key=/k.pem", "http.tls.client.ca=/ca.pem"}, "flag --set: http.tls.client.ca is set but http.tls.client.auth is none: set it to request or require"},
		{"a processor without input", []string{"processor.type=count"}, "flag --set: processor.type=count requires processor.input.topic"},
		{"a join without its table", []string{"processor.type=join", "processor.input.topic=in", "processor.output.topic=out"}, "flag --set: processor.type=join requires processor.table.topic, the table to join"},
		{"a join without output", []string{"processor.type=join", "processor.input.topic=in", "processor.table.topic=t"}, "flag --set: processor.type=join requires processor.output.topic, where the enriched records go"},
		{"a join of its own input", []string{"processor.type=join", "processor.input.topic=in", "processor.table.topic=in", "processor.output.topic=out"}, "flag --set: processor.table.topic in is also the input or output topic"},
		{"a join with a changelog", []string{"processor.type=join", "processor.input.topic=in", "processor.table.topic=t", "processor.output.topic=out", "processor.changelog.topic=c"}, "flag --set: processor.changelog.topic has no effect with processor.type=join: the join keeps no store of its own (a co-partitioned table's topic is its store's changelog)"},
		{"a join key field on a co-partitioned table", []string{"processor.type=join", "processor.input.topic=in", "processor.table.topic=t", "processor.output.topic=out", "processor.join.key.field=user"}, "flag --set: processor.join.key.field needs processor.table.global=true: a co-partitioned table is looked up by the record's key (another key may be in another task's partition)"},
		{"a --set without '='", []string{"num.standby.replicas"}, `flag --set: --set "num.standby.replicas": want key=value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := loadErrors(t, Sources{Set: append(slices.Clone(required), tt.set...)})
			if len(errs) != 1 || errs[0] != tt.want {
				t.Errorf("errors %q, want %q", errs, tt.want)
			}
		})
	}
}

func TestSyntaxErrorsAndUnreadableFiles(t *testing.T) {
	file := writeFile(t, "application.id=a\\u00", "bootstrap.servers=127.0.0.1:9092")
	errs := loadErrors(t, Sources{File: file})
	if len(errs) < 1 || !strings.HasPrefix(errs[0], file+":1: application.id: malformed \\uxxxx encoding") {
		t.Errorf("errors %q", errs)
	}
	errs = loadErrors(t, Sources{File: filepath.Join(t.TempDir(), "missing.properties")})
	if len(errs) != 1 || !strings.Contains(errs[0], "read configuration:") || !strings.Contains(errs[0], "missing.properties") {
		t.Errorf("errors %q", errs)
	}
}

func TestSecretsAreNeverShown(t *testing.T) {
	const pw, token, tagSecret = "hunter2-sasl", "tok-3141", "s3cr3t"
	c := mustLoad(t, Sources{Set: append(slices.Clone(required),
		"security.protocol=SASL_SSL", "sasl.username=alice", "sasl.password="+pw,
		"http.auth.token="+token, "client.tag.password="+tagSecret,
	)})
	if c.Security.SASLPassword.Reveal() != pw || c.HTTP.AuthToken.Reveal() != token {
		t.Fatal("Reveal does not return the secret")
	}
	var out bytes.Buffer
	if err := c.WriteEffective(&out); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&out, "%v %+v %#v %s %v %+v %#v\n", c, c, c, *c, *c, *c, *c)
	fmt.Fprintf(&out, "%v %s %#v %v\n", c.Security, c.Security.SASLPassword, c.Security, c.HTTP)
	slog.New(slog.NewJSONHandler(&out, nil)).Info("cfg", "config", c, "value", *c, "pw", c.Security.SASLPassword)
	slog.New(slog.NewTextHandler(&out, nil)).Info("cfg", "config", c, "security", c.Security)
	for _, e := range c.Entries() {
		fmt.Fprintln(&out, e.Key, e.Value)
	}
	text := out.String()
	for _, secret := range []string{pw, token, tagSecret} {
		if strings.Contains(text, secret) {
			t.Errorf("secret %q leaked in:\n%s", secret, text)
		}
	}
	for _, want := range []string{"sasl.password  [hidden]", "http.auth.token  [hidden]", "client.tag.password  [hidden]", "sasl.username  alice"} {
		if !strings.Contains(strings.Join(strings.Fields(text), "  "), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// A secret tag's value is masked in Kafka's messages about it.
	long := strings.Repeat("p", 31)
	_, err := Load(Sources{Set: []string{"client.tag.password=" + long}})
	if err == nil || strings.Contains(err.Error(), long) || !strings.Contains(err.Error(), "Invalid value [hidden] for configuration client.tag.: Tag value exceeds maximum length of 30.") {
		t.Errorf("error %v leaks or is missing", err)
	}
	// A secret in a bad --set argument is masked too.
	_, err = Load(Sources{Set: []string{"sasl.password" + pw}})
	if err == nil || strings.Contains(err.Error(), pw) {
		t.Errorf("error %v leaks or is missing", err)
	}
}

func TestEffectiveConfigListsEveryKeySorted(t *testing.T) {
	c := mustLoad(t, Sources{Set: append(slices.Clone(required), "client.tag.zone=z1")})
	es := c.Entries()
	if len(es) != len(keys)+1 {
		t.Errorf("%d entries for %d keys and one tag", len(es), len(keys))
	}
	if !slices.IsSortedFunc(es, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) }) {
		t.Error("entries not sorted")
	}
	var out bytes.Buffer
	c.WriteEffective(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(es)+1 || !strings.HasPrefix(lines[0], "KEY") {
		t.Errorf("WriteEffective printed %d lines for %d entries", len(lines), len(es))
	}
	if !regexp.MustCompile(`(?m)^application\.server +"" +default$`).MatchString(out.String()) {
		t.Errorf("an empty value should print as \"\":\n%s", out.String())
	}
	// String is properties syntax that reads back as the same values.
	props, errs := ParseProperties([]byte(c.String()))
	if len(errs) > 0 || len(props) != len(es) {
		t.Fatalf("String() does not read back: %d props, %v", len(props), errs)
	}
	for i, p := range props {
		if p.Key != es[i].Key || p.Value != es[i].Value {
			t.Errorf("String() line %d = %s=%s, want %s=%s", i, p.Key, p.Value, es[i].Key, es[i].Value)
		}
	}
}

func TestStringOfAnEffectiveConfigLoadsBackToTheSameConfig(t *testing.T) {
	c := mustLoad(t, Sources{Set: append(slices.Clone(required), "client.tag.zone=z1", "num.standby.replicas=2", "log.level=warn", "bootstrap.servers=a:1,b:2")})
	p := filepath.Join(t.TempDir(), "again.properties")
	os.WriteFile(p, []byte(c.String()), 0o600)
	again := mustLoad(t, Sources{File: p})
	if again.String() != c.String() {
		t.Errorf("reloaded config differs:\n%s\nvs\n%s", again, c)
	}
}

func TestSourceStrings(t *testing.T) {
	for s, want := range map[Source]string{
		{}:                                   "default",
		{Note: "the number of CPUs"}:         "default (the number of CPUs)",
		{Kind: FromFile, File: "a", Line: 3}: "a:3",
		{Kind: FromEnv, Env: "RACKSTREAM_X"}: "env RACKSTREAM_X",
		{Kind: FromFlag}:                     "flag --set",
	} {
		if s.String() != want {
			t.Errorf("%+v.String() = %q, want %q", s, s.String(), want)
		}
	}
}

// FuzzLoad: any file, variable and flag is either accepted as a
// configuration whose printed form loads back the same, or rejected with
// errors that each say where they come from; Load never panics.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("application.id=a\nbootstrap.servers=h:1\nclient.tag.zone=z\nrack.aware.assignment.tags=zone\n"), "num.standby.replicas=2", "RACKSTREAM_CLIENT_TAG_ZONE=y")
	f.Add([]byte("num.standby.replica=-1\nclient.tag.=\\u00e4\n"), "log.level=loud", "RACKSTREAM_COMMIT_INTERVAL_MS=x")
	f.Add([]byte("application.id a\nbootstrap.servers:h:1\nsecurity.protocol=SASL_SSL\n"), "sasl.password=p", "RACKSTREAM_SASL_USERNAME=u")
	f.Fuzz(func(t *testing.T, data []byte, set, env string) {
		src := Sources{File: "fuzz.properties", Env: []string{env}, Set: []string{set}}
		c, err := load(src, data)
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %T without Errors: %v", err, err)
			}
			for _, e := range es {
				if e.Msg == "" {
					t.Fatalf("empty message in %v", es)
				}
				if e.Source.Kind == FromFile && (e.Source.Line < 1 || e.Source.File != "fuzz.properties") {
					t.Fatalf("bad file source %+v", e.Source)
				}
			}
			return
		}
		again, err := load(Sources{File: "again.properties"}, []byte(c.String()))
		if err != nil {
			if strings.Contains(c.String(), masked) {
				return // masked secrets do not load back as themselves
			}
			t.Fatalf("printed config does not load back: %v\n%s", err, c)
		}
		if !strings.Contains(c.String(), masked) && again.String() != c.String() {
			t.Fatalf("reloaded config differs:\n%s\nvs\n%s", again, c)
		}
	})
}

func TestAKeySetTwiceInTheFileIsWarnedAndTheLaterWins(t *testing.T) {
	file := writeFile(t, append(slices.Clone(required), "num.standby.replicas=1", "num.standby.replicas=2")...)
	c := mustLoad(t, Sources{File: file})
	if c.Placement.NumStandbyReplicas != 2 || c.Source("num.standby.replicas").Line != 4 {
		t.Errorf("standbys %d from %v, want 2 from line 4", c.Placement.NumStandbyReplicas, c.Source("num.standby.replicas"))
	}
	want := []string{file + ":4: num.standby.replicas is also set on line 3; the later line wins"}
	if !slices.Equal(c.Warnings(), want) {
		t.Errorf("Warnings() = %q, want %q", c.Warnings(), want)
	}
}
