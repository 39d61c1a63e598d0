package client

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"time"
)

// Zero asks for zero in an option whose zero value means its default:
// MaxLag: Zero lets a standby answer only once it has caught up (a lag
// of 0).
const Zero = -1

// Options configure a Client. Endpoints is required; every other field
// left at its zero value takes its default, in brackets.
type Options struct {
	// Endpoints are instances to read the placement from first (host:port,
	// the instances' application.server). One reachable instance is
	// enough; later the client also uses every endpoint the placement
	// lists.
	Endpoints []string
	// AuthToken is the cluster's http.auth.token, sent on every request as
	// Authorization: Bearer <token> [none]. It never appears in an error.
	AuthToken string
	// TLSConfig makes the client speak https with this configuration
	// (client certificates for mutual TLS, RootCAs, ServerName). The client
	// clones it.
	TLSConfig *tls.Config
	// RootCAs makes the client speak https and trust the instances'
	// certificates signed by this pool (the CA in the cluster's
	// http.tls.ca), on top of TLSConfig if given.
	RootCAs *x509.CertPool
	// RequestTimeout bounds each HTTP request, to one instance [5s]: a
	// candidate that does not answer within it counts as failed and the
	// next one is asked. The context passed to each call bounds the whole
	// call.
	RequestTimeout time.Duration
	// MaxLag lets a standby within MaxLag changelog records of its task's
	// active answer reads when the active cannot [0: actives only]; Zero
	// lets a caught-up standby answer. ReadMaxLag overrides it for one
	// read.
	MaxLag int64
	// Transport replaces the HTTP transport (for instrumentation or a
	// custom dialer); TLSConfig and RootCAs are then the transport's
	// business.
	Transport http.RoundTripper
}

// standbyLag turns a MaxLag as the options read it into the max_lag a
// request sends: -1 (actives only) for 0 or any negative value but Zero,
// 0 for Zero.
func standbyLag(v int64) int64 {
	switch {
	case v == Zero:
		return 0
	case v <= 0:
		return -1
	}
	return v
}

// ReadOpt configures one read (Get or Scan).
type ReadOpt interface{ applyRead(*readConfig) }

type readOpt func(*readConfig)

func (o readOpt) applyRead(c *readConfig) { o(c) }

type readConfig struct {
	maxLag      int64 // as sent: -1 for actives only
	minPosition int64
}

// ReadMaxLag is MaxLag for one read, read the same way: 0 asks actives
// only, Zero lets a caught-up standby answer too.
func ReadMaxLag(n int64) ReadOpt {
	return readOpt(func(c *readConfig) { c.maxLag = standbyLag(n) })
}

// MinPosition refuses (409, an *Error with Status 409) an answer from a
// replica whose position (changelog checkpoint of the key's task) is
// behind p: pass a previous answer's Position to never read backwards when
// the answering replica changes. Get only.
func MinPosition(p int64) ReadOpt {
	return readOpt(func(c *readConfig) { c.minPosition = p })
}
