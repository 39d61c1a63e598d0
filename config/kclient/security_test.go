package kclient

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rackstream/rackstream/harness/badfiles"
	"github.com/rackstream/rackstream/harness/kafkatest"
)

// TestTLSFilesAreCheckedAtStartup pins New's errors for unusable TLS files:
// each names the key and the file.
func TestTLSFilesAreCheckedAtStartup(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		name string
		sets []string
		want []string
	}{
		{"missing CA file", []string{"ssl.ca.location=" + missing}, []string{"ssl.ca.location", missing}},
		{"CA file without a certificate", []string{"ssl.ca.location=" + notPEM}, []string{"ssl.ca.location", notPEM, "no PEM certificate"}},
		{"key that does not match the certificate", []string{"ssl.ca.location=" + ca.caFile, "ssl.certificate.location=" + ca.certFile, "ssl.key.location=" + notPEM},
			[]string{"ssl.certificate.location", "ssl.key.location", notPEM}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(load(t, []string{"127.0.0.1:1"}, append([]string{"security.protocol=SSL"}, tc.sets...)...), nil)
			if err == nil {
				t.Fatal("New = nil error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestSecurityFilesAreReadWithABound: every file of TLS material is read
// with a size limit, and a FIFO or a device is refused before a byte is
// read, so that a mistaken path can neither hang start-up nor exhaust
// memory. The error names the key and the file.
func TestSecurityFilesAreReadWithABound(t *testing.T) {
	ca := newTestCA(t)
	for _, f := range []struct {
		key  string
		sets func(path string) []string
	}{
		{"ssl.ca.location", func(p string) []string { return []string{"ssl.ca.location=" + p} }},
		{"ssl.certificate.location", func(p string) []string {
			return []string{"ssl.ca.location=" + ca.caFile, "ssl.certificate.location=" + p, "ssl.key.location=" + ca.keyFile}
		}},
		{"ssl.key.location", func(p string) []string {
			return []string{"ssl.ca.location=" + ca.caFile, "ssl.certificate.location=" + ca.certFile, "ssl.key.location=" + p}
		}},
		{"ssl.truststore.location", func(p string) []string { return []string{"ssl.truststore.location=" + p} }},
		{"ssl.truststore.location", func(p string) []string {
			return []string{"ssl.truststore.type=PEM", "ssl.truststore.location=" + p}
		}},
		{"ssl.keystore.location", func(p string) []string {
			return []string{"ssl.ca.location=" + ca.caFile, "ssl.keystore.location=" + p, "ssl.keystore.password=pw"}
		}},
		{"ssl.keystore.location", func(p string) []string {
			return []string{"ssl.ca.location=" + ca.caFile, "ssl.keystore.type=PEM", "ssl.keystore.location=" + p}
		}},
	} {
		for _, bad := range badfiles.CredentialFiles(t) {
			cfg := load(t, []string{"127.0.0.1:1"}, append([]string{"security.protocol=SSL"}, f.sets(bad.Path)...)...)
			bad.Check(t, f.key, func() error {
				_, err := New(cfg, nil)
				return err
			})
		}
	}
}

// TestAStoreThatIsNotPKCS12IsAShortError: a key or trust store that does
// not decode is named with its key and file in one short sentence, never
// with the decoder's ASN.1 structure.
func TestAStoreThatIsNotPKCS12IsAShortError(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.p12")
	if err := os.WriteFile(garbage, []byte("this is not a key store, nor anything else\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key  string
		sets []string
		want string
	}{
		{"ssl.truststore.location", []string{"ssl.truststore.location=" + garbage}, "not a PKCS12 file, or a damaged one"},
		{"ssl.truststore.location", []string{"ssl.truststore.type=PKCS12", "ssl.truststore.location=" + ca.caFile},
			"not a PKCS12 file, or a damaged one (it is PEM: set ssl.truststore.type=PEM)"},
		{"ssl.keystore.location", []string{"ssl.ca.location=" + ca.caFile, "ssl.keystore.type=PKCS12", "ssl.keystore.location=" + garbage},
			"not a PKCS12 file, or a damaged one"},
	} {
		_, err := New(load(t, []string{"127.0.0.1:1"}, append([]string{"security.protocol=SSL"}, tc.sets...)...), nil)
		if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.want) ||
			strings.Contains(err.Error(), "asn1") || len(err.Error()) > 300 {
			t.Errorf("%v: %v, want a short error containing %s and %q", tc.sets, err, tc.key, tc.want)
		}
	}
}

// TestSASLOnTheSharedTestCluster logs in with SCRAM through harness/kafkatest:
// the real broker's SASL_PLAINTEXT SCRAM-SHA-512 listener (user created by
// deploy/local/kafka.sh with Kafka's storage tool) when RACKSTREAM_TEST_BROKERS
// is set, else kfake with SASL. Right credentials reach the cluster; a wrong
// password fails Check with the mechanism and the broker named; the password
// is in no log line and no error.
func TestSASLOnTheSharedTestCluster(t *testing.T) {
	sc := kafkatest.SASL(t)
	t.Logf("cluster: %s at %v, %s as %s", sc.Kind(), sc.Brokers, sc.Mechanism, sc.User)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	logger, logs := debugLogger()
	sets := []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanism=" + sc.Mechanism, "sasl.username=" + sc.User, "client.tag.zone=eu-central-1a"}

	good := newClients(t, load(t, sc.Brokers, append(sets, "sasl.password="+sc.Password)...), logger)
	logger.Info("kafka clients", "kafka", good)
	if err := Check(ctx, good.Opts(PurposeAdmin)); err != nil {
		t.Fatalf("Check with the right password: %v", err)
	}
	roundTrip(ctx, t, good, sc.Name("kclient-scram"))

	wrong := sc.Password + "-not"
	bad := newClients(t, load(t, sc.Brokers, append(sets, "sasl.password="+wrong)...), logger)
	err := Check(ctx, bad.Opts(PurposeAdmin))
	assertAuthError(t, err, sc.Mechanism, sc.Brokers[0])
	t.Logf("wrong password: %v", err)

	// The other SCRAM mechanism: the real broker's listener does not enable
	// it, and kfake has no such credential for the user.
	other := "SCRAM-SHA-256"
	if sc.Mechanism == other {
		other = "SCRAM-SHA-512"
	}
	mismatch := newClients(t, load(t, sc.Brokers, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism="+other,
		"sasl.username="+sc.User, "sasl.password="+sc.Password), logger)
	err2 := Check(ctx, mismatch.Opts(PurposeAdmin))
	assertAuthError(t, err2, other, sc.Brokers[0])
	t.Logf("other mechanism: %v", err2)

	for _, secret := range []string{sc.Password, wrong} {
		if strings.Contains(err2.Error(), secret) {
			t.Errorf("error shows a password: %v", err2)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error shows a password: %v", err)
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("log shows a password:\n%s", logs)
		}
	}
	if !strings.Contains(logs.String(), sc.Mechanism) {
		t.Errorf("debug log never mentions the SASL exchange, so the password check proves nothing:\n%s", logs)
	}
}

func fakeCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	fc, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fc.Close)
	return fc
}
