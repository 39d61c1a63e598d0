package kclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// roundTrip proves that clients built from kc reach the cluster and are
// authorised: the admin role creates a topic, the producer role writes a
// record (acks=all) and the restore role reads it back.
func roundTrip(ctx context.Context, t *testing.T, kc *Clients, topic string) {
	t.Helper()
	adm := kadm.NewClient(client(t, kc.Opts(PurposeAdmin)))
	resp, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	// A real broker answers the creation before every broker's metadata
	// has the topic; wait for a leader before producing.
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == 1 && td.Partitions[0].Leader >= 0 {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %s has no leader: %v", topic, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	prod := client(t, kc.Opts(PurposeProducer))
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	cons := client(t, kc.Opts(PurposeRestore, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())))
	for {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s: %v", topic, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consume %s: %v", topic, err) })
		if recs := fs.Records(); len(recs) > 0 {
			if string(recs[0].Value) != "v" {
				t.Fatalf("consumed %q, want v", recs[0].Value)
			}
			return
		}
	}
}

// testCA is a certificate authority with a server certificate for
// 127.0.0.1 and a client certificate, written as PEM files.
type testCA struct {
	caFile, certFile, keyFile string // the CA; the client's pair
	server                    tls.Certificate
	pool                      *x509.CertPool
	cert                      *x509.Certificate // the CA's, to issue more
	key                       *ecdsa.PrivateKey
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "rackstream test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(serial int64, name string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	srvDER, srvKey := issue(2, "127.0.0.1", x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	cliDER, cliKey := issue(3, "rackstream-client", x509.ExtKeyUsageClientAuth, nil)

	ca := &testCA{
		caFile:   writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER),
		certFile: writePEM(t, dir, "client.pem", "CERTIFICATE", cliDER),
		keyFile:  writePEM(t, dir, "client-key.pem", "PRIVATE KEY", marshalKey(t, cliKey)),
		server:   tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey},
		pool:     x509.NewCertPool(),
		cert:     caCert,
		key:      caKey,
	}
	ca.pool.AddCert(caCert)
	return ca
}

// serverConfig is the brokers' TLS configuration; requireClientCert asks
// for a client certificate signed by the CA (mutual TLS).
func (ca *testCA) serverConfig(requireClientCert bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{ca.server}, MinVersion: tls.VersionTLS12}
	if requireClientCert {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = ca.pool
	}
	return c
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func marshalKey(t *testing.T, k *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
