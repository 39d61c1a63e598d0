package kclient

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/harness/kafkatest"
)

// The Kafka Streams application's file that config's test loads too.
const kafkaStreamsFile = "../../config/testdata/kafka-streams.properties"

// TestAKafkaStreamsPropertiesFileConnects runs a Kafka Streams
// application's properties file as it is (SASL_SSL, SCRAM-SHA-512 from
// sasl.jaas.config, a PKCS12 trust store with a password, host name
// verification) against the SASL_SSL listener of the real broker or of
// kfake (tlsCluster). Only what a deployment changes is replaced: the
// brokers, the trust store's path and the JAAS line's user.
func TestAKafkaStreamsPropertiesFileConnects(t *testing.T) {
	l := tlsCluster(t)
	trust := writeTrustStore(t, readCA(t, l.caFile), "changeit") // the file's ssl.truststore.password
	jaas := `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="` + l.user + `" password="` + l.password + `";`
	sets := []string{"bootstrap.servers=" + strings.Join(l.saslSSL, ","), "ssl.truststore.location=" + trust}
	loadFile := func(more ...string) *config.Config {
		t.Helper()
		c, err := config.Load(config.Sources{File: kafkaStreamsFile, Set: slices.Concat(sets, []string{jaas}, more)})
		if err != nil {
			t.Fatalf("the Kafka Streams file does not load: %v", err)
		}
		return c
	}
	kc := newClients(t, loadFile(), nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := Check(ctx, kc.Opts(PurposeAdmin)); err != nil {
		t.Fatalf("Check on %s: %v", l.kind, err)
	}
	roundTrip(ctx, t, kc, uniqueTopic("kclient-kafka-streams-file"))

	// The wrong trust store password: named key and file, no password.
	_, err := New(loadFile("ssl.truststore.password=not-changeit"), nil)
	if err == nil || !strings.Contains(err.Error(), "ssl.truststore.location "+trust) || !strings.Contains(err.Error(), "wrong password") || strings.Contains(err.Error(), "changeit") {
		t.Errorf("a wrong trust store password: %v", err)
	}
}

// TestKeyStoresPresentTheClientCertificate: mutual TLS with the client
// certificate from each form Kafka's Java clients accept, on the listener
// that requires one (real broker or kfake).
func TestKeyStoresPresentTheClientCertificate(t *testing.T) {
	l := tlsCluster(t)
	caCert := readCA(t, l.caFile)
	dir := t.TempDir()
	pair, err := tls.LoadX509KeyPair(l.certFile, l.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	p12, err := pkcs12.Modern2023.Encode(pair.PrivateKey, leaf, []*x509.Certificate{caCert}, "ks-pass")
	if err != nil {
		t.Fatal(err)
	}
	p12File := filepath.Join(dir, "client.p12")
	certPEM, _ := os.ReadFile(l.certFile)
	keyPEM, _ := os.ReadFile(l.keyFile)
	pemFile := filepath.Join(dir, "client-keystore.pem")
	for name, data := range map[string][]byte{p12File: p12, pemFile: append(append([]byte{}, keyPEM...), certPEM...)} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	trust := "ssl.truststore.location=" + writeTrustStore(t, caCert, "")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for name, sets := range map[string][]string{
		"PKCS12":                 {"ssl.keystore.type=PKCS12", "ssl.keystore.location=" + p12File, "ssl.keystore.password=ks-pass"},
		"JKS read as PKCS12":     {"ssl.keystore.location=" + p12File, "ssl.keystore.password=ks-pass", "ssl.key.password=ks-pass"},
		"PEM file":               {"ssl.keystore.type=PEM", "ssl.keystore.location=" + pemFile},
		"PEM inline":             {"ssl.keystore.type=PEM", "ssl.keystore.key=" + string(keyPEM), "ssl.keystore.certificate.chain=" + string(certPEM)},
		"PEM trust store inline": {"ssl.keystore.type=PEM", "ssl.keystore.location=" + pemFile, "ssl.truststore.type=PEM", "ssl.truststore.certificates=" + pemOf(caCert)},
	} {
		t.Run(name, func(t *testing.T) {
			all := append([]string{"security.protocol=SSL"}, sets...)
			if !strings.Contains(strings.Join(sets, " "), "ssl.truststore.") {
				all = append(all, trust)
			}
			kc := newClients(t, load(t, l.mtls, all...), nil)
			if err := Check(ctx, kc.Opts(PurposeAdmin)); err != nil {
				t.Fatalf("Check on %s: %v", l.kind, err)
			}
		})
	}
	// Unusable stores fail at start-up, naming the key and file and never
	// a password or a key.
	jks := filepath.Join(dir, "real.jks")
	if err := os.WriteFile(jks, []byte{0xFE, 0xED, 0xFE, 0xED, 0, 0, 0, 2}, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		sets []string
		want string
	}{
		"a wrong key store password":    {[]string{"ssl.keystore.type=PKCS12", "ssl.keystore.location=" + p12File, "ssl.keystore.password=Zq9-wrong"}, "ssl.keystore.location " + p12File + ": wrong password"},
		"a key password that differs":   {[]string{"ssl.keystore.type=PKCS12", "ssl.keystore.location=" + p12File, "ssl.keystore.password=ks-pass", "ssl.key.password=Zq9-other"}, "ssl.key.password differs"},
		"a real JKS file":               {[]string{"ssl.keystore.location=" + jks}, "is a JKS key store, which Rackstream does not read: convert it with keytool -importkeystore"},
		"a key that is not the chain's": {[]string{"ssl.keystore.type=PEM", "ssl.keystore.key=" + string(pemOfKey(t)), "ssl.keystore.certificate.chain=" + string(certPEM)}, "ssl.keystore.key with ssl.keystore.certificate.chain: not a matching PEM"},
	} {
		_, err := New(load(t, l.mtls, append([]string{"security.protocol=SSL", trust}, tc.sets...)...), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Zq9") || strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.want)
		}
	}
}

// TestEndpointIdentificationOffStillVerifiesTheChain: with
// ssl.endpoint.identification.algorithm empty, a broker certificate that
// names another host is accepted when a trusted authority signed it, and
// refused when not; with https (the default) it is refused.
func TestEndpointIdentificationOffStillVerifiesTheChain(t *testing.T) {
	ca := newTestCA(t)
	other := newTestCA(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	srv := ca.issueServer(t, "broker.elsewhere.example") // not 127.0.0.1
	fc := fakeCluster(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{srv}, MinVersion: tls.VersionTLS12}))
	check := func(sets ...string) error {
		kc := newClients(t, load(t, fc.ListenAddrs(), append([]string{"security.protocol=SSL"}, sets...)...), nil)
		return Check(ctx, kc.Opts(PurposeAdmin))
	}
	if err := check("ssl.ca.location=" + ca.caFile); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("https with a certificate for another host: %v, want a verification error", err)
	}
	if err := check("ssl.ca.location="+ca.caFile, "ssl.endpoint.identification.algorithm="); err != nil {
		t.Errorf("no host name check, trusted chain: %v", err)
	}
	if err := check("ssl.ca.location="+other.caFile, "ssl.endpoint.identification.algorithm="); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("no host name check, untrusted chain: %v, want a verification error", err)
	}
}

// TestKeytoolTrustStore reads a trust store written by Java's keytool
// (PKCS12 with PBES2/AES, the JDK 17 default) with ssl.truststore.type
// left at Kafka's default JKS. It needs the JDK: outside CI it skips
// without it; .ci/run installs it.
func TestKeytoolTrustStore(t *testing.T) {
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		kafkatest.SkipOrFail(t, "keytool not found (.ci/run installs the JDK)")
	}
	l := tlsCluster(t)
	store := filepath.Join(t.TempDir(), "truststore.p12")
	out, err := exec.CommandContext(t.Context(), keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", l.caFile,
		"-keystore", store, "-storetype", "PKCS12", "-storepass", "changeit").CombinedOutput()
	if err != nil {
		t.Fatalf("keytool: %v\n%s", err, out)
	}
	kc := newClients(t, load(t, l.ssl, "security.protocol=SSL", "ssl.truststore.location="+store, "ssl.truststore.password=changeit"), nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := Check(ctx, kc.Opts(PurposeAdmin)); err != nil {
		t.Fatalf("Check on %s with keytool's trust store: %v", l.kind, err)
	}
}

// writeTrustStore writes a PKCS12 trust store of a CA certificate, as
// keytool would (Java's trust attribute, modern encryption).
func writeTrustStore(t *testing.T, ca *x509.Certificate, password string) string {
	t.Helper()
	data, err := pkcs12.Modern2023.EncodeTrustStore([]*x509.Certificate{ca}, password)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "truststore.p12")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// issueServer issues a server certificate for a DNS name only.
func (ca *testCA) issueServer(t *testing.T, name string) tls.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// readCA reads the first certificate of a PEM file.
func readCA(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	certs := pemCerts(data)
	if len(certs) == 0 {
		t.Fatalf("%s holds no certificate", file)
	}
	return certs[0]
}

func pemOf(c *x509.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
}

// pemOfKey is a fresh key that belongs to no certificate.
func pemOfKey(t *testing.T) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: marshalKey(t, newKey(t))})
}

// TestOAuthBearerFromAKafkaJAASLine: a Kafka Streams file written before
// Kafka 4.1 gives the client credentials as options of
// OAuthBearerLoginModule in sasl.jaas.config; they reach the token
// endpoint as the sasl.oauthbearer.* keys would, and on the real broker
// (kfake has no OAUTHBEARER) the tokens log in.
func TestOAuthBearerFromAKafkaJAASLine(t *testing.T) {
	jaasSets := func(endpoint string) []string {
		return []string{"security.protocol=SASL_SSL", "sasl.mechanism=OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url=" + endpoint,
			`sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="` + oauthClientID + `" clientSecret="` + oauthSecret + `" scope="kafka";`}
	}
	te := newTokenEndpoint(t, nil, time.Hour)
	cfg := load(t, []string{"127.0.0.1:1"}, jaasSets(te.URL)...)
	if kc := newClients(t, cfg, nil); kc.Mechanism() != config.OAuthBearer {
		t.Fatalf("mechanism %s", kc.Mechanism())
	}
	tok, err := newTokenSource(cfg.Security).Token(t.Context())
	if err != nil || tok != "placeholder-token-for-kafka" || te.requests.Load() != 1 {
		t.Errorf("Token = %q, %v after %d requests", tok, err, te.requests.Load())
	}

	brokers, dir := realOAuthListener(t)
	if brokers == nil {
		return // the login on a broker runs in the real-broker pass
	}
	signed := newTokenEndpoint(t, readRSAKey(t, filepath.Join(dir, "oauth-key.pem")), time.Hour)
	kc := newClients(t, load(t, brokers, append(jaasSets(signed.URL), "ssl.ca.location="+filepath.Join(dir, "ca.pem"))...), nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := Check(ctx, kc.Opts(PurposeAdmin)); err != nil {
		t.Fatalf("Check on Kafka's OAUTHBEARER listener: %v", err)
	}
	roundTrip(ctx, t, kc, uniqueTopic("kclient-oauth-jaas"))
}
