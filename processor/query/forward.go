package query

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// peerAnswer is a peer's HTTP answer, relayed as it is.
type peerAnswer struct {
	code       int
	body       []byte
	retryAfter string
}

// forwardError is a forward that got no answer.
type forwardError struct {
	member string
	url    string
	err    error
	// rejected: not attempted, too many forwards in flight.
	rejected bool
	// untrusted: the peer's certificate failed verification, a
	// configuration error that retrying won't fix.
	untrusted bool
}

func (e *forwardError) Error() string {
	if e.rejected {
		return fmt.Sprintf("forward to %s: %v", e.member, e.err)
	}
	return fmt.Sprintf("forward to %s (%s): %v", e.member, e.url, e.err)
}

func (e *forwardError) Unwrap() error { return e.err }

// forward sends a GET for escapedPath?rawQuery to member, marked as
// forwarded, with the token, within timeout. At most Options.MaxForwards
// forwards wait for peers at once; beyond that it fails at once.
func (s *Server) forward(ctx context.Context, route string, m balancer.Member, gen int32, escapedPath, rawQuery string, timeout time.Duration) (peerAnswer, error) {
	if m.Endpoint == "" {
		return peerAnswer{}, &forwardError{member: m.ProcessID, err: errors.New("it has no endpoint (application.server is not set there)"), rejected: true}
	}
	select {
	case s.forwards <- struct{}{}:
	default:
		s.met.forwards.WithLabelValues(route, resultRejected).Inc()
		return peerAnswer{}, &forwardError{member: m.ProcessID, rejected: true,
			err: fmt.Errorf("too many forwarded requests in flight (%d)", cap(s.forwards))}
	}
	s.met.inFlight.Inc()
	defer func() {
		<-s.forwards
		s.met.inFlight.Dec()
	}()

	url := s.scheme + "://" + m.Endpoint + escapedPath
	if rawQuery != "" {
		url += "?" + rawQuery
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return peerAnswer{}, &forwardError{member: m.ProcessID, url: url, err: err}
	}
	req.Header.Set(HeaderForwardedBy, s.rt.Self())
	req.Header.Set(HeaderGeneration, strconv.FormatInt(int64(gen), 10))
	if s.token != nil {
		req.Header.Set("Authorization", string(s.token))
	}
	resp, err := s.peers.Do(req)
	if err != nil {
		s.met.forwards.WithLabelValues(route, resultError).Inc()
		fe := &forwardError{member: m.ProcessID, url: url, err: unwrapURLError(err), untrusted: isVerifyError(err)}
		level := slog.LevelDebug
		if fe.untrusted {
			level = slog.LevelWarn // a configuration error: http.tls.ca does not trust the peer
		}
		s.log.Log(ctx, level, "forward failed", "peer", m.ProcessID, "url", url, "err", fe.err)
		return peerAnswer{}, fe
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, s.opts.MaxForwardBodyBytes+1))
	if err == nil && int64(len(body)) > s.opts.MaxForwardBodyBytes {
		err = fmt.Errorf("answer larger than %d bytes", s.opts.MaxForwardBodyBytes)
	}
	if err != nil {
		s.met.forwards.WithLabelValues(route, resultError).Inc()
		return peerAnswer{}, &forwardError{member: m.ProcessID, url: url, err: fmt.Errorf("read answer: %w", err)}
	}
	s.met.forwards.WithLabelValues(route, resultOK).Inc()
	return peerAnswer{code: resp.StatusCode, body: body, retryAfter: resp.Header.Get("Retry-After")}, nil
}

// unwrapURLError drops url.Error's "Get <url>:" prefix: forwardError names
// the URL once.
func unwrapURLError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// isVerifyError reports a failed verification of the peer's certificate.
func isVerifyError(err error) bool {
	var (
		ve  *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		he  x509.HostnameError
		cie x509.CertificateInvalidError
	)
	return errors.As(err, &ve) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &cie)
}
