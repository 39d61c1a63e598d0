package query

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// LoadTLS builds the server and peer TLS configs from the configuration's
// files: certFile and keyFile (http.tls.cert, http.tls.key) are this
// instance's certificate, caFile (http.tls.ca) the PEM bundle that verifies
// its peers when forwarding. With caFile empty, peers are verified against
// the system's roots. With certFile and keyFile empty, both configs are nil
// (plain HTTP) and caFile must be empty too.
func LoadTLS(certFile, keyFile, caFile string) (server, peer *tls.Config, err error) {
	switch {
	case certFile == "" && keyFile == "" && caFile == "":
		return nil, nil, nil
	case certFile == "" || keyFile == "":
		return nil, nil, errors.New("http.tls.cert and http.tls.key must be set together")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("load http.tls.cert %s and http.tls.key %s: %w", certFile, keyFile, err)
	}
	server = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	peer = &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, nil, fmt.Errorf("read http.tls.ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("http.tls.ca %s: no PEM certificate found", caFile)
		}
		peer.RootCAs = pool
	}
	return server, peer, nil
}
