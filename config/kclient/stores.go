package kclient

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"software.sslmate.com/src/go-pkcs12"

	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/internal/boundedread"
)

// The TLS material of security.protocol SSL and SASL_SSL, from either of
// the two vocabularies config accepts: the PEM files of librdkafka
// (ssl.ca.location, ssl.certificate.location, ssl.key.location) or the key
// and trust stores of Kafka's Java clients (ssl.truststore.*,
// ssl.keystore.*: PKCS12, PEM files or inline PEM). Errors name the key and
// the file, never a password or inline PEM (both are secrets).

// rootCAs returns the authorities that verify the brokers; nil means the
// system's.
func rootCAs(sec config.Security) (*x509.CertPool, error) {
	var (
		certs []*x509.Certificate
		err   error
	)
	switch {
	case sec.SSLCALocation != "":
		certs, err = pemFileCerts("ssl.ca.location", sec.SSLCALocation)
	case sec.SSLTruststoreCertificates != "":
		if certs = pemCerts([]byte(sec.SSLTruststoreCertificates.Reveal())); len(certs) == 0 {
			err = errors.New("kclient: ssl.truststore.certificates holds no PEM certificate")
		}
	case sec.SSLTruststoreLocation != "":
		certs, err = truststore(sec)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// truststore reads ssl.truststore.location as ssl.truststore.type says.
func truststore(sec config.Security) ([]*x509.Certificate, error) {
	const key = "ssl.truststore.location"
	path := sec.SSLTruststoreLocation
	if sec.SSLTruststoreType == config.StorePEM {
		return pemFileCerts(key, path)
	}
	data, err := readStore(key, path, sec.SSLTruststoreType)
	if err != nil {
		return nil, err
	}
	pass := sec.SSLTruststorePassword.Reveal()
	certs, err := pkcs12.DecodeTrustStore(data, pass)
	if err != nil {
		// A PKCS12 file written by openssl rather than keytool has no
		// trust attribute on its certificates: take them all.
		blocks, perr := pkcs12.ToPEM(data, pass)
		if perr != nil {
			return nil, fmt.Errorf("kclient: %s %s: %w", key, path, storeError(key, data, err))
		}
		for _, b := range blocks {
			if b.Type == "CERTIFICATE" {
				if c, err := x509.ParseCertificate(b.Bytes); err == nil {
					certs = append(certs, c)
				}
			}
		}
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("kclient: %s %s holds no certificate", key, path)
	}
	return certs, nil
}

// clientCertificate returns the certificate TLS client authentication
// presents, or nil for none.
func clientCertificate(sec config.Security) (*tls.Certificate, error) {
	switch {
	case sec.SSLCertificateLocation != "" && sec.SSLKeyLocation != "":
		certPEM, err := readFile("ssl.certificate.location", sec.SSLCertificateLocation)
		if err != nil {
			return nil, err
		}
		keyPEM, err := readFile("ssl.key.location", sec.SSLKeyLocation)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("kclient: ssl.certificate.location %s with ssl.key.location %s: %w", sec.SSLCertificateLocation, sec.SSLKeyLocation, err)
		}
		return &pair, nil
	case sec.SSLCertificateLocation != "" || sec.SSLKeyLocation != "":
		return nil, errors.New("kclient: ssl.certificate.location and ssl.key.location go together: set both or neither")
	case sec.SSLKeystoreKey != "":
		pair, err := tls.X509KeyPair([]byte(sec.SSLKeystoreCertificateChain.Reveal()), []byte(sec.SSLKeystoreKey.Reveal()))
		if err != nil {
			return nil, fmt.Errorf("kclient: ssl.keystore.key with ssl.keystore.certificate.chain: %s", pemPairError(err))
		}
		return &pair, nil
	case sec.SSLKeystoreLocation == "":
		return nil, nil
	}
	const key = "ssl.keystore.location"
	path := sec.SSLKeystoreLocation
	if sec.SSLKeystoreType == config.StorePEM {
		data, err := readFile(key, path)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(data, data) // one file: the key and its chain
		if err != nil {
			return nil, fmt.Errorf("kclient: %s %s: %s", key, path, pemPairError(err))
		}
		return &pair, nil
	}
	data, err := readStore(key, path, sec.SSLKeystoreType)
	if err != nil {
		return nil, err
	}
	pass := sec.SSLKeystorePassword.Reveal()
	if kp := sec.SSLKeyPassword.Reveal(); kp != "" && kp != pass {
		return nil, fmt.Errorf("kclient: %s %s: ssl.key.password differs from ssl.keystore.password, which a PKCS12 file read here cannot have: re-export the store with one password", key, path)
	}
	priv, leaf, chain, err := pkcs12.DecodeChain(data, pass)
	if err != nil {
		return nil, fmt.Errorf("kclient: %s %s: %w", key, path, storeError(key, data, err))
	}
	signer, ok := priv.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("kclient: %s %s: the private key is of an unsupported type %T", key, path, priv)
	}
	cert := &tls.Certificate{PrivateKey: signer, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}

// jksMagic starts a Java KeyStore file (the format before PKCS12).
var jksMagic = []byte{0xFE, 0xED, 0xFE, 0xED}

// readStore reads a PKCS12 store file. With type JKS (Kafka's default) the
// file is read as PKCS12 when it is one, as Java does since 9; a real JKS
// file is refused with the command that converts it.
func readStore(key, path string, typ config.StoreType) ([]byte, error) {
	data, err := readFile(key, path)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(data, jksMagic) {
		return nil, fmt.Errorf("kclient: %s %s is a JKS key store, which Rackstream does not read: convert it with "+
			"keytool -importkeystore -srckeystore %s -destkeystore %s.p12 -deststoretype PKCS12, and set %s.type=PKCS12", key, path, path, path, key[:len(key)-len(".location")])
	}
	return data, nil
}

// storeError words a PKCS12 decoding error of the store in data, read for
// key. A file that does not decode gets one short sentence, not the ASN.1
// decoder's dump of the structure it expected; go-pkcs12's other messages
// are short and never hold the password.
func storeError(key string, data []byte, err error) error {
	switch {
	case errors.Is(err, pkcs12.ErrIncorrectPassword):
		return errors.New("wrong password (or not a PKCS12 file)")
	case strings.Contains(err.Error(), "asn1:"):
		msg := "not a PKCS12 file, or a damaged one"
		if bytes.Contains(data, []byte("-----BEGIN ")) {
			msg += fmt.Sprintf(" (it is PEM: set %s.type=PEM)", strings.TrimSuffix(key, ".location"))
		}
		return errors.New(msg)
	}
	return err
}

// pemPairError words tls.X509KeyPair's error without quoting PEM text.
func pemPairError(err error) string {
	return "not a matching PEM certificate chain and unencrypted private key (" + err.Error() + ")"
}

// pemFileCerts reads the PEM certificates of a file.
func pemFileCerts(key, path string) ([]*x509.Certificate, error) {
	data, err := readFile(key, path)
	if err != nil {
		return nil, err
	}
	certs := pemCerts(data)
	if len(certs) == 0 {
		return nil, fmt.Errorf("kclient: %s: %s holds no PEM certificate", key, path)
	}
	return certs, nil
}

// readFile reads the file that key names through the configuration's
// bounded reader: a FIFO or a device is refused before a byte is read,
// so the read never blocks, and a file past boundedread.CredentialFile is
// refused too.
func readFile(key, path string) ([]byte, error) {
	data, err := boundedread.ReadRegularFile(context.Background(), path, boundedread.CredentialFile)
	if err != nil {
		return nil, fmt.Errorf("kclient: read %s: %w", key, err)
	}
	return data, nil
}

// pemCerts returns the certificates of the CERTIFICATE blocks in data.
func pemCerts(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return out
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// verifyWithoutHostname is the verification of
// ssl.endpoint.identification.algorithm="" (as in Kafka's Java clients):
// the broker's chain must lead to a trusted authority, but the
// certificate need not name the broker. Go's tls checks both or neither,
// so the handshake's own check is turned off and this one runs instead.
func verifyWithoutHostname(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("kclient: the broker presented no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
		return err
	}
}
