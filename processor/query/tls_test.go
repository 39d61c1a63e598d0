package query

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA is a certificate authority made in the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// leaf issues a certificate for 127.0.0.1 that serves and, under mutual
// TLS, identifies a client (an instance forwarding, or a test client).
func (ca *testCA) leaf(t *testing.T, serial int64) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "rackstream-test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestForwardingOverTLSVerifiesPeers(t *testing.T) {
	trusted, rogue := newTestCA(t, "trusted"), newTestCA(t, "rogue")
	both := trusted.pool.Clone()
	both.AddCert(rogue.cert)
	// n2's certificate is signed by a CA the others don't trust.
	c := newCluster(t, clusterOpts{
		token: "tok",
		tls: func(i int) (*tls.Config, *tls.Config) {
			ca := trusted
			if i == 1 {
				ca = rogue
			}
			return &tls.Config{Certificates: []tls.Certificate{ca.leaf(t, int64(i+2))}}, &tls.Config{RootCAs: trusted.pool}
		},
		client: &tls.Config{RootCAs: both},
	})
	keys := keysPerTask(c.tasks, 1)
	var toN1, toN2 []byte
	for _, k := range keys {
		switch c.owner(k).id {
		case "n1":
			toN1 = k
		case "n2":
			toN2 = k
		}
	}
	c.put(storeCounts, toN1, []byte("1"))
	c.put(storeCounts, toN2, []byte("2"))

	// n3 -> n1: trusted, forwarded over HTTPS with the token.
	if a := c.get(c.nodes[2], keyPath(storeCounts, toN1)); a.code != http.StatusOK || a.json["served_by"] != "n1" {
		t.Fatalf("trusted peer: %s", a)
	}
	// n3 -> n2: untrusted certificate, never skipped: 502 saying why.
	a := c.get(c.nodes[2], keyPath(storeCounts, toN2))
	if a.code != http.StatusBadGateway || !strings.Contains(a.errMsg(), "active n2's certificate is not trusted by http.tls.ca") ||
		strings.Contains(a.errMsg(), "127.0.0.1") || strings.Contains(a.errMsg(), "x509") {
		t.Fatalf("untrusted peer: %s", a)
	}
	t.Logf("untrusted peer: %s", a.errMsg())
	if a.header.Get("Retry-After") != "" {
		t.Errorf("retrying cannot help, yet Retry-After is %q", a.header.Get("Retry-After"))
	}
}

func TestNewRefusesTLSThatSkipsVerificationOrHasNoPeerConfig(t *testing.T) {
	rt := &fakeRuntime{self: "n1"}
	if _, err := New(Options{Runtime: rt, TLS: &tls.Config{}, PeerTLS: &tls.Config{InsecureSkipVerify: true}}); err == nil ||
		!strings.Contains(err.Error(), "never forwards to an unverified peer") {
		t.Errorf("InsecureSkipVerify: %v", err)
	}
	if _, err := New(Options{Runtime: rt, TLS: &tls.Config{}}); err == nil || !strings.Contains(err.Error(), "http.tls.ca") {
		t.Errorf("no PeerTLS: %v", err)
	}
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "Runtime is required") {
		t.Errorf("no runtime: %v", err)
	}
}

// WriteFiles writes a leaf certificate for 127.0.0.1, its key and the CA
// certificate as PEM files in dir: what http.tls.cert, http.tls.key and
// http.tls.ca name.
func (ca *testCA) WriteFiles(t *testing.T, dir string, serial int64) (certFile, keyFile, caFile string) {
	t.Helper()
	leaf := ca.leaf(t, serial)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyDER, err := x509.MarshalECPrivateKey(leaf.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	return write("cert.pem", "CERTIFICATE", leaf.Certificate[0]), write("key.pem", "EC PRIVATE KEY", keyDER),
		write("ca.pem", "CERTIFICATE", ca.cert.Raw)
}

// Pool returns a pool trusting the CA.
func (ca *testCA) Pool() *x509.CertPool { return ca.pool }

func TestLoadTLSReadsTheConfiguredFiles(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, caFile := newTestCA(t, "ca").WriteFiles(t, dir, 2)
	srv, peer, err := LoadTLS(TLSFiles{Cert: certFile, Key: keyFile, CA: caFile})
	if err != nil || srv == nil || peer == nil || peer.RootCAs == nil || peer.InsecureSkipVerify {
		t.Fatalf("LoadTLS: %v %v %v", srv, peer, err)
	}
	if s, p, err := LoadTLS(TLSFiles{}); s != nil || p != nil || err != nil {
		t.Errorf("no TLS: %v %v %v", s, p, err)
	}
	for _, tc := range []struct{ cert, key, ca, msg string }{
		{certFile, "", "", "must be set together"},
		{certFile, keyFile, filepath.Join(dir, "missing.pem"), "read http.tls.ca"},
		{certFile, keyFile, keyFile, "no PEM certificate found"},
		{filepath.Join(dir, "nope"), keyFile, "", "load http.tls.cert"},
	} {
		if _, _, err := LoadTLS(TLSFiles{Cert: tc.cert, Key: tc.key, CA: tc.ca}); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("LoadTLS(%q, %q, %q) = %v, want %q", tc.cert, tc.key, tc.ca, err, tc.msg)
		}
	}
}
