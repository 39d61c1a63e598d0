package query

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/partition"
)

// Options configure a Server. Reader is required; a limit or Partitioner
// left at its zero value takes DefaultOptions' value (a server without
// timeouts or bounds is not a setting), and the other zero fields mean
// what their docs say.
type Options struct {
	// Reader is what the server reads the placement, local replicas and
	// readiness from: the runtime, adapted (service).
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

	// Profiling serves the Go runtime's profiles under /debug/pprof/ (http.pprof):
	// CPU, heap, allocations, goroutines, blocking, mutexes and the execution
	// trace (net/http/pprof), behind AuthToken like every route but /healthz
	// and /readyz. Off by default: a profile shows the process's code and
	// state, and a CPU profile or a trace costs CPU while it runs. The
	// command line (/debug/pprof/cmdline) is never served: it may hold a
	// secret set with --set.
	Profiling bool

	// Registerer receives the HTTP metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Gatherer is what /metrics exposes (the runtime's registry; nil: an
	// empty exposition).
	Gatherer prometheus.Gatherer
	// Logger receives the server's logs; nil means slog.Default().
	Logger *slog.Logger

	// Limits, each positive; a zero one takes DefaultOptions' value, in
	// brackets.
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
	// beyond it requests that need a peer get 503 [256]. Forwarded scans
	// hold at most half of them (at least one), so that scans cannot
	// starve lookups.
	MaxForwards int
	// ForwardTimeout bounds one forwarded request [5s].
	ForwardTimeout time.Duration
	// HedgeAfter is how long a lookup that a standby may answer (max_lag)
	// waits for a peer before asking the next candidate too [250ms]
	// (route.go).
	HedgeAfter time.Duration
	// PeerFailureMemory is how long a peer that did not answer a forward
	// is asked after every other candidate [10s] (route.go).
	PeerFailureMemory time.Duration
	// StatusTimeout bounds gathering peers' status for /v1/metadata [1s].
	StatusTimeout time.Duration
	// MaxForwardBodyBytes bounds a peer's answer [32 MiB].
	MaxForwardBodyBytes int64
	// RetryAfter is the Retry-After of 503 answers [1s].
	RetryAfter time.Duration
}

// DefaultOptions returns the defaults of every tunable field of Options,
// which New applies to the fields left at zero: the limits and the
// partitioner. Reader and the rest are the caller's.
func DefaultOptions() Options {
	return Options{
		Partitioner:         partition.Murmur2(),
		ReadHeaderTimeout:   5 * time.Second,
		ReadTimeout:         10 * time.Second,
		WriteTimeout:        30 * time.Second,
		IdleTimeout:         2 * time.Minute,
		MaxHeaderBytes:      16 << 10,
		MaxKeyBytes:         4 << 10,
		MaxScanLimit:        1000,
		MaxForwards:         256,
		ForwardTimeout:      5 * time.Second,
		HedgeAfter:          250 * time.Millisecond,
		PeerFailureMemory:   10 * time.Second,
		StatusTimeout:       time.Second,
		MaxForwardBodyBytes: 32 << 20,
		RetryAfter:          time.Second,
	}
}

// resolveLimits replaces a nil partitioner and each limit left at zero by
// DefaultOptions' value, and refuses every negative limit, naming the field.
func (o *Options) resolveLimits() error {
	d := DefaultOptions()
	if o.Partitioner == nil {
		o.Partitioner = d.Partitioner
	}
	var errs []error
	limit(&errs, "ReadHeaderTimeout", &o.ReadHeaderTimeout, d.ReadHeaderTimeout)
	limit(&errs, "ReadTimeout", &o.ReadTimeout, d.ReadTimeout)
	limit(&errs, "WriteTimeout", &o.WriteTimeout, d.WriteTimeout)
	limit(&errs, "IdleTimeout", &o.IdleTimeout, d.IdleTimeout)
	limit(&errs, "MaxHeaderBytes", &o.MaxHeaderBytes, d.MaxHeaderBytes)
	limit(&errs, "MaxKeyBytes", &o.MaxKeyBytes, d.MaxKeyBytes)
	limit(&errs, "MaxScanLimit", &o.MaxScanLimit, d.MaxScanLimit)
	limit(&errs, "MaxForwards", &o.MaxForwards, d.MaxForwards)
	limit(&errs, "ForwardTimeout", &o.ForwardTimeout, d.ForwardTimeout)
	limit(&errs, "HedgeAfter", &o.HedgeAfter, d.HedgeAfter)
	limit(&errs, "PeerFailureMemory", &o.PeerFailureMemory, d.PeerFailureMemory)
	limit(&errs, "StatusTimeout", &o.StatusTimeout, d.StatusTimeout)
	limit(&errs, "MaxForwardBodyBytes", &o.MaxForwardBodyBytes, d.MaxForwardBodyBytes)
	limit(&errs, "RetryAfter", &o.RetryAfter, d.RetryAfter)
	return errors.Join(errs...)
}

// limit gives *v its default def when it is zero, and adds an error
// naming the field when it is negative.
func limit[T ~int | ~int64](errs *[]error, name string, v *T, def T) {
	if *v == 0 {
		*v = def
	}
	if *v < 0 {
		*errs = append(*errs, fmt.Errorf("query: Options.%s %v: must be positive (0 takes DefaultOptions' %v)", name, *v, def))
	}
}
