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
// The files (ca.pem, broker.pem, client.pem, client-key.pem, oauth-key.pem,
// jwks.json) are described in package harness/kafkatest/certs, which
// writes them.
//
// Go rather than keytool and openssl: nothing to install, and the same code
// paths as the tests' own certificates.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest/certs"
)

func main() {
	dir := flag.String("dir", "", "directory to write into (created)")
	hosts := flag.String("hosts", "127.0.0.1,localhost", "names and addresses the broker's certificate is valid for, comma separated")
	valid := flag.Duration("valid", 30*24*time.Hour, "certificate lifetime")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "kafkacerts: -dir is required")
		os.Exit(2)
	}
	if err := certs.Write(*dir, strings.Split(*hosts, ","), *valid); err != nil {
		fmt.Fprintf(os.Stderr, "kafkacerts: %v\n", err)
		os.Exit(1)
	}
}
