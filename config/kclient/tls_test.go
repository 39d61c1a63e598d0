package kclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// The real broker's TLS listeners, as deploy/local/kafka.sh env exports
// them (a broker started by an older kafka.sh has none).
const (
	envSSLBrokers     = "RACKSTREAM_TEST_SSL_BROKERS"      // SSL, server authentication only
	envMTLSBrokers    = "RACKSTREAM_TEST_MTLS_BROKERS"     // SSL requiring a client certificate
	envSASLSSLBrokers = "RACKSTREAM_TEST_SASL_SSL_BROKERS" // SASL_SSL: SCRAM-SHA-256/512, PLAIN
	envOAuthBrokers   = "RACKSTREAM_TEST_OAUTH_BROKERS"    // SASL_SSL: OAUTHBEARER
	envTLSDir         = "RACKSTREAM_TEST_TLS_DIR"          // ca.pem, client.pem, client-key.pem, oauth-key.pem
)

// tlsListeners are the addresses and files of one cluster's TLS listeners.
type tlsListeners struct {
	kind                      string // "kafka" or "kfake"
	ssl, mtls, saslSSL        []string
	caFile, certFile, keyFile string
	user, password            string
}

// tlsCluster returns the real broker's TLS listeners when
// RACKSTREAM_TEST_BROKERS is set, else three kfake clusters serving TLS with
// a test CA's certificate (one requiring client certificates, one with SASL
// users for every mechanism). Under CI a real broker without TLS listeners
// fails the test: CI's broker is started by this kafka.sh.
func tlsCluster(t *testing.T) tlsListeners {
	t.Helper()
	if os.Getenv(kafkatest.EnvBrokers) != "" {
		dir := os.Getenv(envTLSDir)
		l := tlsListeners{kind: "kafka",
			ssl: split(os.Getenv(envSSLBrokers)), mtls: split(os.Getenv(envMTLSBrokers)), saslSSL: split(os.Getenv(envSASLSSLBrokers)),
			caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "client.pem"), keyFile: filepath.Join(dir, "client-key.pem"),
			user: os.Getenv(kafkatest.EnvSASLUser), password: os.Getenv(kafkatest.EnvSASLPassword)}
		_ = os.Getenv(kafkatest.EnvBrokerRun) // a cache key only
		if dir == "" || len(l.ssl) == 0 || len(l.mtls) == 0 || len(l.saslSSL) == 0 || l.user == "" {
			msg := "the real broker has no TLS listeners (started by an older kafka.sh?): restart it with deploy/local/kafka.sh restart"
			kafkatest.SkipOrFail(t, "%s", msg)
		}
		return l
	}
	ca := newTestCA(t)
	const user, pass = "tls-user", "tls-pass-0"
	sasl := []kfake.Opt{kfake.TLS(ca.serverConfig(false)), kfake.EnableSASL()}
	for _, m := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		sasl = append(sasl, kfake.Superuser(m, user, pass))
	}
	return tlsListeners{kind: "kfake",
		ssl:     fakeCluster(t, kfake.TLS(ca.serverConfig(false))).ListenAddrs(),
		mtls:    fakeCluster(t, kfake.TLS(ca.serverConfig(true))).ListenAddrs(),
		saslSSL: fakeCluster(t, sasl...).ListenAddrs(),
		caFile:  ca.caFile, certFile: ca.certFile, keyFile: ca.keyFile,
		user: user, password: pass}
}

// split reads a comma-separated broker list.
func split(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// uniqueTopic names a topic no earlier run on the shared broker created.
func uniqueTopic(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// TestTLSAndSASLSSL runs the security settings against TLS listeners: the
// real broker's (Kafka 4.4, certificates from kafkacerts) or kfake's. Each
// accepted setting creates a topic, produces and consumes through it; each
// refused one fails Check with an error naming the broker, the listener's
// protocol and what to check, never a password.
func TestTLSAndSASLSSL(t *testing.T) {
	l := tlsCluster(t)
	t.Logf("cluster: %s; SSL %v, mutual TLS %v, SASL_SSL %v", l.kind, l.ssl, l.mtls, l.saslSSL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	other := newTestCA(t) // an authority the brokers' certificates are not from

	t.Run("TLS: the CA verifies the broker", func(t *testing.T) {
		kc := newClients(t, load(t, l.ssl, "security.protocol=SSL", "ssl.ca.location="+l.caFile), nil)
		if err := Check(ctx, kc.Opts(PurposeAdmin)); err != nil {
			t.Fatalf("Check: %v", err)
		}
		roundTrip(ctx, t, kc, uniqueTopic("kclient-tls"))
	})
	t.Run("TLS: an untrusted certificate is refused naming the broker and listener", func(t *testing.T) {
		for _, sets := range [][]string{
			{"security.protocol=SSL", "ssl.ca.location=" + other.caFile},
			{"security.protocol=SSL"}, // the system's roots
		} {
			kc := newClients(t, load(t, l.ssl, sets...), nil)
			err := Check(ctx, kc.Opts(PurposeAdmin))
			assertTLSError(t, err, l.ssl[0], "SSL", "not signed by an authority in ssl.ca.location")
			t.Logf("%v: %v", sets, err)
		}
	})
	t.Run("mutual TLS presents the client certificate", func(t *testing.T) {
		kc := newClients(t, load(t, l.mtls, "security.protocol=SSL", "ssl.ca.location="+l.caFile,
			"ssl.certificate.location="+l.certFile, "ssl.key.location="+l.keyFile), nil)
		if err := Check(ctx, kc.Opts(PurposeAdmin)); err != nil {
			t.Fatalf("Check: %v", err)
		}
		roundTrip(ctx, t, kc, uniqueTopic("kclient-mtls"))
	})
	t.Run("mutual TLS without a client certificate is refused naming the broker", func(t *testing.T) {
		kc := newClients(t, load(t, l.mtls, "security.protocol=SSL", "ssl.ca.location="+l.caFile), nil)
		err := Check(ctx, kc.Opts(PurposeAdmin))
		assertTLSError(t, err, l.mtls[0], "SSL", "client certificate")
		t.Logf("no client certificate: %v", err)
	})
	t.Run("mutual TLS with a certificate from another authority is refused", func(t *testing.T) {
		kc := newClients(t, load(t, l.mtls, "security.protocol=SSL", "ssl.ca.location="+l.caFile,
			"ssl.certificate.location="+other.certFile, "ssl.key.location="+other.keyFile), nil)
		err := Check(ctx, kc.Opts(PurposeAdmin))
		assertTLSError(t, err, l.mtls[0], "SSL", "client certificate")
	})
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"} {
		t.Run("SASL_SSL "+mech, func(t *testing.T) {
			logger, logs := debugLogger()
			sets := []string{"security.protocol=SASL_SSL", "ssl.ca.location=" + l.caFile, "sasl.mechanism=" + mech, "sasl.username=" + l.user}
			kc := newClients(t, load(t, l.saslSSL, append(sets, "sasl.password="+l.password)...), logger)
			if err := Check(ctx, kc.Opts(PurposeAdmin)); err != nil {
				t.Fatalf("Check: %v", err)
			}
			roundTrip(ctx, t, kc, uniqueTopic("kclient-sasl-ssl-"+strings.ToLower(mech)))

			wrong := l.password + "-wrong"
			bad := newClients(t, load(t, l.saslSSL, append(sets, "sasl.password="+wrong)...), logger)
			err := Check(ctx, bad.Opts(PurposeAdmin))
			assertAuthError(t, err, mech, l.saslSSL[0])
			if !strings.Contains(err.Error(), "SASL_SSL listener") {
				t.Errorf("error %q does not name the SASL_SSL listener", err)
			}
			t.Logf("wrong password: %v", err)
			for _, secret := range []string{l.password, wrong} {
				if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
					t.Errorf("a password is in the error or the log")
				}
			}
		})
	}
}

// assertTLSError checks that err is a *TLSError naming the broker, the
// protocol and the hint.
func assertTLSError(t *testing.T, err error, broker, proto, hint string) {
	t.Helper()
	var te *TLSError
	if !errors.As(err, &te) {
		t.Fatalf("Check = %v (%T), want a *TLSError", err, err)
	}
	var ae *AuthError
	if errors.As(err, &ae) {
		t.Errorf("a TLS failure reported as a SASL failure: %v", err)
	}
	for _, want := range []string{broker, proto + " listener", "TLS handshake failed", hint} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}
