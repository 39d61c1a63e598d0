// Package certs writes the key material of the local test broker's TLS and
// OAUTHBEARER listeners (see harness/kafkatest/cmd/kafkacerts, which
// deploy/local/kafka.sh runs): a private certificate authority, the broker's
// PEM key store, a client certificate for mutual TLS, and an RSA key with
// its JWKS for signing and checking OAuth access tokens. Tests on kfake use
// the same files, so both brokers serve the same kind of certificate.
//
// Files (PEM unless said otherwise; keys are unencrypted PKCS#8, mode 0600):
//
//	ca.pem             the authority: the broker's trust store (ssl.truststore.type=PEM)
//	                   and the clients' ssl.ca.location
//	broker.pem         the broker's key and certificate chain (ssl.keystore.type=PEM)
//	client.pem         a client certificate (CN rackstream-client) for mutual TLS,
//	client-key.pem     and its key
//	oauth-key.pem      the RSA key an OAuth test token endpoint signs access tokens with
//	jwks.json          its public half as a JSON Web Key Set (kid KeyID)
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// KeyID is the "kid" of the OAuth signing key in jwks.json; tokens name it
// in their header.
const KeyID = "rackstream-test"

// Write writes the files into dir (created), the broker's certificate valid
// for every entry of hosts (names and IP addresses) for valid from now.
func Write(dir string, hosts []string, valid time.Duration) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now()
	tmpl := func(serial int64, cn string) *x509.Certificate {
		return &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn, Organization: []string{"Rackstream tests"}},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(valid),
		}
	}

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caT := tmpl(1, "Rackstream test CA")
	caT.IsCA, caT.BasicConstraintsValid, caT.KeyUsage = true, true, x509.KeyUsageCertSign|x509.KeyUsageCRLSign
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, names []string) (der, key []byte, err error) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		t := tmpl(serial, cn)
		t.KeyUsage, t.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{usage}
		for _, n := range names {
			if ip := net.ParseIP(n); ip != nil {
				t.IPAddresses = append(t.IPAddresses, ip)
			} else if n != "" {
				t.DNSNames = append(t.DNSNames, n)
			}
		}
		if der, err = x509.CreateCertificate(rand.Reader, t, ca, &k.PublicKey, caKey); err != nil {
			return nil, nil, err
		}
		key, err = x509.MarshalPKCS8PrivateKey(k)
		return der, key, err
	}
	brokerDER, brokerKey, err := issue(2, hosts[0], x509.ExtKeyUsageServerAuth, hosts)
	if err != nil {
		return err
	}
	clientDER, clientKey, err := issue(3, "rackstream-client", x509.ExtKeyUsageClientAuth, nil)
	if err != nil {
		return err
	}

	oauthKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	oauthDER, err := x509.MarshalPKCS8PrivateKey(oauthKey)
	if err != nil {
		return err
	}
	jwks, err := json.MarshalIndent(map[string]any{"keys": []any{jwk(oauthKey.Public())}}, "", "  ")
	if err != nil {
		return err
	}

	files := []struct {
		name string
		data []byte
	}{
		{"ca.pem", block("CERTIFICATE", caDER)},
		{"broker.pem", concat(block("PRIVATE KEY", brokerKey), block("CERTIFICATE", brokerDER), block("CERTIFICATE", caDER))},
		{"client.pem", block("CERTIFICATE", clientDER)},
		{"client-key.pem", block("PRIVATE KEY", clientKey)},
		{"oauth-key.pem", block("PRIVATE KEY", oauthDER)},
		{"jwks.json", append(jwks, '\n')},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// jwk is the JSON Web Key (RFC 7517) of an RSA public key, for RS256.
func jwk(pub crypto.PublicKey) map[string]string {
	k := pub.(*rsa.PublicKey)
	b64 := base64.RawURLEncoding.EncodeToString
	return map[string]string{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": KeyID,
		"n": b64(k.N.Bytes()),
		"e": b64(big.NewInt(int64(k.E)).Bytes()),
	}
}

func block(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func concat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// BrokerTLS is the TLS configuration of a broker serving broker.pem from
// dir; with requireClientCert it asks for a client certificate signed by
// ca.pem (mutual TLS). kfake takes it as kfake.TLS.
func BrokerTLS(dir string, requireClientCert bool) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "broker.pem"), filepath.Join(dir, "broker.pem"))
	if err != nil {
		return nil, err
	}
	c := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if requireClientCert {
		ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
		if err != nil {
			return nil, err
		}
		c.ClientCAs = x509.NewCertPool()
		c.ClientCAs.AppendCertsFromPEM(ca)
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c, nil
}
