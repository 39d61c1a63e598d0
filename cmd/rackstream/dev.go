package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor/partition"
	"github.com/rackstream/rackstream/processor/service"
	"github.com/rackstream/rackstream/state"
)

const devUsage = `Usage: rackstream dev [flags]

Runs a whole Rackstream deployment in this process, with nothing installed:
an in-process Kafka cluster (kfake; or --brokers), and --instances instances
of the group rackstream-dev (--app) tagged like KIP-708's example (zones
eu-central-1a|b|c x clusters k8s-cluster1|2), each with its own state
directory under a temporary directory and its own HTTP port on 127.0.0.1.
They run the built-in count processor over the topic <app>-events,
fed by a built-in producer (keys user-1..user-100) at --rate records/s.

Once every instance is ready it prints the placement (task -> active and
standbys with their tags) and each instance's HTTP address, and prints the
placement again whenever it changes. It runs until Ctrl-C, then shuts every
instance down cleanly.

Console (stdin): kill <id> (a crash: connections cut, no leave), stop <id>
(a clean shutdown), start <id>, placement, status, help. The same on HTTP,
answered on loopback only: POST /v1/dev/instances/{id}/kill|stop|start and
GET /v1/dev/instances, on any instance.

Flags:
`

// devDefaults of rackstream dev.
const (
	devKeys     = 100
	devZoneTag  = "zone"
	devClusterT = "cluster"
)

var (
	devZones    = []string{"eu-central-1a", "eu-central-1b", "eu-central-1c"}
	devClusters = []string{"k8s-cluster1", "k8s-cluster2"}
)

type devOptions struct {
	instances  int
	partitions int
	standbys   int
	rate       float64
	httpPort   int
	brokers    string
	logLevel   string
	app        string // application.id; the topic is <app>-events
}

func (o devOptions) topic() string { return o.app + "-events" }

func runDev(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o devOptions
	fs.IntVar(&o.instances, "instances", 6, "number of instances (0: only the topic and the producer, to feed instances run elsewhere)")
	fs.IntVar(&o.partitions, "partitions", 12, "partitions of the demo topic (= tasks)")
	fs.IntVar(&o.standbys, "standbys", 2, "num.standby.replicas")
	fs.Float64Var(&o.rate, "rate", 20, "records per second the built-in producer writes (0: none)")
	fs.IntVar(&o.httpPort, "http-port", 8080, "HTTP port of the first instance; the others follow (0: free ports)")
	fs.StringVar(&o.brokers, "brokers", "", "an external Kafka cluster (host:port,...) instead of the in-process one")
	fs.StringVar(&o.app, "app", "rackstream-dev", "application.id of the group; the demo topic is <app>-events")
	fs.StringVar(&o.logLevel, "log-level", "info", "level of the instances' logs (written to dev.log in the temporary directory)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), devUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "rackstream dev: unexpected argument %q\n", fs.Arg(0))
		return 2
	case o.instances < 0:
		fmt.Fprintf(stderr, "rackstream dev: --instances %d: at least 0\n", o.instances)
		return 2
	case o.partitions < 1:
		fmt.Fprintf(stderr, "rackstream dev: --partitions %d: at least 1\n", o.partitions)
		return 2
	case o.standbys < 0:
		fmt.Fprintf(stderr, "rackstream dev: --standbys %d: at least 0\n", o.standbys)
		return 2
	case o.rate < 0:
		fmt.Fprintf(stderr, "rackstream dev: --rate %v: at least 0\n", o.rate)
		return 2
	case o.httpPort < 0 || o.httpPort > 65535 || o.httpPort > 0 && o.httpPort+o.instances-1 > 65535:
		fmt.Fprintf(stderr, "rackstream dev: --http-port %d: out of range for %d instances\n", o.httpPort, o.instances)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		fmt.Fprintf(stderr, "rackstream dev: --log-level %q: debug, info, warn or error\n", o.logLevel)
		return 2
	}
	d, err := startDev(ctx, o, level, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "rackstream dev: %v\n", err)
		return 1
	}
	go d.console(ctx, stdin)
	<-ctx.Done()
	fmt.Fprintln(d.out, "rackstream dev: stopping every instance")
	if err := d.close(); err != nil {
		fmt.Fprintf(stderr, "rackstream dev: %v\n", err)
		return 1
	}
	fmt.Fprintln(d.out, "rackstream dev: stopped")
	return 0
}

// devCluster is the in-process deployment.
type devCluster struct {
	o       devOptions
	out     *lockedWriter
	log     *slog.Logger
	logFile *os.File
	dir     string
	brokers []string
	fake    *kfake.Cluster
	insts   []*devInstance
	started time.Time

	producer     *kgo.Client
	stopProducer context.CancelFunc
	produced     atomic.Int64
	bg           sync.WaitGroup
}

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
	dialer *cutDialer
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	pid    string
}

func startDev(ctx context.Context, o devOptions, level slog.Level, stdout io.Writer) (*devCluster, error) {
	dir, err := os.MkdirTemp("", "rackstream-dev-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	logFile, err := os.Create(filepath.Join(dir, "dev.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("log file: %w", err)
	}
	d := &devCluster{
		o:       o,
		out:     &lockedWriter{w: stdout},
		log:     slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: level})),
		logFile: logFile,
		dir:     dir,
		started: time.Now(),
	}
	fail := func(err error) (*devCluster, error) {
		d.close()
		return nil, err
	}
	if o.brokers != "" {
		d.brokers = strings.Split(o.brokers, ",")
	} else {
		d.fake, err = kfake.NewCluster(
			kfake.NumBrokers(1),
			kfake.GroupMinSessionTimeout(500*time.Millisecond),
			kfake.BrokerConfigs(map[string]string{"group.initial.rebalance.delay.ms": "0"}),
		)
		if err != nil {
			return fail(fmt.Errorf("start kfake: %w", err))
		}
		d.brokers = d.fake.ListenAddrs()
	}
	if err := d.createTopic(ctx); err != nil {
		return fail(err)
	}
	kind := "in-process kfake"
	if d.fake == nil {
		kind = "external cluster"
	}
	fmt.Fprintf(d.out, "rackstream dev: kafka %s (%s); group %s; topic %s, %d partitions; %d standbys per task\n",
		strings.Join(d.brokers, ","), kind, d.o.app, d.o.topic(), o.partitions, o.standbys)
	fmt.Fprintf(d.out, "rackstream dev: state and logs in %s\n", dir)

	for i := range o.instances {
		in := &devInstance{
			d:       d,
			name:    "i" + strconv.Itoa(i+1),
			zone:    devZones[i%len(devZones)],
			cluster: devClusters[(i/len(devZones))%len(devClusters)],
			dir:     filepath.Join(dir, "i"+strconv.Itoa(i+1)),
		}
		port := 0
		if o.httpPort > 0 {
			port = o.httpPort + i
		}
		in.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		d.insts = append(d.insts, in)
	}
	if o.instances == 0 {
		fmt.Fprintf(d.out, "rackstream dev: no instances: creating %s and producing to it only\n", o.topic())
	}
	for _, in := range d.insts {
		if err := in.start(); err != nil {
			return fail(err)
		}
		fmt.Fprintf(d.out, "  %-4s http://%-21s zone=%s cluster=%s\n", in.name, in.addr, in.zone, in.cluster)
	}
	if o.rate > 0 {
		if err := d.startProducer(); err != nil {
			return fail(err)
		}
	}
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		d.watch(ctx)
	}()
	return d, nil
}

// createTopic creates the demo topic, or checks its partition count when it
// exists (on an external cluster).
func (d *devCluster) createTopic(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.brokers...))
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(cctx, int32(d.o.partitions), -1, nil, d.o.topic())
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		td, derr := adm.ListTopics(cctx, d.o.topic())
		if derr != nil {
			return fmt.Errorf("describe %s: %w", d.o.topic(), derr)
		}
		if n := len(td[d.o.topic()].Partitions); n != d.o.partitions {
			return fmt.Errorf("topic %s exists with %d partitions, not --partitions %d: pass --partitions %d or delete it", d.o.topic(), n, d.o.partitions, n)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("create topic %s on %s: %w", d.o.topic(), strings.Join(d.brokers, ","), err)
	}
	return nil
}

func (d *devCluster) startProducer() error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(d.brokers...),
		kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())),
		kgo.ProducerLinger(50*time.Millisecond),
	)
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	d.producer = cl
	ctx, cancel := context.WithCancel(context.Background())
	d.stopProducer = cancel
	every := time.Duration(float64(time.Second) / d.o.rate)
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		t := time.NewTicker(max(every, time.Millisecond))
		defer t.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// A deterministic walk over the keys that visits all of them.
			key := "user-" + strconv.Itoa((n*37)%devKeys+1)
			cl.Produce(ctx, &kgo.Record{Topic: d.o.topic(), Key: []byte(key), Value: []byte("click")}, func(_ *kgo.Record, err error) {
				if err == nil {
					d.produced.Add(1)
				} else if ctx.Err() == nil {
					d.log.Warn("dev producer", "err", err)
				}
			})
		}
	}()
	return nil
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
func (in *devInstance) newService() (*service.Instance, *cutDialer, error) {
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
	dialer := &cutDialer{}
	svc, err := service.New(service.Options{
		Config:     cfg,
		Logger:     in.d.log.With("instance", in.name),
		Listener:   ln,
		ClientOpts: []kgo.Opt{kgo.Dialer(dialer.dial)},
		Wrap:       in.d.admin,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", in.name, err)
	}
	return svc, dialer, nil
}

// devLockWait bounds how long a start waits for the instance's previous
// run to let go of its state directory.
const devLockWait = 30 * time.Second

// run runs svc until it stops, then closes done. A killed instance's
// previous run can hold the state directory a moment after its Run
// returned: cut off from Kafka, the runtime gives up waiting for its
// shutdown after shutdown.timeout.ms, and the abandoned session closes the
// stores just after. So a run refused by this process's own lock on the
// directory is started again, for up to devLockWait.
func (in *devInstance) run(ctx context.Context, svc *service.Instance, done chan struct{}) {
	defer close(done)
	deadline := time.Now().Add(devLockWait)
	for {
		err := svc.Run(ctx)
		var locked *state.LockedError
		if errors.As(err, &locked) && locked.PID == os.Getpid() && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			in.mu.Lock()
			if in.svc == svc && ctx.Err() == nil {
				next, dialer, nerr := in.newService()
				if nerr == nil {
					in.svc, in.dialer = next, dialer
					in.mu.Unlock()
					svc = next
					continue
				}
				err = nerr
			}
			in.mu.Unlock()
		}
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
		return
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

// watch prints the placement once every instance is ready, then again on
// every new generation.
func (d *devCluster) watch(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	announced := false
	var gen int32 = -1
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p := d.placement()
		if !d.settled(p) {
			continue
		}
		if !announced {
			if !d.allReady() {
				continue
			}
			announced = true
			gen = p.Generation
			fmt.Fprintf(d.out, "\nrackstream dev: all %d instances ready in %v\n", len(d.insts), time.Since(d.started).Round(10*time.Millisecond))
			d.printPlacement(p)
			d.printHelp()
			continue
		}
		if p.Generation != gen {
			gen = p.Generation
			fmt.Fprintf(d.out, "\nrackstream dev: new placement\n")
			d.printPlacement(p)
		}
	}
}

// settled reports whether p is a placement at rest: every running
// instance is a member and every task has an active (none in transit).
func (d *devCluster) settled(p *balancer.Placement) bool {
	if p == nil {
		return false
	}
	running := 0
	for _, in := range d.insts {
		if in.running() != nil {
			running++
		}
	}
	if len(p.Members) != running {
		return false
	}
	for _, t := range p.Tasks {
		if t.Active == balancer.NoMember {
			return false
		}
	}
	return true
}

func (d *devCluster) allReady() bool {
	for _, in := range d.insts {
		svc := in.running()
		if svc == nil {
			return false
		}
		if ok, _ := svc.Ready(); !ok {
			return false
		}
	}
	return true
}

// placement returns the newest placement any running instance knows.
func (d *devCluster) placement() *balancer.Placement {
	var best *balancer.Placement
	for _, in := range d.insts {
		if svc := in.running(); svc != nil {
			if p := svc.Runtime().Placement(); p != nil && (best == nil || p.Generation > best.Generation) {
				best = p
			}
		}
	}
	return best
}

func (d *devCluster) nameOf(pid string) string {
	for _, in := range d.insts {
		if in.processID() == pid {
			return in.name
		}
	}
	return pid
}

func (d *devCluster) describe(m balancer.Member) string {
	return fmt.Sprintf("%s (%s, %s)", d.nameOf(m.ProcessID), m.Tags.Value(devZoneTag), m.Tags.Value(devClusterT))
}

func (d *devCluster) printPlacement(p *balancer.Placement) {
	if p == nil {
		fmt.Fprintln(d.out, "no placement yet")
		return
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "TASK\tACTIVE\tSTANDBYS\n")
	for task := range p.Tasks {
		active := "-"
		if m, ok := p.Active(int32(task)); ok {
			active = d.describe(m)
		}
		var sb []string
		for _, m := range p.Standbys(int32(task)) {
			sb = append(sb, d.describe(m))
		}
		standbys := strings.Join(sb, ", ")
		if len(p.Tasks[task].Warmups) > 0 {
			var wu []string
			for _, i := range p.Tasks[task].Warmups {
				wu = append(wu, d.describe(p.Members[i]))
			}
			standbys += "  warmup: " + strings.Join(wu, ", ")
		}
		if standbys == "" {
			standbys = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", task, active, standbys)
	}
	tw.Flush()
	fmt.Fprintf(&b, "generation %d; quality:", p.Generation)
	for _, q := range p.Quality.Dimensions {
		fmt.Fprintf(&b, " %s %d values, %d tasks repeating;", q.Tag, q.Values, q.TasksRepeating)
	}
	fmt.Fprintf(&b, " standby shortfall %d\n\n", p.Quality.StandbyShortfall)
	d.writeStatus(&b)
	io.WriteString(d.out, b.String())
}

// writeStatus writes the instance table: name, HTTP address, tags, state.
func (d *devCluster) writeStatus(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "INSTANCE\tHTTP\tZONE\tCLUSTER\tPROCESS ID\tSTATE\n")
	for _, in := range d.insts {
		st := "stopped"
		in.mu.Lock()
		if in.err != nil {
			st = "stopped: " + in.err.Error()
		}
		in.mu.Unlock()
		if svc := in.running(); svc != nil {
			st = "ready"
			if ok, why := svc.Ready(); !ok {
				st = "not ready: " + why
			}
		}
		fmt.Fprintf(tw, "%s\thttp://%s\t%s\t%s\t%s\t%s\n", in.name, in.addr, in.zone, in.cluster, in.processID(), st)
	}
	tw.Flush()
}

func (d *devCluster) printHelp() {
	if len(d.insts) == 0 {
		return
	}
	a := d.insts[0].addr
	fmt.Fprintf(d.out, `
Try:
  curl http://%[1]s/v1/metadata
  curl http://%[1]s/v1/stores/count/keys/user-7
  curl -X POST http://%[1]s/v1/dev/instances/i2/kill
Console: kill <id>, stop <id>, start <id>, placement, status, help. Ctrl-C stops everything.
`, a)
}

// console reads commands from stdin until it ends or ctx is cancelled.
func (d *devCluster) console(ctx context.Context, stdin io.Reader) {
	if stdin == nil {
		return
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		close(lines)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case line, ok := <-lines:
			if !ok {
				return
			}
			if msg := d.command(strings.Fields(line)); msg != "" {
				fmt.Fprintln(d.out, msg)
			}
		}
	}
}

// command runs one console command and returns what to print.
func (d *devCluster) command(f []string) string {
	if len(f) == 0 {
		return ""
	}
	switch f[0] {
	case "help", "?":
		return "commands: kill <id> (crash), stop <id> (clean shutdown), start <id>, placement, status, help; ids: " + d.names()
	case "placement":
		d.printPlacement(d.placement())
		return ""
	case "status":
		var b strings.Builder
		d.writeStatus(&b)
		fmt.Fprintf(&b, "records produced: %d", d.produced.Load())
		return b.String()
	case "kill", "stop", "start":
		if len(f) != 2 {
			return "usage: " + f[0] + " <id> (ids: " + d.names() + ")"
		}
		if err := d.act(f[0], f[1]); err != nil {
			return err.Error()
		}
		return f[0] + " " + f[1] + ": done"
	}
	return fmt.Sprintf("unknown command %q: try help", f[0])
}

func (d *devCluster) names() string {
	var ns []string
	for _, in := range d.insts {
		ns = append(ns, in.name)
	}
	return strings.Join(ns, " ")
}

var errNoInstance = errors.New("no such instance")

func (d *devCluster) act(action, id string) error {
	in := d.instance(id)
	if in == nil {
		return fmt.Errorf("%w %q (ids: %s)", errNoInstance, id, d.names())
	}
	switch action {
	case "kill":
		return in.kill()
	case "stop":
		return in.stop()
	case "start":
		return in.start()
	}
	return fmt.Errorf("unknown action %q", action)
}

// admin wraps an instance's HTTP handler with the dev routes, answered only
// to loopback clients, and never to another site's page (crossSite):
//
//	GET  /v1/dev/instances                     every instance and its state
//	POST /v1/dev/instances/{id}/kill|stop|start
func (d *devCluster) admin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/v1/dev/")
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if !loopback(r.RemoteAddr) {
			devJSON(w, http.StatusForbidden, map[string]string{"error": "the dev admin routes answer loopback clients only"})
			return
		}
		if why := crossSite(r); why != "" {
			devJSON(w, http.StatusForbidden, map[string]string{"error": "the dev admin routes refuse requests from other sites' pages (" + why + ")"})
			return
		}
		parts := strings.Split(rest, "/")
		switch {
		case len(parts) == 1 && parts[0] == "instances":
			if r.Method != http.MethodGet {
				w.Header().Set("Allow", "GET")
				devJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use GET"})
				return
			}
			devJSON(w, http.StatusOK, d.instancesDoc())
		case len(parts) == 3 && parts[0] == "instances" && slices.Contains([]string{"kill", "stop", "start"}, parts[2]):
			if r.Method != http.MethodPost {
				w.Header().Set("Allow", "POST")
				devJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use POST"})
				return
			}
			action, id := parts[2], parts[1]
			in := d.instance(id)
			switch {
			case in == nil:
				devJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("%v %q (ids: %s)", errNoInstance, id, d.names())})
				return
			case action != "start" && in.running() == nil:
				devJSON(w, http.StatusConflict, map[string]string{"error": in.name + " is not running"})
				return
			case action == "start" && in.running() != nil:
				devJSON(w, http.StatusConflict, map[string]string{"error": in.name + " is running"})
				return
			}
			fmt.Fprintf(d.out, "rackstream dev: %s %s (HTTP)\n", action, in.name)
			if action != "start" {
				// The instance may be the one answering: answer first.
				devJSON(w, http.StatusAccepted, map[string]string{"instance": in.name, "action": action})
				go d.act(action, in.name)
				return
			}
			if err := d.act(action, in.name); err != nil {
				devJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
				return
			}
			devJSON(w, http.StatusOK, map[string]string{"instance": in.name, "action": action})
		default:
			devJSON(w, http.StatusNotFound, map[string]string{"error": "dev routes: GET /v1/dev/instances, POST /v1/dev/instances/{id}/kill|stop|start"})
		}
	})
}

type devInstanceDoc struct {
	ID        string            `json:"id"`
	ProcessID string            `json:"process_id"`
	HTTP      string            `json:"http"`
	Tags      map[string]string `json:"tags"`
	Running   bool              `json:"running"`
	Ready     bool              `json:"ready"`
	Reason    string            `json:"reason,omitempty"`
}

func (d *devCluster) instancesDoc() []devInstanceDoc {
	var out []devInstanceDoc
	for _, in := range d.insts {
		doc := devInstanceDoc{
			ID: in.name, ProcessID: in.processID(), HTTP: in.addr,
			Tags: map[string]string{devZoneTag: in.zone, devClusterT: in.cluster},
		}
		if svc := in.running(); svc != nil {
			doc.Running = true
			doc.Ready, doc.Reason = svc.Ready()
		}
		out = append(out, doc)
	}
	return out
}

func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func devJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// close stops the producer and every instance (cleanly), then the cluster,
// and removes the temporary directory.
func (d *devCluster) close() error {
	if d.stopProducer != nil {
		d.stopProducer()
	}
	var wg sync.WaitGroup
	for _, in := range d.insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.stop()
			in.mu.Lock()
			done := in.done
			in.mu.Unlock()
			if done != nil {
				<-done
			}
		}()
	}
	wg.Wait()
	if d.producer != nil {
		d.producer.Close()
	}
	d.bg.Wait()
	if d.fake != nil {
		d.fake.Close()
	}
	d.logFile.Close()
	return os.RemoveAll(d.dir)
}

// lockedWriter serialises writes from the watcher, console and admin
// routes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// cutDialer dials until Cut; then it refuses to dial and closes every
// connection it made, so that nothing more reaches the brokers: a crash, as
// far as the cluster can tell.
type cutDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

var errCut = errors.New("connection cut: instance killed")

func (d *cutDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		c.Close()
		return nil, errCut
	}
	d.conns = append(d.conns, c)
	return c, nil
}

// Cut closes every connection and refuses new ones.
func (d *cutDialer) Cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}
