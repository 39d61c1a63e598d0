package query

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// Headers between instances.
const (
	// HeaderForwardedBy marks a request forwarded by a peer (its process
	// id). A request that carries it, signed or not, is answered locally
	// or refused, never forwarded again: at most one hop, no loops. Only a
	// hop whose signature verifies (hop.go) gets a peer's key limits.
	HeaderForwardedBy = "Rackstream-Forwarded-By"
	// HeaderGeneration carries the forwarding instance's placement
	// generation, for diagnostics; the hop signature covers it.
	HeaderGeneration = "Rackstream-Generation"
)

// Server answers state queries, metadata, health and metrics over HTTP.
// Create it with New; serve it with Serve, or mount it (it is an
// http.Handler) in a server of your own with comparable limits.
type Server struct {
	opts       Options
	rt         Reader
	mux        *http.ServeMux
	stores     map[string]ServedStore
	storeNames string
	log        *slog.Logger
	met        *metrics
	metricsH   http.Handler
	peers      *http.Client
	scheme     string
	forwards   chan struct{} // a slot per forward in flight
	scans      chan struct{} // a slot per forwarded scan in flight, which also holds one of forwards
	retryAfter string
	token      []byte
	tokenSum   [sha256.Size]byte
	hopKey     []byte // signs and checks hops; nil without a token
	logs       logLimiter
	health     peerHealth // peers that recently failed to answer (route.go)
	srv        *http.Server
}

// New returns a server. It fails on an invalid configuration: a missing
// reader, TLS without a peer config, a peer config that skips
// verification, a limit that is not positive, duplicate stores.
func New(opts Options) (*Server, error) {
	if opts.Reader == nil {
		return nil, errors.New("query: Options.Reader is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.TLS != nil && opts.PeerTLS == nil {
		return nil, errors.New("query: TLS is set without PeerTLS: forwarding to peers needs the CA that verifies them (http.tls.ca)")
	}
	if opts.TLS != nil && opts.TLS.ClientAuth >= tls.VerifyClientCertIfGiven && opts.TLS.ClientCAs == nil {
		return nil, errors.New("query: TLS verifies client certificates without ClientCAs: set http.tls.client.ca")
	}
	if opts.PeerTLS != nil && opts.PeerTLS.InsecureSkipVerify {
		return nil, errors.New("query: PeerTLS skips certificate verification: Rackstream never forwards to an unverified peer")
	}
	if err := opts.resolveLimits(); err != nil {
		return nil, err
	}
	s := &Server{
		opts:       opts,
		rt:         opts.Reader,
		stores:     make(map[string]ServedStore, len(opts.Stores)),
		log:        opts.Logger,
		scheme:     "http",
		forwards:   make(chan struct{}, opts.MaxForwards),
		scans:      make(chan struct{}, max(1, opts.MaxForwards/2)),
		retryAfter: strconv.Itoa(max(1, int((opts.RetryAfter+time.Second-1)/time.Second))),
	}
	names := make([]string, 0, len(opts.Stores))
	for _, st := range opts.Stores {
		if err := checkStoreName(st.Name); err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		if _, dup := s.stores[st.Name]; dup {
			return nil, fmt.Errorf("query: store %q given twice", st.Name)
		}
		s.stores[st.Name] = st
		names = append(names, st.Name)
	}
	slices.Sort(names)
	s.storeNames = strings.Join(names, ", ")
	if opts.AuthToken != "" {
		s.token = []byte(opts.AuthToken)
		s.tokenSum = sha256.Sum256(s.token)
		s.hopKey = hopKey(opts.AuthToken)
	}
	s.met = newMetrics(opts.Registerer)
	g := opts.Gatherer
	if g == nil {
		g = prometheus.NewRegistry()
	}
	s.metricsH = promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorLog: slogPrinter{opts.Logger}})
	tr := &http.Transport{
		Proxy:                 nil, // peers are reached directly
		DialContext:           (&net.Dialer{Timeout: opts.ForwardTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   opts.ForwardTimeout,
		ResponseHeaderTimeout: opts.ForwardTimeout,
		ForceAttemptHTTP2:     opts.PeerTLS != nil,
	}
	if opts.PeerTLS != nil {
		tr.TLSClientConfig = opts.PeerTLS.Clone()
		s.scheme = "https"
	}
	s.peers = &http.Client{
		Transport: tr,
		// A peer's redirect is not followed: the answer is relayed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	s.routes()
	s.srv = s.HTTPServer(s)
	return s, nil
}

// HTTPServer returns an http.Server for h with the server's limits
// (timeouts, header size) and TLS config: for a caller that mounts the
// query server inside a handler of its own (h wraps s) and serves it
// itself. Serve it with ServeTLS(l, "", "") when TLSConfig is set.
func (s *Server) HTTPServer(h http.Handler) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		WriteTimeout:      s.opts.WriteTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if s.opts.TLS != nil {
		srv.TLSConfig = s.opts.TLS.Clone()
	}
	return srv
}

// Serve serves HTTP (HTTPS with Options.TLS) on l with the configured
// timeouts and limits until Shutdown; it returns http.ErrServerClosed then.
func (s *Server) Serve(l net.Listener) error {
	if s.opts.TLS != nil {
		l = tls.NewListener(l, s.srv.TLSConfig)
	}
	return s.srv.Serve(l)
}

// Shutdown stops Serve gracefully: no new connections, in-flight requests
// finish until ctx is done. Idle peer connections are closed.
func (s *Server) Shutdown(ctx context.Context) error {
	defer s.peers.CloseIdleConnections()
	return s.srv.Shutdown(ctx)
}

// ServeHTTP routes a request (routes.go). Every answer it writes is JSON,
// errors in one shape (errorBody); only what net/http refuses before
// calling it (a malformed request line or escape in the path, oversized
// headers) gets net/http's plain-text answer.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &statusWriter{ResponseWriter: w, code: http.StatusOK, route: routeUnknown, path: r.URL.EscapedPath()}
	s.dispatch(rw, r)
	s.met.requests.WithLabelValues(rw.route, s.met.code(rw.code)).Inc()
	s.met.latency.WithLabelValues(rw.route).Observe(time.Since(start).Seconds())
}

// origin is where an authenticated request comes from, as far as
// forwarding goes.
type origin struct {
	// hop: it arrived as a hop (HeaderForwardedBy, signed or not), and is
	// answered from local replicas or refused, never forwarded again. A
	// marker can only narrow what a request may do, so none is trusted for
	// this.
	hop bool
	// peer: its hop signature verifies, and its scan bounds have a peer's
	// limit (forwardedMaxKey). Implies hop.
	peer bool
}

// authenticate answers 401 and returns false unless r carries the bearer
// token or is an authenticated hop. A peer is a request whose hop
// signature verifies; anything else is a client's, whatever its headers
// claim, and needs the bearer token. Either may have arrived as a hop.
func (s *Server) authenticate(w *statusWriter, r *http.Request) (origin, bool) {
	hc := checkHop(r, s.hopKey, s.rt.Self(), time.Now())
	if hc == hopValid {
		return origin{hop: true, peer: true}, true
	}
	if s.authorized(r) {
		return origin{hop: r.Header.Get(HeaderForwardedBy) != ""}, true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="rackstream"`)
	switch {
	case hc == hopBadMAC:
		s.failCode(w, http.StatusUnauthorized, codeHopSignature, "forwarded request's signature does not verify: the instances' http.auth.token differ")
	case hc == hopExpired:
		s.failCode(w, http.StatusUnauthorized, codeHopExpired, fmt.Sprintf("forwarded request's signing time is more than %v away from this instance's clock: the instances' clocks differ", hopWindow))
	case r.Header.Get("Authorization") == "":
		s.failCode(w, http.StatusUnauthorized, codeMissingToken, "missing bearer token: send Authorization: Bearer <http.auth.token>")
	default:
		s.failCode(w, http.StatusUnauthorized, codeWrongToken, "wrong bearer token")
	}
	return origin{}, false
}

// authorized reports whether r carries the token in the Bearer scheme,
// whose name is case-insensitive as every HTTP authentication scheme's
// (RFC 9110 §11.1). It compares digests in constant time:
// subtle.ConstantTimeCompare returns at once on a length mismatch, which
// would reveal the token's length.
func (s *Server) authorized(r *http.Request) bool {
	if s.token == nil {
		return true
	}
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	ok := strings.EqualFold(scheme, "Bearer")
	got := sha256.Sum256([]byte(strings.TrimLeft(token, " ")))
	return subtle.ConstantTimeCompare(got[:], s.tokenSum[:]) == 1 && ok
}

func (s *Server) readyz(w *statusWriter) {
	if err := s.rt.Ready(); err != nil {
		w.Header().Set("Retry-After", s.retryAfter)
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": s.notReadyReason(err)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ready": true})
}

// notReadyReason is what a client sees of why the instance is not ready:
// a NotReady's condition, in words; any other error is logged (once a
// minute per text) and named only as unexplained.
func (s *Server) notReadyReason(err error) string {
	var nr *NotReady
	if errors.As(err, &nr) && nr.Condition != "" {
		return nr.Condition
	}
	if s.logs.first("notready\x00"+err.Error(), time.Minute) {
		s.log.Info("not ready", "err", err)
	}
	return fmt.Sprintf("not ready (details in %s's log)", s.rt.Self())
}

// store returns the named store or answers 404 naming it.
func (s *Server) store(w *statusWriter, name string) (ServedStore, bool) {
	st, ok := s.stores[name]
	if !ok {
		known := s.storeNames
		if known == "" {
			known = "none"
		}
		s.failCode(w, http.StatusNotFound, codeUnknownStore, fmt.Sprintf("unknown store %q (stores: %s)", name, known))
	}
	return st, ok
}

// isolation resolves a read's isolation parameter ("" when absent): the
// default is latest under at-least-once and committed under exactly-once,
// where latest is refused (400) because the latest writes belong to an
// open transaction that may still abort (docs/design.md §7).
//
// A forwarded read carries the isolation parameter only when the client
// gave one: the peer resolves the same default (the guarantee is the
// group's), and an instance of an older build, which knows no isolation
// parameter, still answers a rolling upgrade's forwards.
func (s *Server) isolation(w *statusWriter, iso Isolation) (Isolation, bool) {
	switch {
	case iso == "" && s.opts.ExactlyOnce:
		return IsolationCommitted, true
	case iso == "":
		return IsolationLatest, true
	case iso == IsolationLatest && s.opts.ExactlyOnce:
		s.fail(w, http.StatusBadRequest, "isolation=latest is not available under processing.guarantee=exactly_once_v2: "+
			"reads see committed state only (isolation=committed, the default), never an open transaction's writes")
		return "", false
	}
	return iso, true
}

// placement returns the current placement or answers 503.
func (s *Server) placement(w *statusWriter) (*balancer.Placement, bool) {
	p := s.rt.Placement()
	if p == nil || len(p.Tasks) == 0 {
		s.fail(w, http.StatusServiceUnavailable, "no placement yet: this instance has not joined its group")
		return nil, false
	}
	return p, true
}

// statusWriter records the status code and route for metrics, and the
// request's path as it arrived (the mux routes a rewritten copy).
type statusWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
	route       string // the route's name, a metric label
	path        string // the escaped request path, as received
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.code, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type slogPrinter struct{ l *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.l.Error("metrics exposition", "err", fmt.Sprint(v...)) }
