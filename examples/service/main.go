// Command service runs a custom Go topology as the full Rackstream service:
// what `rackstream run` gives its built-in processors (configuration from a
// properties file, the environment and --set; HTTP key queries forwarded to
// the instance that holds the key; /metrics, /healthz and /readyz; rack-aware
// placement of actives and standbys; Kafka security settings; a graceful
// shutdown on SIGTERM), around a handler of your own. Copy it and change
// Topology.
//
// processor.NewRuntime alone runs a topology with none of that; package
// service assembles it: service.New(service.Options{Config: cfg,
// Topology: topo}) and Run(ctx).
//
// This topology keeps, per user, the pages they viewed and how often: input
// topic page-views (key user id, value page path), a store "pages" queryable
// at /v1/stores/pages/keys/{user}.
//
//	go run ./examples/service --config rackstream.properties --input page-views \
//	    --set application.id=page-stats --set bootstrap.servers=127.0.0.1:19092 \
//	    --set http.listen=127.0.0.1:8080 --set state.dir=/tmp/page-stats
//	printf 'ann\t/home\n' | rackstream produce --brokers 127.0.0.1:19092 --topic page-views
//	curl localhost:8080/v1/stores/pages/keys/ann
//
// Every key of `rackstream validate` applies (client.tag.*,
// num.standby.replicas, security.protocol, http.auth.token, ...); run
// several copies with their own state.dir and http.listen and they share
// the tasks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/service"
)

// Topology declares the processor group: views per page for each user.
// It is separate from main so that tests can drive it with
// processor.NewTestDriver.
func Topology(appID, input string) (*processor.Topology, *processor.Store[string, map[string]int64]) {
	topo := processor.New(appID)
	pages := processor.NewStore(topo, "pages", codec.String(), codec.JSON[map[string]int64]())
	processor.NewInput(topo, input, codec.String(), codec.String(),
		func(ctx *processor.Context, user, page string) error {
			if ctx.Tombstone() {
				return pages.Delete(ctx, user) // forget the user
			}
			views, _, err := pages.Get(ctx, user)
			if err != nil {
				return err
			}
			if views == nil {
				views = map[string]int64{}
			}
			views[page]++
			return pages.Put(ctx, user, views)
		})
	return topo, pages
}

// sets collects repeated --set key=value flags.
type sets []string

func (s *sets) String() string { return strings.Join(*s, " ") }
func (s *sets) Set(v string) error {
	if !strings.Contains(v, "=") {
		return errors.New("want key=value")
	}
	*s = append(*s, v)
	return nil
}

func main() {
	file := flag.String("config", "", "properties `FILE` (as rackstream run reads it)")
	input := flag.String("input", "page-views", "the input `TOPIC`")
	var set sets
	flag.Var(&set, "set", "a configuration `key=value` over the file and the environment (repeatable)")
	flag.Parse()
	os.Exit(run(*file, *input, set))
}

func run(file, input string, set []string) int {
	// The same layers as rackstream run: the file, RACKSTREAM_* variables,
	// then --set. Errors name the file and line.
	cfg, err := config.Load(config.Sources{File: file, Env: os.Environ(), Set: set})
	if err != nil {
		fmt.Fprintf(os.Stderr, "service: %v\n", err)
		return 2
	}
	log := service.NewLogger(os.Stderr, cfg.LogFormat, cfg.LogLevel)
	for _, w := range cfg.Warnings() {
		log.Warn("configuration", "warning", w)
	}
	topo, _ := Topology(cfg.ApplicationID, input)
	in, err := service.New(service.Options{
		Config:         cfg,
		Topology:       topo,
		Logger:         log,
		ProcessMetrics: true, // Go runtime and process metrics: one instance per process
	})
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	// SIGTERM and Ctrl-C: in-flight records finish, offsets are committed,
	// the group is left, the stores are closed, within shutdown.timeout.ms.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		select {
		case err = <-done:
		case <-time.After(cfg.ShutdownTimeout + 5*time.Second):
			log.Error("shutdown did not finish in time; exiting")
			return 1
		}
	}
	if err != nil {
		log.Error("stopped", "err", err)
		return 1
	}
	return 0
}
