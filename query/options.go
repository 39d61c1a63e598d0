package query

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/partition"
)

// Options configure a Server. Start from DefaultOptions and set Reader:
// a zero limit is refused, naming the field (a server without timeouts or
// bounds is not a setting); other zero fields mean what their docs say.
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
	// every producer uses. Required.
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

	// Limits, each required to be positive; DefaultOptions' in brackets.
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

// DefaultOptions returns the defaults of every tunable field of Options:
// the limits and the partitioner. Reader and the rest are the caller's.
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

// checkLimits refuses a missing partitioner and a limit that is not
// positive, naming the field.
func (o *Options) checkLimits() error {
	if o.Partitioner == nil {
		return fmt.Errorf("query: no Options.Partitioner (partitioner): start from DefaultOptions")
	}
	for _, l := range []struct {
		name string
		v    int64
	}{
		{"ReadHeaderTimeout", int64(o.ReadHeaderTimeout)}, {"ReadTimeout", int64(o.ReadTimeout)},
		{"WriteTimeout", int64(o.WriteTimeout)}, {"IdleTimeout", int64(o.IdleTimeout)},
		{"MaxHeaderBytes", int64(o.MaxHeaderBytes)}, {"MaxKeyBytes", int64(o.MaxKeyBytes)},
		{"MaxScanLimit", int64(o.MaxScanLimit)}, {"MaxForwards", int64(o.MaxForwards)},
		{"ForwardTimeout", int64(o.ForwardTimeout)}, {"StatusTimeout", int64(o.StatusTimeout)},
		{"HedgeAfter", int64(o.HedgeAfter)}, {"PeerFailureMemory", int64(o.PeerFailureMemory)},
		{"MaxForwardBodyBytes", o.MaxForwardBodyBytes}, {"RetryAfter", int64(o.RetryAfter)},
	} {
		if l.v <= 0 {
			return fmt.Errorf("query: Options.%s %d: must be positive (DefaultOptions has every limit)", l.name, l.v)
		}
	}
	return nil
}
