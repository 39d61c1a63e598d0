package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// rackstream dev, in files of one idea each: the command and its flags
// (here), the cluster's set-up and tear-down (devcluster.go), one
// instance's life (devinstance.go), the console and what it prints
// (devconsole.go), and the admin routes (devadmin.go, devorigin.go).

const devUsage = `Usage: rackstream dev [flags]

Runs a whole Rackstream deployment in this process, with nothing installed:
an in-process Kafka cluster (kfake, on 127.0.0.1:--kafka-port; or
--brokers), and --instances instances
of the group rackstream-dev (--app) tagged like KIP-708's example (zones
eu-central-1a|b|c x clusters k8s-cluster1|2), each with its own state
directory under a temporary directory and its own HTTP port on 127.0.0.1.
They count the records of the topic <app>-events per key, as the built-in
count processor does (store count), and per key and minute (the window
store count-per-minute), fed by a built-in producer (keys
user-1..user-100) at --rate records/s.

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
	kafkaPort  int // of the in-process Kafka; 0 for a free one
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
	fs.IntVar(&o.kafkaPort, "kafka-port", 9092, "port of the in-process Kafka on 127.0.0.1 (0: a free port)")
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
	case o.kafkaPort < 0 || o.kafkaPort > 65535:
		fmt.Fprintf(stderr, "rackstream dev: --kafka-port %d: out of range\n", o.kafkaPort)
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
