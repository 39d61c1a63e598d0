package config

import (
	"fmt"
	"net"
	"strings"

	"github.com/rackstream/rackstream/internal/textsafe"
)

// Secure by default: an HTTP server that other hosts can reach answers only
// clients that present http.auth.token, unless the operator says
// http.auth=none. These are pure functions of the configuration; `rackstream
// run` applies them before it listens (`dev`, on loopback, has no need to).

// LoopbackOnly reports whether http.listen accepts connections from this
// host only: its host is a loopback address or "localhost". An empty host
// (":8080"), an unspecified address (0.0.0.0, ::) and any other name listen
// where others may connect.
func (h HTTP) LoopbackOnly() bool {
	host, _, err := net.SplitHostPort(h.Listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	host, _, _ = strings.Cut(host, "%") // an IPv6 zone
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Open reports whether the HTTP server serves hosts other than this one
// without authentication, because http.auth=none says so: worth a warning
// at start-up.
func (h HTTP) Open() bool {
	return h.Auth == HTTPAuthNone && !h.LoopbackOnly() && !h.mutualTLS()
}

// mutualTLS reports whether every client must present a certificate of
// http.tls.client.ca (http.tls.client.auth=require): authentication enough
// without a token.
func (h HTTP) mutualTLS() bool { return h.TLSClientAuth == "require" }

// CheckExposure returns an error, naming http.listen, http.auth.token and
// the opt-out http.auth=none, when the HTTP server would accept connections
// beyond loopback with no authentication (neither a token nor
// http.tls.client.auth=require) and http.auth does not say that this is on
// purpose; nil otherwise.
func (h HTTP) CheckExposure() error {
	if h.AuthToken != "" || h.mutualTLS() || h.Auth == HTTPAuthNone || h.LoopbackOnly() {
		return nil
	}
	return fmt.Errorf("http.listen=%s accepts connections from other hosts and http.auth.token is not set, so anyone who can reach it could read every store: "+
		"set http.auth.token (clients then send \"Authorization: Bearer <token>\") or require client certificates (http.tls.client.auth=require), "+
		"listen on loopback only (http.listen=127.0.0.1:PORT), or set http.auth=none to serve without authentication on purpose", textsafe.Short(h.Listen))
}
