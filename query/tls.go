package query

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/rackstream/rackstream/internal/boundedread"
)

// Client certificate policies (http.tls.client.auth).
const (
	// ClientAuthNone asks clients for no certificate (the default).
	ClientAuthNone = "none"
	// ClientAuthRequest asks for a certificate and verifies one that is
	// presented against http.tls.client.ca; a client may present none.
	ClientAuthRequest = "request"
	// ClientAuthRequire fails the TLS handshake of a client that presents
	// no certificate signed by http.tls.client.ca: mutual TLS.
	ClientAuthRequire = "require"
)

// TLSFiles are the http.tls.* settings LoadTLS reads.
type TLSFiles struct {
	Cert string // http.tls.cert: this instance's certificate, served and presented to peers
	Key  string // http.tls.key: its private key
	CA   string // http.tls.ca: verifies peers when forwarding; empty: the system's roots
	// ClientAuth is http.tls.client.auth: ClientAuthNone (or ""),
	// ClientAuthRequest or ClientAuthRequire.
	ClientAuth string
	// ClientCA is http.tls.client.ca: verifies clients' certificates;
	// required unless ClientAuth is none.
	ClientCA string
}

// LoadTLS builds the server and peer TLS configs from the configuration's
// files. The server config serves f.Cert and verifies clients' certificates
// as f.ClientAuth says, against f.ClientCA. The peer config verifies peers
// against f.CA (the system's roots when empty) and presents f.Cert to them,
// so that a peer requiring client certificates accepts this instance: under
// mutual TLS the instance certificate must allow both server and client
// authentication (extended key usages serverAuth and clientAuth, or none).
// With no files set, both configs are nil (plain HTTP) and f.CA, f.ClientCA
// and f.ClientAuth must be unset too.
func LoadTLS(f TLSFiles) (server, peer *tls.Config, err error) {
	var auth tls.ClientAuthType
	switch f.ClientAuth {
	case "", ClientAuthNone:
		auth = tls.NoClientCert
	case ClientAuthRequest:
		auth = tls.VerifyClientCertIfGiven
	case ClientAuthRequire:
		auth = tls.RequireAndVerifyClientCert
	default:
		return nil, nil, fmt.Errorf("http.tls.client.auth %q: want none, request or require", f.ClientAuth)
	}
	switch {
	case f.Cert == "" && f.Key == "" && f.CA == "" && f.ClientCA == "" && auth == tls.NoClientCert:
		return nil, nil, nil
	case f.Cert == "" || f.Key == "":
		return nil, nil, errors.New("http.tls.cert and http.tls.key must be set together, and with http.tls.ca, http.tls.client.auth or http.tls.client.ca")
	case auth != tls.NoClientCert && f.ClientCA == "":
		return nil, nil, fmt.Errorf("http.tls.client.auth=%s needs http.tls.client.ca, the CA that signs clients' certificates", f.ClientAuth)
	}
	certPEM, err := readFile("http.tls.cert", f.Cert)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := readFile("http.tls.key", f.Key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("load http.tls.cert %s and http.tls.key %s: %w", f.Cert, f.Key, err)
	}
	server = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, ClientAuth: auth}
	peer = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		if peer.RootCAs, err = loadPool("http.tls.ca", f.CA); err != nil {
			return nil, nil, err
		}
	}
	if f.ClientCA != "" {
		if auth == tls.NoClientCert {
			return nil, nil, errors.New("http.tls.client.ca is set but http.tls.client.auth is none: set it to request or require")
		}
		if server.ClientCAs, err = loadPool("http.tls.client.ca", f.ClientCA); err != nil {
			return nil, nil, err
		}
	}
	return server, peer, nil
}

// readFile reads the file that key names through the configuration's
// bounded reader: a FIFO or a device is refused before a byte is read,
// so the read never blocks, and a file past boundedread.CredentialFile is
// refused too.
func readFile(key, file string) ([]byte, error) {
	data, err := boundedread.ReadRegularFile(context.Background(), file, boundedread.CredentialFile)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return data, nil
}

// loadPool reads a PEM bundle of CA certificates named by key.
func loadPool(key, file string) (*x509.CertPool, error) {
	pem, err := readFile(key, file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s %s: no PEM certificate found", key, file)
	}
	return pool, nil
}
