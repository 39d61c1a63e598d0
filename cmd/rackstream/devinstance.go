package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/internal/cutdial"
	"github.com/rackstream/rackstream/service"
)

// devInstance is one instance; it can be killed, stopped and started again
// with the same state directory (so the same process id).
type devInstance struct {
	d       *devCluster
	name    string
	zone    string
	cluster string
	addr    string // 127.0.0.1:port, fixed at the first start
	dir     string

	mu     sync.Mutex
	svc    *service.Instance
	dialer *cutdial.Dialer
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	pid    string
}

func (in *devInstance) config() (*config.Config, error) {
	sets := []string{
		"application.id=" + in.d.o.app,
		"bootstrap.servers=" + strings.Join(in.d.brokers, ","),
		"client.tag." + devZoneTag + "=" + in.zone,
		"client.tag." + devClusterT + "=" + in.cluster,
		"rack.aware.assignment.tags=" + devZoneTag + "," + devClusterT,
		"num.standby.replicas=" + strconv.Itoa(in.d.o.standbys),
		"processor.type=count",
		"processor.input.topic=" + in.d.o.topic(),
		"state.dir=" + in.dir,
		"http.listen=" + in.addr,
		"application.server=" + in.addr,
		// Quick to watch: state visible within half a second, a crash
		// noticed within 3 s, a shutdown bounded by 5 s.
		"commit.interval.ms=500",
		"session.timeout.ms=3000",
		"shutdown.timeout.ms=5000",
		"num.stream.threads=1",
	}
	return config.Load(config.Sources{Set: sets})
}

// start starts the instance (again), binding its address.
func (in *devInstance) start() error {
	in.mu.Lock()
	running, done := in.svc != nil, in.done
	in.mu.Unlock()
	if running {
		return fmt.Errorf("%s is running", in.name)
	}
	if done != nil {
		<-done // the previous run has returned (see run for its state directory)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.svc != nil || in.done != done {
		return fmt.Errorf("%s is being started already", in.name)
	}
	svc, dialer, err := in.newService()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan struct{})
	in.svc, in.dialer, in.cancel, in.done, in.err = svc, dialer, cancel, done, nil
	go in.run(ctx, svc, done)
	return nil
}

// newService builds the instance's service on its address. The caller
// holds in.mu.
func (in *devInstance) newService() (*service.Instance, *cutdial.Dialer, error) {
	cfg, err := in.config()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: configuration: %w", in.name, err)
	}
	ln, err := net.Listen("tcp", in.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: listen on %s: %w", in.name, in.addr, err)
	}
	in.addr = ln.Addr().String()
	cfg.ApplicationServer = in.addr
	dialer := new(cutdial.Dialer)
	svc, err := service.New(service.Options{
		Config:     cfg,
		Topology:   devTopology(cfg.ApplicationID, in.d.o.topic()),
		Logger:     in.d.log.With("instance", in.name),
		Listener:   ln,
		ClientOpts: []kgo.Opt{kgo.Dialer(dialer.Dial)},
		Wrap:       in.d.admin,
		// The placement table is printed on placement events (watch).
		OnPlacement: func(*balancer.Placement) { in.d.placed() },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", in.name, err)
	}
	return svc, dialer, nil
}

// run runs svc until it stops, then closes done. Run returns only once the
// runtime has released the instance's stores and state directory, even
// after a kill (cut off from Kafka, it gives up its shutdown after
// shutdown.timeout.ms and closes the stores anyway), so a start waiting
// for done finds the directory free.
func (in *devInstance) run(ctx context.Context, svc *service.Instance, done chan struct{}) {
	defer close(done)
	err := svc.Run(ctx)
	in.mu.Lock()
	in.err = err
	if in.svc == svc {
		in.svc, in.cancel = nil, nil
	}
	in.mu.Unlock()
	if err != nil {
		in.d.log.Error("instance stopped", "instance", in.name, "err", err)
		fmt.Fprintf(in.d.out, "rackstream dev: %s stopped: %v\n", in.name, err)
	}
}

// kill crashes the instance as far as the cluster can tell: its Kafka
// connections are cut (no commit, no LeaveGroup reaches the brokers) and
// its HTTP server closes at once. The group notices after the session
// timeout.
func (in *devInstance) kill() error { return in.halt(true) }

// stop shuts the instance down cleanly (commit, leave the group) and waits.
func (in *devInstance) stop() error { return in.halt(false) }

func (in *devInstance) halt(crash bool) error {
	in.mu.Lock()
	svc, dialer, cancel, done := in.svc, in.dialer, in.cancel, in.done
	if svc == nil {
		in.mu.Unlock()
		return fmt.Errorf("%s is not running", in.name)
	}
	in.svc, in.cancel = nil, nil
	in.pid = svc.Runtime().ProcessID()
	in.mu.Unlock()
	if crash {
		dialer.Cut()
		svc.Abort()
		cancel()
		return nil
	}
	cancel()
	<-done
	return nil
}

func (in *devInstance) running() *service.Instance {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.svc
}

func (in *devInstance) processID() string {
	if svc := in.running(); svc != nil {
		if id := svc.Runtime().ProcessID(); id != "" {
			in.mu.Lock()
			in.pid = id
			in.mu.Unlock()
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.pid
}

func (d *devCluster) instance(id string) *devInstance {
	for _, in := range d.insts {
		if in.name == id || id != "" && in.processID() == id {
			return in
		}
	}
	return nil
}
