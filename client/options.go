package client

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"time"
)

// Opt configures a Client, in the style of franz-go's kgo.Opt.
type Opt interface{ apply(*config) }

type opt func(*config)

func (o opt) apply(c *config) { o(c) }

type config struct {
	endpoints []string
	token     string
	tlsConfig *tls.Config
	rootCAs   *x509.CertPool
	timeout   time.Duration
	maxLag    int64
	transport http.RoundTripper
}

// Endpoints are instances to read the placement from first (host:port, the
// instances' application.server). One reachable instance is enough; later
// the client also uses every endpoint the placement lists. Required.
func Endpoints(hostports ...string) Opt {
	return opt(func(c *config) { c.endpoints = append(c.endpoints, hostports...) })
}

// AuthToken is the cluster's http.auth.token, sent on every request as
// Authorization: Bearer <token>. It never appears in an error.
func AuthToken(token string) Opt {
	return opt(func(c *config) { c.token = token })
}

// TLSConfig makes the client speak https with this configuration (client
// certificates for mutual TLS, RootCAs, ServerName). The client clones it.
func TLSConfig(cfg *tls.Config) Opt {
	return opt(func(c *config) { c.tlsConfig = cfg })
}

// RootCAs makes the client speak https and trust the instances'
// certificates signed by pool (the CA in the cluster's http.tls.ca), on
// top of TLSConfig if given.
func RootCAs(pool *x509.CertPool) Opt {
	return opt(func(c *config) { c.rootCAs = pool })
}

// RequestTimeout bounds each HTTP request, to one instance [5s]: a
// candidate that does not answer within it counts as failed and the next
// one is asked. The context passed to each call bounds the whole call.
func RequestTimeout(d time.Duration) Opt {
	return opt(func(c *config) { c.timeout = d })
}

// MaxLag lets a standby within n changelog records of its task's active
// answer reads when the active cannot [-1: actives only]. ReadMaxLag
// overrides it for one read.
func MaxLag(n int64) Opt {
	return opt(func(c *config) { c.maxLag = n })
}

// Transport replaces the HTTP transport (for instrumentation or a custom
// dialer); TLSConfig and RootCAs are then the transport's business.
func Transport(rt http.RoundTripper) Opt {
	return opt(func(c *config) { c.transport = rt })
}

// ReadOpt configures one read (Get or Scan).
type ReadOpt interface{ applyRead(*readConfig) }

type readOpt func(*readConfig)

func (o readOpt) applyRead(c *readConfig) { o(c) }

type readConfig struct {
	maxLag      int64
	minPosition int64
}

// ReadMaxLag is MaxLag for one read; -1 allows actives only.
func ReadMaxLag(n int64) ReadOpt {
	return readOpt(func(c *readConfig) { c.maxLag = n })
}

// MinPosition refuses (409, an *Error with Status 409) an answer from a
// replica whose position (changelog checkpoint of the key's task) is
// behind p: pass a previous answer's Position to never read backwards when
// the answering replica changes. Get only.
func MinPosition(p int64) ReadOpt {
	return readOpt(func(c *readConfig) { c.minPosition = p })
}
