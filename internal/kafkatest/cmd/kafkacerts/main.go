// Command kafkacerts writes the key material of the local test broker's
// TLS and OAUTHBEARER listeners: a private certificate authority, the
// broker's key store, a client certificate for mutual TLS, and an RSA key
// with its JWKS for signing and checking OAuth access tokens.
//
// deploy/local/kafka.sh runs it before every start, so each broker life
// has fresh keys, and exports the directory as RACKSTREAM_TEST_TLS_DIR:
//
//	kafkacerts -dir /tmp/rackstream-kafka/tls -hosts 127.0.0.1,localhost
//
// Files (PEM unless said otherwise; keys are unencrypted PKCS#8, mode 0600):
//
//	ca.pem             the authority: the broker's trust store (ssl.truststore.type=PEM)
//	                   and the clients' ssl.ca.location
//	broker.pem         the broker's key and certificate chain (ssl.keystore.type=PEM);
//	                   the certificate names every -hosts entry
//	client.pem         a client certificate (CN rackstream-client) for mutual TLS,
//	client-key.pem     and its key
//	oauth-key.pem      the RSA key an OAuth test token endpoint signs access tokens with
//	jwks.json          its public half as a JSON Web Key Set (kid "rackstream-test"),
//	                   which the broker's OAUTHBEARER validator reads
//
// Go rather than keytool and openssl: nothing to install, and the same code
// paths as the tests' own certificates.
package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// KeyID is the "kid" of the OAuth signing key in jwks.json; tokens name it
// in their header.
const KeyID = "rackstream-test"

func main() {
	dir := flag.String("dir", "", "directory to write into (created)")
	hosts := flag.String("hosts", "127.0.0.1,localhost", "names and addresses the broker's certificate is valid for, comma separated")
	valid := flag.Duration("valid", 30*24*time.Hour, "certificate lifetime")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "kafkacerts: -dir is required")
		os.Exit(2)
	}
	if err := write(*dir, strings.Split(*hosts, ","), *valid); err != nil {
		fmt.Fprintf(os.Stderr, "kafkacerts: %v\n", err)
		os.Exit(1)
	}
}

func write(dir string, hosts []string, valid time.Duration) error {
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
