package kclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/rackstream/rackstream/config"
)

// CheckTimeout bounds Check when its context has no deadline.
const CheckTimeout = 30 * time.Second

// AuthError is a broker's refusal of the SASL login: wrong user or password,
// a mechanism the broker's listener does not enable, or SASL sent to a
// listener that does not speak it. It names the broker and the mechanism,
// never the password.
type AuthError struct {
	Broker    string // host:port of the broker that refused
	Protocol  string // the listener's security protocol: SASL_PLAINTEXT or SASL_SSL
	Mechanism string // PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER
	Err       error  // the broker's answer, or the closed connection
}

func (e *AuthError) Error() string {
	check := "sasl.username, sasl.password and sasl.mechanism"
	if e.Mechanism == string(config.OAuthBearer) {
		check = "that the identity provider's tokens are for this cluster (issuer, audience, scope) and sasl.mechanism"
	}
	return fmt.Sprintf("kafka broker %s (%s listener) refused SASL %s authentication: %v (check %s, and that the broker's listener enables %s for this user)",
		e.Broker, e.Protocol, e.Mechanism, e.Err, check, e.Mechanism)
}

func (e *AuthError) Unwrap() error { return e.Err }

// TLSError is a failed TLS handshake with a broker: its certificate is not
// signed by an authority the client trusts or does not name the broker, or
// the broker refused the client's certificate (or its absence). It names
// the broker and says which settings to look at.
type TLSError struct {
	Broker   string // host:port
	Protocol string // SSL or SASL_SSL
	Err      error
}

func (e *TLSError) Error() string {
	var hint string
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ae tls.AlertError
	switch {
	case errors.As(e.Err, &ua):
		hint = "the broker's certificate is not signed by an authority in ssl.ca.location or ssl.truststore.location (the system's roots when neither is set)"
	case errors.As(e.Err, &he):
		hint = "the broker's certificate does not name the address dialled: use the name the certificate has in bootstrap.servers"
	case errors.As(e.Err, &ae), strings.Contains(e.Err.Error(), "remote error: tls"):
		hint = "the broker refused the TLS handshake: a listener requiring a client certificate needs ssl.certificate.location and ssl.key.location (or ssl.keystore.location) signed by an authority it trusts"
	default:
		hint = "check that the broker's listener speaks TLS, and ssl.ca.location"
	}
	return fmt.Sprintf("kafka broker %s (%s listener): TLS handshake failed: %v (%s)", e.Broker, e.Protocol, e.Err, hint)
}

func (e *TLSError) Unwrap() error { return e.Err }

// isTLSError reports whether err is a TLS handshake or certificate failure.
func isTLSError(err error) bool {
	var ce *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var ae tls.AlertError
	var re tls.RecordHeaderError
	return errors.As(err, &ce) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) ||
		errors.As(err, &ae) || errors.As(err, &re) || strings.Contains(err.Error(), "remote error: tls") ||
		strings.Contains(err.Error(), "tls: ")
}

// protocolOf names the security protocol a client's options speak.
func protocolOf(tlsOn bool, mech string) string {
	switch {
	case tlsOn && mech != "":
		return string(config.SASLSSL)
	case tlsOn:
		return string(config.SSL)
	case mech != "":
		return string(config.SASLPlaintext)
	}
	return string(config.Plaintext)
}

// Check connects to every seed broker of opts (the options of any client,
// see [Clients.Opts]) and asks it for cluster metadata, as a start-up check
// that turns a wrong address, TLS or SASL setting into one clear error
// instead of a client retrying in the background.
//
// It returns nil when a broker answered and none refused authentication. A
// refused login on any broker returns an [*AuthError] (credentials are the
// same on every broker, so a refusal is a configuration error, not an
// outage); when no broker answered it returns every broker's failure. A
// context without a deadline gets [CheckTimeout].
func Check(ctx context.Context, opts []kgo.Opt) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, CheckTimeout)
		defer cancel()
	}
	probe, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka client options: %w", err)
	}
	seeds, _ := probe.OptValue(kgo.SeedBrokers).([]string)
	mech := ""
	if ms, ok := probe.OptValue(kgo.SASL).([]sasl.Mechanism); ok && len(ms) > 0 {
		mech = ms[0].Name()
	}
	tc, _ := probe.OptValue(kgo.DialTLSConfig).(*tls.Config)
	proto := protocolOf(tc != nil, mech)
	probe.Close()
	if len(seeds) == 0 {
		return errors.New("kafka: no seed brokers to check")
	}

	var failures []string
	answered := false
	for _, seed := range seeds {
		err := checkBroker(ctx, opts, seed, mech, proto)
		var ae *AuthError
		var te *TLSError
		var oe *TokenError
		switch {
		case err == nil:
			answered = true
		case errors.As(err, &ae), errors.As(err, &te), errors.As(err, &oe):
			// The same settings go to every broker: a refusal is a
			// configuration error, not one broker's outage.
			return err
		case ctx.Err() != nil:
			failures = append(failures, fmt.Sprintf("%s: %v", seed, err))
			return fmt.Errorf("kafka: no broker of bootstrap.servers answered before the check's deadline: %s", strings.Join(failures, "; "))
		default:
			failures = append(failures, fmt.Sprintf("%s: %v", seed, err))
		}
	}
	if answered {
		return nil
	}
	return fmt.Errorf("kafka: no broker of bootstrap.servers answered: %s", strings.Join(failures, "; "))
}

// checkBroker pings one seed broker with a client of its own, so that a
// failure is known to be that broker's.
func checkBroker(ctx context.Context, opts []kgo.Opt, seed, mech, proto string) error {
	var h saslHook
	cl, err := kgo.NewClient(append(opts[:len(opts):len(opts)], kgo.SeedBrokers(seed), kgo.WithHooks(&h))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	err = cl.Ping(ctx)
	var oe *TokenError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &oe):
		return oe
	case proto == string(config.SSL) || proto == string(config.SASLSSL):
		if isTLSError(err) {
			return &TLSError{Broker: h.addrOr(seed), Protocol: proto, Err: err}
		}
	}
	if mech == "" {
		return err
	}
	switch {
	case isSASLError(err):
		return &AuthError{Broker: h.addrOr(seed), Protocol: proto, Mechanism: mech, Err: err}
	case h.failedInSASL():
		return &AuthError{Broker: h.addrOr(seed), Protocol: proto, Mechanism: mech, Err: fmt.Errorf("connection closed during the SASL exchange: %w", err)}
	}
	return err
}

// isSASLError reports whether a broker answered a SASL request with an error.
func isSASLError(err error) bool {
	return errors.Is(err, kerr.SaslAuthenticationFailed) ||
		errors.Is(err, kerr.UnsupportedSaslMechanism) ||
		errors.Is(err, kerr.IllegalSaslState)
}

// saslHook records the last request a broker connection sent, so that a
// connection closed in the middle of the SASL exchange (how kfake, and some
// proxies, refuse a login) is told apart from one closed for other reasons.
type saslHook struct {
	mu      sync.Mutex
	lastKey int16
	lastErr error
	addr    string
}

func (h *saslHook) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastKey, h.lastErr = key, e2e.Err()
	h.addr = net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
}

// failedInSASL reports whether the last request was a SASL step and failed.
func (h *saslHook) failedInSASL() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	sasl := h.lastKey == int16(kmsg.SASLHandshake) || h.lastKey == int16(kmsg.SASLAuthenticate)
	return sasl && h.lastErr != nil
}

func (h *saslHook) addrOr(seed string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.addr == "" || h.addr == ":0" {
		return seed
	}
	return h.addr
}
