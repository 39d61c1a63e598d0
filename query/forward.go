package query

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/internal/endpoint"
)

// peerAnswer is a peer's HTTP answer, relayed as it is.
type peerAnswer struct {
	code       int
	body       []byte
	retryAfter string
}

// Why a forward got no answer.
type forwardKind int

const (
	forwardBusy        forwardKind = iota // not attempted: too many forwards in flight
	forwardNoEndpoint                     // not attempted: the member announces no valid endpoint
	forwardUntrusted                      // the peer's certificate failed verification
	forwardTimeout                        // no answer within the timeout
	forwardUnreachable                    // connection refused, reset, TLS or DNS failure
	forwardBadAnswer                      // the answer could not be read
)

// forwardError is a forward that got no answer. Its Error has the details
// (the URL, the dial error) for the log; what a client sees is words().
type forwardError struct {
	member  string
	kind    forwardKind
	url     string
	err     error
	timeout time.Duration
	self    string // this instance, whose log has the details
}

func (e *forwardError) Error() string {
	if e.url == "" {
		return fmt.Sprintf("forward to %s: %v", e.member, e.err)
	}
	return fmt.Sprintf("forward to %s (%s): %v", e.member, e.url, e.err)
}

func (e *forwardError) Unwrap() error { return e.err }

// words says what went wrong for a client: never a URL or a raw error,
// which go to the log only (docs/design.md §10).
func (e *forwardError) words() string {
	switch e.kind {
	case forwardBusy:
		return fmt.Sprintf("%s was not asked: %v", e.member, e.err)
	case forwardNoEndpoint:
		return fmt.Sprintf("%s announces no valid endpoint (application.server)", e.member)
	case forwardUntrusted:
		return fmt.Sprintf("%s's certificate is not trusted by http.tls.ca (details in %s's log)", e.member, e.self)
	case forwardTimeout:
		return fmt.Sprintf("%s did not answer within %v", e.member, e.timeout)
	case forwardBadAnswer:
		return fmt.Sprintf("%s's answer could not be read (details in %s's log)", e.member, e.self)
	}
	return fmt.Sprintf("%s could not be reached (details in %s's log)", e.member, e.self)
}

// forward sends a GET for escapedPath?rawQuery to member as a signed hop
// (hop.go), within timeout. At most Options.MaxForwards forwards wait for
// peers at once, and of them at most half scans (takeSlot); beyond that it
// fails at once. A member whose endpoint is not host:port
// (internal/endpoint) is never dialled: a member must not steer the URL,
// nor receive a request it was not meant to.
func (s *Server) forward(ctx context.Context, route string, m balancer.Member, gen int32, escapedPath, rawQuery string, timeout time.Duration) (peerAnswer, error) {
	if err := endpoint.Validate(m.Endpoint); err != nil {
		s.met.forwards.WithLabelValues(route, resultBadEndpoint).Inc()
		if s.logs.first("endpoint\x00"+m.ProcessID+"\x00"+m.Endpoint, 0) {
			s.log.Warn("a member announces no valid endpoint (application.server): it gets no forwarded requests",
				"peer", m.ProcessID, "endpoint", truncate(m.Endpoint), "err", err)
		}
		return peerAnswer{}, &forwardError{member: m.ProcessID, kind: forwardNoEndpoint, err: err, self: s.rt.Self()}
	}
	release, err := s.takeSlot(route)
	if err != nil {
		s.met.forwards.WithLabelValues(route, resultRejected).Inc()
		return peerAnswer{}, &forwardError{member: m.ProcessID, kind: forwardBusy, self: s.rt.Self(), err: err}
	}
	s.met.inFlight.Inc()
	defer func() {
		release()
		s.met.inFlight.Dec()
	}()

	fail := func(kind forwardKind, u string, err error) (peerAnswer, error) {
		s.met.forwards.WithLabelValues(route, resultError).Inc()
		fe := &forwardError{member: m.ProcessID, kind: kind, url: u, err: err, timeout: timeout, self: s.rt.Self()}
		switch {
		case kind == forwardUntrusted:
			// A configuration error: http.tls.ca does not trust the peer.
			s.log.Warn("forward failed: the peer's certificate is not trusted", "peer", m.ProcessID, "url", u, "err", err)
		case s.logs.first("forward\x00"+m.ProcessID, repeatLogEvery):
			s.log.Info("forward failed", "peer", m.ProcessID, "url", u, "err", err,
				"note", fmt.Sprintf("further failures to this peer are not logged for %v", repeatLogEvery))
		}
		return peerAnswer{}, fe
	}
	path, err := url.PathUnescape(escapedPath)
	if err != nil {
		return fail(forwardUnreachable, "", fmt.Errorf("path: %w", err))
	}
	// Scheme and host only from the endpoint; the path and query are ours.
	u := &url.URL{Scheme: s.scheme, Host: m.Endpoint, Path: path, RawPath: escapedPath, RawQuery: rawQuery}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fail(forwardUnreachable, u.String(), err)
	}
	signHop(req, s.hopKey, s.rt.Self(), m.ProcessID, gen, time.Now())
	resp, err := s.peers.Do(req)
	if err != nil {
		err = unwrapURLError(err)
		kind := forwardUnreachable
		var ne net.Error
		switch {
		case isVerifyError(err):
			kind = forwardUntrusted
		case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
			kind = forwardTimeout
		}
		return fail(kind, u.String(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, s.opts.MaxForwardBodyBytes+1))
	if err == nil && int64(len(body)) > s.opts.MaxForwardBodyBytes {
		err = fmt.Errorf("answer larger than %d bytes", s.opts.MaxForwardBodyBytes)
	}
	if err != nil {
		return fail(forwardBadAnswer, u.String(), fmt.Errorf("read answer: %w", err))
	}
	s.met.forwards.WithLabelValues(route, resultOK).Inc()
	return peerAnswer{code: resp.StatusCode, body: body, retryAfter: resp.Header.Get("Retry-After")}, nil
}

// takeSlot takes a forward slot for route without waiting, and returns
// the func that gives it back. A scan takes one of the scan slots (half of
// MaxForwards, at least one) as well: a scan's page can take a peer long
// to read, and however many scans wait on peers, lookups and status
// requests still find a slot.
func (s *Server) takeSlot(route string) (release func(), err error) {
	scan := route == routeScan || route == routeWindowsScan
	if scan {
		select {
		case s.scans <- struct{}{}:
		default:
			return nil, fmt.Errorf("too many forwarded scans in flight (%d)", cap(s.scans))
		}
	}
	select {
	case s.forwards <- struct{}{}:
	default:
		if scan {
			<-s.scans
		}
		return nil, fmt.Errorf("too many forwarded requests in flight (%d)", cap(s.forwards))
	}
	return func() {
		<-s.forwards
		if scan {
			<-s.scans
		}
	}, nil
}

// repeatLogEvery spaces the logged failures of one kind about one thing
// (forwards to one peer, reads of one replica): a peer that is down would
// otherwise log a line per request.
const repeatLogEvery = 10 * time.Second

// logLimiter says whether a log line keyed by what it is about is due.
type logLimiter struct {
	mu   sync.Mutex
	last map[string]time.Time // guarded by mu: when each key was last logged
}

// logLimiterMax bounds the keys remembered; past it they are forgotten (and
// may be logged once more), so that members coming and going for months
// cannot grow the map.
const logLimiterMax = 4096

// first reports whether key is due: never logged, or, with every > 0,
// last logged at least every ago.
func (l *logLimiter) first(key string, every time.Duration) bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.last[key]; ok && (every <= 0 || now.Sub(t) < every) {
		return false
	}
	if l.last == nil || len(l.last) >= logLimiterMax {
		l.last = make(map[string]time.Time)
	}
	l.last[key] = now
	return true
}

// unwrapURLError drops url.Error's "Get <url>:" prefix: forwardError names
// the URL once.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
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
