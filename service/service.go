// Package service assembles one Rackstream instance from its configuration:
// the processor runtime (a member of the processor group), the HTTP query
// server in front of it, a Prometheus registry both report to, and the
// structured logger. `rackstream run` runs one Instance per process;
// `rackstream dev` runs several in one process, each with its own state
// directory, registry and HTTP port.
//
// It is also how a custom Go topology runs with everything `rackstream run`
// has: pass it as Options.Topology. processor.NewRuntime alone runs the
// topology without HTTP queries, metrics, probes or the Kafka security
// settings of the configuration; examples/service is a complete program.
//
//	cfg, err := config.Load(config.Sources{File: "rackstream.properties"})
//	...
//	in, err := service.New(service.Options{Config: cfg, Logger: logger})
//	...
//	err = in.Run(ctx) // until ctx is cancelled, then a graceful shutdown
//
// New binds the HTTP listener at once, so that the instance's endpoint
// (application.server) is known before it joins the group, and a port
// already taken fails at start-up. Without application.server the endpoint
// is the listener's address, with the host's name when the listener is on
// every interface.
//
// Every Kafka client carries the settings package kclient builds from the
// configuration (SASL, TLS, client rack); its client id is
// <application.id>-group until the runtime knows its process id, and
// <application.id>-<process id>-group after, so that broker logs and quotas
// tell the instances apart.
//
// The instance logs one line as Run starts (the build, every setting that
// differs from its default with secrets masked, the HTTP listener and the
// Kafka brokers), one when it has joined (instance id, tags, endpoint,
// group) and, for every placement it learns, a summary line (tasks per member and
// role) and the placement's quality per tag dimension.
//
// Its HTTP handler is the placement page and /v1/whatif (package
// query/page) in front of the query server; Options.Wrap, when
// set, wraps both.
//
// Its registry (Instance.Registry, served on /metrics) holds
// rackstream_build_info (package internal/buildinfo), the runtime's
// series (records, latency, lag, commits, rebalances, tasks by role), the
// stores' (restore, standby lag), the query server's (HTTP), and the
// placement's quality, read from the runtime at scrape time:
// rackstream_placement_tasks_repeating{tag} and
// rackstream_placement_tag_values{tag} per key of
// rack.aware.assignment.tags, rackstream_placement_standby_shortfall,
// rackstream_placement_tasks_short_of_standbys,
// rackstream_placement_tasks_without_standby and the placement's
// generation, members and tasks. Every member knows the whole placement, so
// these are the same on every instance of a generation.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/config/kclient"
	"github.com/rackstream/rackstream/internal/buildinfo"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/query"
	"github.com/rackstream/rackstream/query/page"
	"github.com/rackstream/rackstream/service/builtin"
	"github.com/rackstream/rackstream/state"
)

// Options configure an Instance. Config is required.
type Options struct {
	// Config is the instance's validated configuration.
	Config *config.Config
	// Topology is the processor to run; nil builds the built-in processor
	// named by processor.type (an error when none is configured).
	Topology *processor.Topology
	// Logger receives the instance's logs [NewLogger(os.Stderr, ...) per
	// log.format and log.level].
	Logger *slog.Logger
	// Listener, when set, is where the HTTP server listens instead of
	// http.listen; the instance closes it. `rackstream dev` passes
	// listeners bound to ports it chose.
	Listener net.Listener
	// ClientOpts are added to every Kafka client (after the ones built
	// from the configuration): a dialer, for instance.
	ClientOpts []kgo.Opt
	// Wrap, when set, wraps the query server's handler: `rackstream dev`
	// adds its admin routes this way.
	Wrap func(http.Handler) http.Handler
	// ProcessMetrics adds the Go runtime and process collectors to the
	// registry (one per process: `run` sets it, `dev` sets it on one
	// instance at most).
	ProcessMetrics bool
	// OnPlacement, when set, is called once with every new placement the
	// instance learns, after its log line (processor.Options.OnPlacement):
	// `rackstream dev` prints its placement table from it.
	OnPlacement func(*balancer.Placement)
}

// Instance is one running member of a processor group with its HTTP
// server. Create it with New, run it with Run (once).
type Instance struct {
	cfg      *config.Config
	log      *slog.Logger
	check    []kgo.Opt // the admin client's options, for the start-up check
	kc       *kclient.Clients
	rt       *processor.Runtime
	qs       *query.Server
	srv      *http.Server
	ln       net.Listener
	reg      *prometheus.Registry
	endpoint string
	stores   []string

	runOnce   sync.Once
	abort     chan struct{}
	abortOnce sync.Once
}

// New builds an instance from opts: the topology (the built-in processor
// unless Options.Topology is set), the runtime, the query server, and the
// HTTP listener, which it binds now. It returns an error naming what is
// wrong: no processor configured, an unsupported setting, unreadable TLS
// files, a port in use.
func New(opts Options) (*Instance, error) {
	cfg := opts.Config
	if cfg == nil {
		return nil, errors.New("service: Options.Config is required")
	}
	guarantee, err := processor.ParseGuarantee(string(cfg.ProcessingGuarantee))
	if err != nil {
		return nil, fmt.Errorf("service: processing.guarantee: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = NewLogger(os.Stderr, cfg.LogFormat, cfg.LogLevel)
	}
	topo := opts.Topology
	if topo == nil {
		if cfg.Processor.Type == "" {
			return nil, errors.New("service: no processor to run: set processor.type (latest, count or sum) and processor.input.topic")
		}
		b, err := builtin.New(cfg.ApplicationID, cfg.Processor)
		if err != nil {
			return nil, err
		}
		topo = b.Topology()
	}
	if topo.ApplicationID() != cfg.ApplicationID {
		return nil, fmt.Errorf("service: topology is for application %q, configuration for %q", topo.ApplicationID(), cfg.ApplicationID)
	}
	policy, err := processor.ParseErrorPolicy(string(cfg.ProcessingExceptionHandler))
	if err != nil {
		return nil, fmt.Errorf("service: processing.exception.handler: %w", err)
	}
	part, err := partition.ByName(string(cfg.Partitioner))
	if err != nil {
		return nil, fmt.Errorf("service: partitioner: %w", err)
	}
	compression, err := state.ParseCompression(string(cfg.LevelDB.Compression))
	if err != nil {
		return nil, fmt.Errorf("service: state.leveldb.compression: %w", err)
	}
	serverTLS, peerTLS, err := query.LoadTLS(query.TLSFiles{Cert: cfg.HTTP.TLSCert, Key: cfg.HTTP.TLSKey, CA: cfg.HTTP.TLSCA,
		ClientAuth: cfg.HTTP.TLSClientAuth, ClientCA: cfg.HTTP.TLSClientCA})
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}

	kc, err := kclient.New(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	ln := opts.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.HTTP.Listen); err != nil {
			return nil, fmt.Errorf("service: http.listen %s: %w", cfg.HTTP.Listen, err)
		}
	}
	fail := func(err error) (*Instance, error) {
		ln.Close()
		return nil, err
	}
	endpoint := cfg.ApplicationServer
	if endpoint == "" {
		endpoint = endpointOf(ln.Addr())
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(buildinfo.Read().Collector())
	if opts.ProcessMetrics {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	// Every configured key maps to its option: the key table shows the
	// defaults of processor.DefaultOptions (and state's and the
	// assignor's), and a configured 0 passes through processor.Exactly
	// where zero is a setting of its own (an option's zero value means its
	// default).
	ro := processor.Options{
		Brokers:    cfg.BootstrapServers,
		ClientOpts: kc.Opts(kclient.PurposeGroup, opts.ClientOpts...),
		// Once the process id is known, the client ids carry it, so that
		// the brokers' logs and quotas tell the instances apart; the
		// caller's options still come last and win.
		ClientOptsFor: func(processID string) []kgo.Opt {
			return append([]kgo.Opt{kgo.ClientID(kc.WithInstance(processID).ClientID(kclient.PurposeGroup))}, opts.ClientOpts...)
		},
		StateDir:     cfg.StateDir,
		CleanupDelay: processor.Exactly(cfg.StateCleanupDelay),
		LevelDB: state.LevelDBOptions{
			BlockCacheBytes:  int(cfg.LevelDB.BlockCacheBytes),
			WriteBufferBytes: int(cfg.LevelDB.WriteBufferBytes),
			BloomBits:        cfg.LevelDB.BloomBits,
			Compression:      compression,
		}.Exactly(),
		Endpoint:          endpoint,
		Tags:              cfg.ClientTags,
		Placement:         cfg.Placement,
		Capacity:          cfg.NumStreamThreads,
		ProbingInterval:   cfg.ProbingRebalanceInterval,
		Partitioner:       part,
		CacheMaxBytes:     processor.Exactly(cfg.StatestoreCacheMaxBytes),
		MemoryBytes:       processor.Exactly(cfg.StateMemoryBytes), // above 0, overrides the LevelDB sizes
		CommitInterval:    processor.Exactly(cfg.CommitInterval),
		Guarantee:         guarantee,
		ErrorPolicy:       policy,
		DLQTopic:          cfg.DeadLetterQueueTopic,
		ReplicationFactor: int16(cfg.ReplicationFactor),
		SessionTimeout:    cfg.SessionTimeout,
		ShutdownTimeout:   processor.Exactly(cfg.ShutdownTimeout),
		MaxTaskIdle:       cfg.MaxTaskIdle, // 0 is its default; negative turns the alignment off
	}
	ro.RepartitionPurgeInterval = processor.Exactly(cfg.RepartitionPurgeInterval)
	ro.ChangelogLeaders = processor.ChangelogLeadersBroker
	if cfg.ChangelogLeaderAlignment {
		ro.ChangelogLeaders = processor.ChangelogLeadersAligned
	}
	ro.Placement.AcceptableRecoveryLag = processor.Exactly(cfg.Placement.AcceptableRecoveryLag)
	ro.Placement.RackAwareAssignmentTrafficCost = processor.Exactly(cfg.Placement.RackAwareAssignmentTrafficCost)
	ro.Placement.RackAwareAssignmentNonOverlapCost = processor.Exactly(cfg.Placement.RackAwareAssignmentNonOverlapCost)
	ro.Logger = log
	ro.Registerer = reg
	var rt *processor.Runtime
	ro.OnPlacement = func(p *balancer.Placement) {
		logPlacement(log, p, rt.ProcessID())
		if opts.OnPlacement != nil {
			opts.OnPlacement(p)
		}
	}
	rt, err = processor.NewRuntime(topo, ro)
	if err != nil {
		return fail(fmt.Errorf("service: %w", err))
	}
	if err := reg.Register(newPlacementCollector(rt.Placement, cfg.Placement.NumStandbyReplicas)); err != nil {
		return fail(fmt.Errorf("service: placement metrics: %w", err))
	}
	if err := registerBalancerMetrics(reg, rt.BalancerStats); err != nil {
		return fail(fmt.Errorf("service: balancer metrics: %w", err))
	}
	var stores []query.ServedStore
	var names []string
	for _, s := range topo.Stores() {
		stores = append(stores, query.ServedStore{Name: s.Name, Render: s.Render, Windowed: s.Windows != "", Join: s.Windows == "join", RenderSide: s.RenderSide})
		names = append(names, s.Name)
	}
	for _, g := range topo.GlobalTables() { // named by topic, answered locally (global.go)
		stores = append(stores, query.ServedStore{Name: g.Topic, Render: g.Render, Global: true})
		names = append(names, g.Topic)
	}
	// The query server's limits are its defaults; the rest comes from the
	// configuration.
	qo := query.DefaultOptions()
	qo.Reader, qo.ExactlyOnce, qo.Settings = runtimeAdapter{rt}, cfg.ExactlyOnce(), assignmentSettings(cfg)
	qo.Stores, qo.Partitioner = stores, part
	qo.AuthToken, qo.TLS, qo.PeerTLS = cfg.HTTP.AuthToken.Reveal(), serverTLS, peerTLS
	qo.Profiling = cfg.HTTP.Pprof
	qo.Registerer, qo.Gatherer, qo.Logger = reg, reg, log.With("component", "http")
	qs, err := query.New(qo)
	if err != nil {
		return fail(fmt.Errorf("service: %w", err))
	}
	// The placement page and /v1/whatif in front of the query server.
	var h http.Handler = page.New(page.Options{Query: qs, Logger: log.With("component", "page")})
	if opts.Wrap != nil {
		h = opts.Wrap(h)
	}
	// The query server's limits and TLS on a server of our own, so that
	// Wrap can add routes.
	srv := qs.HTTPServer(h)
	return &Instance{
		cfg:      cfg,
		log:      log,
		check:    kc.Opts(kclient.PurposeAdmin, opts.ClientOpts...),
		kc:       kc,
		rt:       rt,
		qs:       qs,
		srv:      srv,
		ln:       ln,
		reg:      reg,
		endpoint: endpoint,
		stores:   names,
		abort:    make(chan struct{}),
	}, nil
}

// endpointOf is the host:port peers reach a listener at when
// application.server is not set: its own address, or the host name and
// its port when it listens on every interface.
func endpointOf(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		}
	}
	return net.JoinHostPort(host, port)
}

// Addr returns the HTTP listener's address.
func (in *Instance) Addr() net.Addr { return in.ln.Addr() }

// Endpoint returns the host:port other instances reach this one at
// (application.server).
func (in *Instance) Endpoint() string { return in.endpoint }

// Runtime returns the processor runtime.
func (in *Instance) Runtime() *processor.Runtime { return in.rt }

// Registry returns the registry /metrics exposes.
func (in *Instance) Registry() *prometheus.Registry { return in.reg }

// Stores returns the names of the queryable stores.
func (in *Instance) Stores() []string { return in.stores }

// Ready reports whether the instance is ready (/readyz 200), and why not.
func (in *Instance) Ready() (bool, string) { return in.rt.Ready() }

// Run serves HTTP and runs the processor until ctx is cancelled, then
// shuts down within shutdown.timeout.ms: the runtime finishes its in-flight
// records, commits and leaves the group while HTTP still answers (readiness
// 503), then HTTP stops. It returns nil after a clean shutdown, or the error
// that stopped the instance (the topology check, the state directory, the
// listener). Run may be called once.
func (in *Instance) Run(ctx context.Context) error {
	err := errors.New("service: Run called twice")
	in.runOnce.Do(func() { err = in.run(ctx) })
	return err
}

func (in *Instance) run(ctx context.Context) error {
	scheme := "http://"
	if in.srv.TLSConfig != nil {
		scheme = "https://"
	}
	logStarting(in.log, in.cfg, scheme+in.ln.Addr().String(), in.endpoint, in.kc)
	// A wrong address, TLS or SASL setting is one clear error now rather
	// than clients retrying in the background.
	if err := kclient.Check(ctx, in.check); err != nil {
		in.ln.Close()
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("service: %w", err)
	}
	rctx, cancelRuntime := context.WithCancel(context.Background())
	defer cancelRuntime()

	httpErr := make(chan error, 1)
	go func() {
		var err error
		if in.srv.TLSConfig != nil {
			err = in.srv.ServeTLS(in.ln, "", "")
		} else {
			err = in.srv.Serve(in.ln)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		httpErr <- err
	}()
	rtErr := make(chan error, 1)
	go func() { rtErr <- in.rt.Run(rctx) }()
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		in.watch(rctx)
	}()

	var err error
	select {
	case <-ctx.Done():
		in.log.Info("shutting down", "timeout", in.cfg.ShutdownTimeout)
		deadline := time.Now().Add(in.cfg.ShutdownTimeout)
		cancelRuntime()
		err = <-rtErr // bounded by the runtime's own shutdown timeout
		hctx, cancel := context.WithDeadline(context.Background(), maxTime(deadline, time.Now().Add(time.Second)))
		if serr := in.srv.Shutdown(hctx); serr != nil {
			in.srv.Close()
		}
		cancel()
		in.qs.Shutdown(context.Background()) // closes idle peer connections
		<-httpErr
	case <-in.abort:
		// Like a crash as far as HTTP goes: connections drop at once.
		in.srv.Close()
		cancelRuntime()
		err = <-rtErr
		<-httpErr
	case err = <-rtErr:
		// The runtime could not start (topology, state directory).
		in.srv.Close()
		<-httpErr
	case err = <-httpErr:
		err = fmt.Errorf("service: http: %w", err)
		cancelRuntime()
		<-rtErr
	}
	cancelRuntime()
	<-watchDone
	if err == nil {
		in.log.Info("stopped")
	}
	return err
}

// Abort stops serving HTTP at once (open connections are closed) and stops
// the runtime without waiting for HTTP requests. It does not cut the
// runtime's Kafka connections: a caller simulating a crash cuts them too
// (with a dialer in Options.ClientOpts) so that no commit or LeaveGroup
// reaches the brokers. Run returns after the runtime has stopped.
func (in *Instance) Abort() { in.abortOnce.Do(func() { close(in.abort) }) }

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// watch logs the start-up line once the runtime knows its process id
// (Runtime.Started); the placement lines come from Options.OnPlacement.
func (in *Instance) watch(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-in.rt.Started():
		in.log.Info("rackstream instance started",
			"instance", in.rt.ProcessID(),
			"tags", in.cfg.ClientTags.String(),
			"endpoint", in.endpoint,
			"group", in.cfg.ApplicationID,
			"http", in.ln.Addr().String(),
			"processor", string(in.cfg.Processor.Type),
			"standbys", in.cfg.Placement.NumStandbyReplicas)
	}
}
