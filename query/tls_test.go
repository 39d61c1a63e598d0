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

	"github.com/rackstream/rackstream/harness/badfiles"
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
	rt := &fakeReader{self: "n1"}
	if _, err := New(Options{Reader: rt, TLS: &tls.Config{}, PeerTLS: &tls.Config{InsecureSkipVerify: true}}); err == nil ||
		!strings.Contains(err.Error(), "never forwards to an unverified peer") {
		t.Errorf("InsecureSkipVerify: %v", err)
	}
	if _, err := New(Options{Reader: rt, TLS: &tls.Config{}}); err == nil || !strings.Contains(err.Error(), "http.tls.ca") {
		t.Errorf("no PeerTLS: %v", err)
	}
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "Reader is required") {
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

// Leaf issues a certificate of the CA for 127.0.0.1, for the external
// tests' clients.
func (ca *testCA) Leaf(t *testing.T, serial int64) tls.Certificate { return ca.leaf(t, serial) }

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
		{filepath.Join(dir, "nope"), keyFile, "", "read http.tls.cert"},
	} {
		if _, _, err := LoadTLS(TLSFiles{Cert: tc.cert, Key: tc.key, CA: tc.ca}); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("LoadTLS(%q, %q, %q) = %v, want %q", tc.cert, tc.key, tc.ca, err, tc.msg)
		}
	}
}

// TestLoadTLSReadsEachFileWithABound: every http.tls file is read with a
// size limit, and a FIFO or a device is refused before a byte is read, so
// that a mistaken path can neither hang start-up nor exhaust memory. The
// error names the key and the file.
func TestLoadTLSReadsEachFileWithABound(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, caFile := newTestCA(t, "ca").WriteFiles(t, dir, 2)
	valid := func() TLSFiles {
		return TLSFiles{Cert: certFile, Key: keyFile, CA: caFile, ClientAuth: ClientAuthRequire, ClientCA: caFile}
	}
	for _, f := range []struct {
		key string
		set func(*TLSFiles, string)
	}{
		{"http.tls.cert", func(f *TLSFiles, p string) { f.Cert = p }},
		{"http.tls.key", func(f *TLSFiles, p string) { f.Key = p }},
		{"http.tls.ca", func(f *TLSFiles, p string) { f.CA = p }},
		{"http.tls.client.ca", func(f *TLSFiles, p string) { f.ClientCA = p }},
	} {
		for _, bad := range badfiles.CredentialFiles(t) {
			files := valid()
			f.set(&files, bad.Path)
			bad.Check(t, f.key, func() error {
				_, _, err := LoadTLS(files)
				return err
			})
		}
	}
}

// mtlsCluster is a cluster whose instances load their TLS from files, as
// rackstream does, with http.tls.client.auth=auth: each instance has its own
// certificate, and one CA signs instances and clients.
func mtlsCluster(t *testing.T, ca *testCA, auth string) *cluster {
	t.Helper()
	return newCluster(t, clusterOpts{token: "tok", tls: func(i int) (*tls.Config, *tls.Config) {
		certFile, keyFile, caFile := ca.WriteFiles(t, t.TempDir(), int64(10+i))
		f := TLSFiles{Cert: certFile, Key: keyFile, CA: caFile, ClientAuth: auth}
		if auth != ClientAuthNone {
			f.ClientCA = caFile
		}
		srv, peer, err := LoadTLS(f)
		if err != nil {
			t.Fatal(err)
		}
		return srv, peer
	}})
}

// tlsClient returns an HTTPS client that trusts pool and presents cert
// (none when nil) whatever CAs the server says it accepts: Go's client
// would send nothing rather than a certificate of another CA.
func tlsClient(t *testing.T, pool *x509.CertPool, cert *tls.Certificate) *http.Client {
	cfg := &tls.Config{RootCAs: pool}
	if cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	tr := &http.Transport{TLSClientConfig: cfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// getWith sends GET path to n with the cluster's token through client and
// returns the status, or the error of a request that got no answer.
func (c *cluster) getWith(client *http.Client, n *node, path string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, n.url+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Under each http.tls.client.auth, which clients complete the handshake.
// A lookup through a non-owner is forwarded: under require, it succeeds
// only because the instance presents its own certificate to the owner.
func TestClientCertificatesAreVerifiedAsClientAuthSays(t *testing.T) {
	ca, rogue := newTestCA(t, "cluster"), newTestCA(t, "rogue")
	good, bad := ca.leaf(t, 50), rogue.leaf(t, 51)
	clients := []struct {
		name string
		cert *tls.Certificate
	}{{"no certificate", nil}, {"a certificate of the cluster's CA", &good}, {"a certificate of another CA", &bad}}
	for _, tc := range []struct {
		auth string
		ok   []bool // per client
	}{
		{ClientAuthNone, []bool{true, true, true}},
		{ClientAuthRequest, []bool{true, true, false}},
		{ClientAuthRequire, []bool{false, true, false}},
	} {
		t.Run(tc.auth, func(t *testing.T) {
			c := mtlsCluster(t, ca, tc.auth)
			key := []byte("mtls")
			c.put(storeCounts, key, []byte("1"))
			for i, cl := range clients {
				client := tlsClient(t, ca.pool, cl.cert)
				for _, at := range []struct {
					n    *node
					path string
				}{{c.other(key), keyPath(storeCounts, key)}, {c.owner(key), "/healthz"}} {
					code, err := c.getWith(client, at.n, at.path)
					switch {
					case tc.ok[i] && (err != nil || code != http.StatusOK):
						t.Errorf("%s, %s: %d %v, want 200", cl.name, at.path, code, err)
					case !tc.ok[i] && (err == nil || !strings.Contains(err.Error(), "tls: ")):
						t.Errorf("%s, %s: %d %v, want a failed TLS handshake", cl.name, at.path, code, err)
					case !tc.ok[i]:
						t.Logf("%s, %s: %v", cl.name, at.path, err)
					}
				}
			}
		})
	}
}

func TestLoadTLSChecksTheClientCertificateSettings(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, caFile := newTestCA(t, "ca").WriteFiles(t, dir, 2)
	srv, peer, err := LoadTLS(TLSFiles{Cert: certFile, Key: keyFile, CA: caFile, ClientAuth: ClientAuthRequire, ClientCA: caFile})
	if err != nil || srv.ClientAuth != tls.RequireAndVerifyClientCert || srv.ClientCAs == nil || len(peer.Certificates) != 1 {
		t.Fatalf("require: %v", err)
	}
	if srv, _, err := LoadTLS(TLSFiles{Cert: certFile, Key: keyFile}); err != nil || srv.ClientAuth != tls.NoClientCert {
		t.Errorf("default: %v", err)
	}
	for _, tc := range []struct {
		f   TLSFiles
		msg string
	}{
		{TLSFiles{Cert: certFile, Key: keyFile, ClientAuth: "maybe", ClientCA: caFile}, `http.tls.client.auth "maybe": want none, request or require`},
		{TLSFiles{Cert: certFile, Key: keyFile, ClientAuth: ClientAuthRequire}, "http.tls.client.auth=require needs http.tls.client.ca"},
		{TLSFiles{Cert: certFile, Key: keyFile, ClientCA: caFile}, "http.tls.client.ca is set but http.tls.client.auth is none"},
		{TLSFiles{ClientAuth: ClientAuthRequest, ClientCA: caFile}, "http.tls.cert and http.tls.key must be set together"},
		{TLSFiles{Cert: certFile, Key: keyFile, ClientAuth: ClientAuthRequest, ClientCA: keyFile}, "http.tls.client.ca " + keyFile + ": no PEM certificate found"},
	} {
		if _, _, err := LoadTLS(tc.f); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("LoadTLS(%+v) = %v, want %q", tc.f, err, tc.msg)
		}
	}
	if _, err := New(Options{Reader: &fakeReader{self: "n1"}, TLS: &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert}, PeerTLS: &tls.Config{}}); err == nil ||
		!strings.Contains(err.Error(), "http.tls.client.ca") {
		t.Errorf("New without ClientCAs: %v", err)
	}
}
