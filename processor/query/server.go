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

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/processor/partition"
)

// Headers between instances.
const (
	// HeaderForwardedBy marks a request forwarded by a peer (its process
	// id). A forwarded request whose hop signature verifies (hop.go) is
	// answered locally or refused, never forwarded again: at most one hop,
	// no loops. Without a valid signature the header is ignored.
	HeaderForwardedBy = "Rackstream-Forwarded-By"
	// HeaderGeneration carries the forwarding instance's placement
	// generation, for diagnostics; the hop signature covers it.
	HeaderGeneration = "Rackstream-Generation"
)

// Options configure a Server. Reader is required; the rest have defaults.
type Options struct {
	// Reader is what the server reads the placement, local replicas and
	// readiness from: the runtime, adapted (processor/service).
	Reader Reader
	// ExactlyOnce says the group runs processing.guarantee=exactly_once_v2:
	// reads default to isolation=committed and isolation=latest is refused
	// (400), since the latest writes belong to an open transaction. Under
	// at-least-once (false) reads default to isolation=latest.
	ExactlyOnce bool
	// Stores are the stores queries may name.
	Stores []ServedStore
	// Partitioner maps a key to its task [murmur2]: the runtime's, the one
	// every producer uses.
	Partitioner partition.Partitioner
	// Settings are this instance's own assignment settings. /v1/metadata
	// shows the leader's, carried in the placement, and these only for a
	// placement without them (a group speaking wire version 3 or older),
	// marked source "instance"; its probing interval is always this one's.
	// Nil: such a placement's document has no settings (a reader infers
	// them).
	Settings *assignor.MetadataSettings

	// AuthToken, when set (http.auth.token), is required as
	// "Authorization: Bearer <token>" on every route but /healthz and
	// /readyz. It is never sent to a peer: a forwarded request is signed
	// with a key derived from it instead (hop.go), and only a request so
	// signed is a peer's. Without it no hop is authenticated.
	AuthToken string
	// TLS, when set, makes the server serve HTTPS (http.tls.cert and
	// http.tls.key), and verify clients' certificates as its ClientAuth
	// and ClientCAs say (http.tls.client.auth, http.tls.client.ca);
	// LoadTLS builds it.
	TLS *tls.Config
	// PeerTLS, when set, makes forwarding use HTTPS with this config; its
	// RootCAs (http.tls.ca) verify the peers and its Certificates are
	// presented to them (this instance's own, for peers that require
	// client certificates). It must not skip verification. Required with
	// TLS.
	PeerTLS *tls.Config

	// Registerer receives the HTTP metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Gatherer is what /metrics exposes (the runtime's registry; nil: an
	// empty exposition).
	Gatherer prometheus.Gatherer
	// Logger receives the server's logs [slog.Default()].
	Logger *slog.Logger

	// Limits; zero means the default in brackets.
	ReadHeaderTimeout time.Duration // [5s]
	ReadTimeout       time.Duration // [10s]
	WriteTimeout      time.Duration // [30s]
	IdleTimeout       time.Duration // [2m]
	MaxHeaderBytes    int           // [16 KiB]
	// MaxKeyBytes bounds a key (and prefix, from, to) after decoding [4 KiB].
	MaxKeyBytes int
	// MaxScanLimit bounds a scan's page size [1000].
	MaxScanLimit int
	// MaxForwards bounds the forwarded requests awaiting a peer at once;
	// beyond it requests that need a peer get 503 [256].
	MaxForwards int
	// ForwardTimeout bounds one forwarded request [5s].
	ForwardTimeout time.Duration
	// StatusTimeout bounds gathering peers' status for /v1/metadata [1s].
	StatusTimeout time.Duration
	// MaxForwardBodyBytes bounds a peer's answer [32 MiB].
	MaxForwardBodyBytes int64
	// RetryAfter is the Retry-After of 503 answers [1s].
	RetryAfter time.Duration
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ReadHeaderTimeout, 5*time.Second)
	def(&o.ReadTimeout, 10*time.Second)
	def(&o.WriteTimeout, 30*time.Second)
	def(&o.IdleTimeout, 2*time.Minute)
	def(&o.ForwardTimeout, 5*time.Second)
	def(&o.StatusTimeout, time.Second)
	def(&o.RetryAfter, time.Second)
	defInt(&o.MaxHeaderBytes, 16<<10)
	defInt(&o.MaxKeyBytes, 4<<10)
	defInt(&o.MaxScanLimit, 1000)
	defInt(&o.MaxForwards, 256)
	if o.MaxForwardBodyBytes <= 0 {
		o.MaxForwardBodyBytes = 32 << 20
	}
	if o.Partitioner == nil {
		o.Partitioner = partition.Murmur2()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

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
	retryAfter string
	token      []byte
	tokenSum   [sha256.Size]byte
	hopKey     []byte // signs and checks hops; nil without a token
	logs       logLimiter
	srv        *http.Server
}

// New returns a server. It fails on an invalid configuration: a missing
// reader, TLS without a peer config, a peer config that skips
// verification, duplicate stores.
func New(opts Options) (*Server, error) {
	opts.defaults()
	if opts.Reader == nil {
		return nil, errors.New("query: Options.Reader is required")
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
	s := &Server{
		opts:       opts,
		rt:         opts.Reader,
		stores:     make(map[string]ServedStore, len(opts.Stores)),
		log:        opts.Logger,
		scheme:     "http",
		forwards:   make(chan struct{}, opts.MaxForwards),
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
		s.token = []byte("Bearer " + opts.AuthToken)
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

// authenticate answers 401 and returns false unless r carries the bearer
// token or is an authenticated hop; peer is set for the latter. A peer is
// a request whose hop signature verifies; anything else is a client's,
// whatever its headers claim, and needs the bearer token.
func (s *Server) authenticate(w *statusWriter, r *http.Request) (peer, ok bool) {
	hc := checkHop(r, s.hopKey, s.rt.Self(), time.Now())
	if hc == hopValid {
		return true, true
	}
	if s.authorized(r) {
		return false, true
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
	return false, false
}

// authorized compares the token in constant time. It compares digests:
// subtle.ConstantTimeCompare returns at once on a length mismatch, which
// would reveal the token's length.
func (s *Server) authorized(r *http.Request) bool {
	if s.token == nil {
		return true
	}
	got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
	return subtle.ConstantTimeCompare(got[:], s.tokenSum[:]) == 1
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
// open transaction that may still abort (design §7).
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

// forwardQuery is a lookup's query as forwarded to a peer: the client's,
// with the isolation this instance resolved added when the client gave
// none, so that the peer reads as this instance decided.
func forwardQuery(raw string, given bool, iso Isolation) string {
	switch {
	case given:
		return raw
	case raw == "":
		return "isolation=" + string(iso)
	}
	return raw + "&isolation=" + string(iso)
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
