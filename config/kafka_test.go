package config

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// TestKafkaKeysAreKafkas regenerates kafka_keys.txt from the Kafka jars
// (kafkakeys/gen.sh: Java and Maven) and compares it with the checked-in
// file. Outside CI it skips when Java or Maven is missing; under CI (CI
// non-empty) .ci/run installs both, so it must run.
func TestKafkaKeysAreKafkas(t *testing.T) {
	t.Parallel() // a JVM starts: overlap it with the other tests
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			kafkatest.SkipOrFail(t, "%s not found: cannot regenerate kafka_keys.txt (.ci/run installs it)", tool)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("kafkakeys", "gen.sh"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafkakeys/gen.sh: %v\n%s", err, stderr.String())
	}
	if stdout.String() != kafkaKeysText {
		t.Errorf("kafka_keys.txt differs from what kafkakeys/gen.sh generates from the jars; run\n\tconfig/kafkakeys/gen.sh > config/kafka_keys.txt")
	}
}

func TestKafkaKeysFileIsWellFormed(t *testing.T) {
	ks := kafkaKeys()
	if len(ks) < 200 {
		t.Fatalf("kafka_keys.txt lists %d keys, want Kafka's 200 and more", len(ks))
	}
	// Keys every Kafka Streams application knows, with their owners.
	for key, owner := range map[string]string{
		"application.id": "streams", "default.key.serde": "streams", "num.stream.threads": "streams",
		"acks": "producer", "max.poll.records": "consumer", "sasl.jaas.config": "admin", "cleanup.policy": "topic",
	} {
		if !slices.Contains(ks[key].owners, owner) {
			t.Errorf("%s: owners %v, want %s among them", key, ks[key].owners, owner)
		}
	}
	// Every key of our table that Kafka has keeps Kafka's meaning of a
	// secret.
	for _, d := range keys {
		if k, ok := ks[d.name]; ok && k.secret && !d.secret {
			t.Errorf("%s is a password to Kafka but not secret in the key table", d.name)
		}
	}
}

// TestAKafkaStreamsPropertiesFileLoadsAsItIs loads a realistic Kafka Streams
// application's file: the keys we implement take effect, Kafka's others
// are listed in one warning, and nothing is an error.
func TestAKafkaStreamsPropertiesFileLoadsAsItIs(t *testing.T) {
	file := filepath.Join("testdata", "kafka-streams.properties")
	c, err := Load(Sources{File: file})
	if err != nil {
		t.Fatalf("a Kafka Streams properties file does not load:\n%v", err)
	}
	if c.ApplicationID != "orders-enricher" || len(c.BootstrapServers) != 3 || c.NumStreamThreads != 4 ||
		c.Placement.NumStandbyReplicas != 1 || c.ClientTags.Value("zone") != "eu-west-1a" || c.CommitInterval != 10*time.Second ||
		c.SessionTimeout != 45*time.Second || c.ReplicationFactor != 3 || c.ProcessingExceptionHandler != HandlerSkip {
		t.Errorf("the keys we implement did not take effect:\n%s", c)
	}
	sec := c.Security
	user, pass := sec.SASLCredentials()
	if sec.Protocol != SASLSSL || sec.SASLMechanism != ScramSHA512 || user != "orders-enricher" || pass.Reveal() != "s3cr3t-Pa55" {
		t.Errorf("SASL from sasl.jaas.config: %s %s user %q", sec.Protocol, sec.SASLMechanism, user)
	}
	if sec.SSLTruststoreType != StorePKCS12 || sec.SSLTruststoreLocation != "/etc/kafka/secrets/truststore.p12" || sec.SSLTruststorePassword.Reveal() != "changeit" || !sec.VerifyHostname() {
		t.Errorf("trust store settings: %+v", sec)
	}
	ws := c.Warnings()
	if len(ws) != 1 {
		t.Fatalf("warnings %q, want one listing the ignored keys", ws)
	}
	for _, want := range []string{
		"18 Kafka settings mean nothing to Rackstream and are ignored: client.id (" + file + ":6), default.key.serde (" + file + ":9)",
		"topology.optimization", "metrics.recording.level", "producer.compression.type", "consumer.max.poll.records",
		"main.consumer.fetch.max.wait.ms", "restore.consumer.max.poll.records", "admin.request.timeout.ms", "topic.min.insync.replicas (" + file + ":45)",
	} {
		if !strings.Contains(ws[0], want) {
			t.Errorf("warning lacks %q:\n%s", want, ws[0])
		}
	}
	// Nothing secret is shown anywhere.
	text, _ := secretOutputs(Sources{File: file})
	for _, secret := range []string{"s3cr3t-Pa55", "changeit", "ScramLoginModule"} {
		if strings.Contains(text, secret) {
			t.Errorf("%q is shown", secret)
		}
	}
}

func TestKafkaKeysAreAcceptedWithTheirPrefixesOnly(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want string // "" when ignored with the warning
	}{
		{"default.value.serde", ""},
		{"producer.batch.size", ""},
		{"global.consumer.fetch.min.bytes", ""},
		{"topic.retention.ms", ""},
		{"max.poll.records", ""},
		{"producer.max.poll.records", `unknown configuration key "producer.max.poll.records"`}, // a consumer key
		{"retention.ms", `unknown configuration key "retention.ms"`},                           // a topic key needs topic.
		{"topic.acks", `unknown configuration key "topic.acks"`},
		{"default.key.sered", `unknown configuration key "default.key.sered"; did you mean "default.key.serde"?`},
		{"num.stream.thread", `did you mean "num.stream.threads"?`},
	} {
		c, err := Load(Sources{Set: append(slices.Clone(required), tc.key+"=1")})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.key, err)
		case tc.want == "" && (len(c.Warnings()) != 1 || !strings.Contains(c.Warnings()[0], "1 Kafka setting means nothing to Rackstream and is ignored: "+tc.key+" (flag --set)")):
			t.Errorf("%s: warnings %q", tc.key, c.Warnings())
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.key, err, tc.want)
		}
	}
}

func TestParseJAAS(t *testing.T) {
	j, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule  Required
		username="alice" password="p\"w;d=x" extra=bare ;  `)
	if err != nil || j.Module != PlainLoginModule || j.Flag != "required" || j.Options["username"] != "alice" || j.Options["password"] != `p"w;d=x` || j.Options["extra"] != "bare" {
		t.Errorf("ParseJAAS = %+v, %v", j, err)
	}
	j, err = ParseJAAS(ScramLoginModule + ` required password="a\tb\\c\101\7x\q";`)
	if err != nil || j.Options["password"] != "a\tb\\cA\ax"+"q" {
		t.Errorf("escapes as Java's StreamTokenizer reads them: %q, %v", j.Options["password"], err)
	}
	const secret = "Zq9-jaas-secret"
	for _, bad := range []struct{ in, want string }{
		{"", "expected a login module class, found the end"},
		{ScramLoginModule, "expected a control flag"},
		{ScramLoginModule + " always;", "the control flag after the login module must be"},
		{ScramLoginModule + ` required username="u" password="` + secret, "the value of option password has no closing quote"},
		{ScramLoginModule + ` required username="u" password="` + secret + `"`, "expected an option name=\"value\" or the final ';', found the end"},
		{ScramLoginModule + ` required username="u" ` + secret + `;`, "expected '=' after an option name at character"},
		{ScramLoginModule + ` required password="` + secret + `"; ` + secret, "holds one login module: text follows the ';'"},
	} {
		_, err := ParseJAAS(bad.in)
		if err == nil || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), secret) {
			t.Errorf("ParseJAAS(%q) = %v, want an error containing %q and not the secret", bad.in, err, bad.want)
		}
	}
}

// TestJavaSecuritySettingsAreChecked: the JAAS line and the stores, with
// the combinations that cannot both hold.
func TestJavaSecuritySettingsAreChecked(t *testing.T) {
	const jaas = `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="Zq9-pw";`
	for _, tc := range []struct {
		name string
		set  []string
		want string // "" for none
	}{
		{"JAAS for PLAIN", []string{"security.protocol=SASL_SSL", jaas}, ""},
		{"JAAS with SCRAM's mechanism", []string{"security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-256", jaas}, "sasl.jaas.config's login module does not match sasl.mechanism=SCRAM-SHA-256"},
		{"JAAS and a user name", []string{"security.protocol=SASL_SSL", jaas, "sasl.username=u"}, "sasl.jaas.config and sasl.username or sasl.password are both set"},
		{"an unsupported module", []string{`sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required;`}, "com.sun.security.auth.module.Krb5LoginModule is not supported"},
		{"OAUTHBEARER's module with SCRAM", []string{"security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512", `sasl.jaas.config=` + OAuthBearerLoginModule + ` required;`}, "sasl.jaas.config's login module does not match sasl.mechanism=SCRAM-SHA-512"},
		{"SCRAM's module with OAUTHBEARER", []string{"security.protocol=SASL_SSL", "sasl.mechanism=OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url=https://idp.example/token",
			"sasl.oauthbearer.client.credentials.client.id=app", "sasl.oauthbearer.client.credentials.client.secret=Zq9-pw", `sasl.jaas.config=` + ScramLoginModule + ` required username="u" password="Zq9-pw";`}, "sasl.jaas.config's login module does not match sasl.mechanism=OAUTHBEARER"},
		{"OAUTHBEARER from the JAAS options", []string{"security.protocol=SASL_SSL", "sasl.mechanism=OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url=https://idp.example/token",
			`sasl.jaas.config=` + OAuthBearerLoginModule + ` required clientId="app" clientSecret="Zq9-pw" scope="kafka";`}, ""},
		{"OAUTHBEARER's module without a secret anywhere", []string{"security.protocol=SASL_SSL", "sasl.mechanism=OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url=https://idp.example/token",
			`sasl.jaas.config=` + OAuthBearerLoginModule + ` required clientId="app";`}, "sasl.mechanism=OAUTHBEARER requires sasl.oauthbearer.client.credentials.client.secret"},
		{"a module unknown to all", []string{`sasl.jaas.config=Zq9-pw required;`}, "Invalid value [hidden] for configuration sasl.jaas.config: this login module is not supported"},
		{"JAAS without a password", []string{`sasl.jaas.config=` + ScramLoginModule + ` required username="u";`}, "needs the options username and password"},
		{"a PEM trust store inline", []string{"ssl.truststore.type=PEM", "ssl.truststore.certificates=-----BEGIN CERTIFICATE-----"}, ""},
		{"inline certificates need PEM", []string{"ssl.truststore.certificates=x"}, "ssl.truststore.certificates requires ssl.truststore.type=PEM"},
		{"a trust store and a CA file", []string{"ssl.truststore.location=/t.p12", "ssl.ca.location=/ca.pem"}, "ssl.ca.location and ssl.truststore.* both name"},
		{"a trust store file and inline", []string{"ssl.truststore.type=PEM", "ssl.truststore.location=/t.pem", "ssl.truststore.certificates=x"}, "ssl.truststore.location and ssl.truststore.certificates are both set"},
		{"an inline key without its chain", []string{"ssl.keystore.type=PEM", "ssl.keystore.key=x"}, "ssl.keystore.key and ssl.keystore.certificate.chain go together"},
		{"an inline key needs PEM", []string{"ssl.keystore.key=x", "ssl.keystore.certificate.chain=y"}, "ssl.keystore.key requires ssl.keystore.type=PEM"},
		{"a key store and PEM files", []string{"ssl.keystore.location=/k.p12", "ssl.certificate.location=/c.pem", "ssl.key.location=/k.pem"}, "ssl.certificate.location/ssl.key.location and ssl.keystore.* both name"},
		{"store types", []string{"ssl.keystore.type=pkcs12", "ssl.truststore.type=pem"}, ""},
		{"hostname verification off", []string{"ssl.endpoint.identification.algorithm="}, ""},
		{"an unknown algorithm", []string{"ssl.endpoint.identification.algorithm=ldaps"}, "Invalid value ldaps for configuration ssl.endpoint.identification.algorithm"},
	} {
		c, err := Load(Sources{Set: append(slices.Clone(required), tc.set...)})
		var errs Errors
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.As(err, &errs) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "Zq9-pw"):
			t.Errorf("%s: the password leaked: %v", tc.name, err)
		case tc.name == "store types" && (c.Security.SSLKeystoreType != StorePKCS12 || c.Security.SSLTruststoreType != StorePEM):
			t.Errorf("store types %s, %s", c.Security.SSLKeystoreType, c.Security.SSLTruststoreType)
		case tc.name == "OAUTHBEARER from the JAAS options":
			if id, secret, scope := c.Security.OAuthClientCredentials(); id != "app" || secret.Reveal() != "Zq9-pw" || scope != "kafka" {
				t.Errorf("%s: client %q scope %q", tc.name, id, scope)
			}
		case tc.name == "hostname verification off" && c.Security.VerifyHostname():
			t.Error("ssl.endpoint.identification.algorithm= still verifies host names")
		}
	}
}

// jaasCases pin how Kafka reads sasl.jaas.config. lenient marks a value
// Kafka rejects and ParseJAAS accepts on purpose (a bare value Java's
// tokenizer does not take as a word).
var jaasCases = []struct {
	in      string
	lenient bool
}{
	{in: ScramLoginModule + ` required username="alice" password="alice-secret";`},
	{in: PlainLoginModule + "  REQUIRED\n\tusername=\"a\"\n\tpassword=\"b\" ;\n"},
	{in: `org.x.Y requisite username=alice password="p\tq\"r\\s";`},
	{in: `org.x.Y sufficient user=a-b_c$d.e;`},
	{in: `org.x.Y optional;`},
	{in: `org.x.Y required a="1" a="2";`},
	{in: "org.x.Y required // a comment\n a=\"1\" /* another */ b=\"2\";"},
	{in: `org.x.Y required a="\101\7x\q";`},
	{in: `org.x.Y required a="";`},
	{in: `org.x.Y required`},
	{in: `org.x.Y required; org.x.Z required;`},
	{in: `org.x.Y always;`},
	{in: `org.x.Y required a;`},
	{in: `org.x.Y required a=;`},
	{in: `org.x.Y required a="unclosed;`},
	{in: ``},
	{in: `org.x.Y required a=12345;`, lenient: true},
	{in: `org.x.Y required a=b/c;`, lenient: true},
}

// TestParseJAASMatchesKafka runs Kafka's own parser (JaasDump.java with the
// jars of kafkakeys/gen.sh) on every case: where Kafka reads a value,
// ParseJAAS reads the same module, flag and options; where Kafka rejects
// one, ParseJAAS does too, but for the lenient cases. It needs Java and
// Maven: it skips outside CI without them and fails under CI.
func TestParseJAASMatchesKafka(t *testing.T) {
	t.Parallel() // a JVM starts: overlap it with the other tests
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			kafkatest.SkipOrFail(t, "%s not found: the JAAS cases are not checked against Kafka", tool)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	libs, err := exec.CommandContext(ctx, "bash", filepath.Join("kafkakeys", "gen.sh"), "--libs").Output()
	if err != nil {
		t.Fatalf("kafkakeys/gen.sh --libs: %v", err)
	}
	dir := t.TempDir()
	args := []string{"-cp", filepath.Join(strings.TrimSpace(string(libs)), "*"), filepath.Join("testdata", "JaasDump.java")}
	for i, c := range jaasCases {
		p := filepath.Join(dir, fmt.Sprintf("case%02d", i))
		if err := os.WriteFile(p, []byte(c.in), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	out, err := exec.CommandContext(ctx, "java", args...).Output()
	if err != nil {
		t.Fatalf("java JaasDump: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(jaasCases) {
		t.Fatalf("JaasDump printed %d lines for %d cases:\n%s", len(lines), len(jaasCases), out)
	}
	for i, c := range jaasCases {
		j, err := ParseJAAS(c.in)
		kafka := lines[i]
		if strings.HasPrefix(kafka, "ERROR") {
			if err == nil && !c.lenient {
				t.Errorf("%q: Kafka rejects it (%s), ParseJAAS reads %+v", c.in, kafka, j)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: Kafka reads it (%s), ParseJAAS: %v", c.in, kafka, err)
			continue
		}
		f := strings.SplitN(kafka, " ", 4) // module, "LoginModuleControlFlag:", flag, options
		mod, _ := hex.DecodeString(f[0])
		got := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(f[3], ";"), ";") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				kb, _ := hex.DecodeString(k)
				vb, _ := hex.DecodeString(v)
				got[string(kb)] = string(vb)
			}
		}
		if string(mod) != j.Module || f[2] != j.Flag || !maps.Equal(got, j.Options) {
			t.Errorf("%q: Kafka reads %s %s %q, ParseJAAS %s %s %q", c.in, mod, f[2], got, j.Module, j.Flag, j.Options)
		}
	}
}
