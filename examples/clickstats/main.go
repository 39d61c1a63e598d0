// Command clickstats is a custom Rackstream processor, meant to be copied:
// it keeps per-user click statistics in a store and emits every update.
//
// Input: topic "clicks", keyed by user id, JSON values {"page": "/x",
// "ms": 120}. Output: topic "click-stats", keyed by user id, the user's
// statistics as JSON. Both topics must have the same partition count.
//
//	kafka-topics.sh --create --topic clicks --partitions 12 ...
//	kafka-topics.sh --create --topic click-stats --partitions 12 ...
//	go run ./examples/clickstats --brokers 127.0.0.1:9092 --state-dir /tmp/clickstats
//	printf 'ann\t{"page":"/home","ms":120}\n' | rackstream produce --brokers 127.0.0.1:9092 --topic clicks
//
// Run several copies (with their own --state-dir and --zone) and they
// share the work; with --standbys 1 each task's state is also kept warm on
// another instance, in another zone when there is one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/tags"
)

// Click is one input value.
type Click struct {
	Page string `json:"page"`
	MS   int64  `json:"ms"`
}

// Stats are a user's statistics: the store's value and the output's.
type Stats struct {
	Clicks   int64  `json:"clicks"`
	TotalMS  int64  `json:"total_ms"`
	LastPage string `json:"last_page"`
}

// Topology declares the processor group: the input, the store, the output
// and the handler. Keep it separate from main so tests can drive it.
func Topology(appID, input, output string) (*processor.Topology, *processor.Store[string, Stats]) {
	topo := processor.New(appID)
	stats := processor.NewStore(topo, "stats", codec.String(), codec.JSON[Stats]())
	updates := processor.NewOutput(topo, output, codec.String(), codec.JSON[Stats]())
	processor.NewInput(topo, input, codec.String(), codec.JSON[Click](),
		func(ctx *processor.Context, user string, c Click) error {
			if ctx.Tombstone() {
				// A delete for the user: forget them, downstream too.
				if err := stats.Delete(ctx, user); err != nil {
					return err
				}
				return updates.EmitTombstone(ctx, user)
			}
			if c.MS < 0 {
				// Permanent: retrying will not help; the record goes to
				// the dead-letter topic with this error.
				return processor.Permanent(fmt.Errorf("negative duration %d ms", c.MS))
			}
			s, _, err := stats.Get(ctx, user)
			if err != nil {
				return err
			}
			s.Clicks++
			s.TotalMS += c.MS
			s.LastPage = c.Page
			if err := stats.Put(ctx, user, s); err != nil {
				return err
			}
			return updates.Emit(ctx, user, s)
		})
	return topo, stats
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "seed brokers, comma-separated")
	stateDir := flag.String("state-dir", "/tmp/clickstats", "state directory (one per instance)")
	zone := flag.String("zone", "", "this instance's zone (client.tag.zone)")
	standbys := flag.Int("standbys", 0, "standby replicas per task")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	topo, _ := Topology("clickstats", "clicks", "click-stats")
	opts := processor.Options{Brokers: strings.Split(*brokers, ","), StateDir: *stateDir, Logger: log}
	opts.Placement.NumStandbyReplicas = *standbys
	if *zone != "" {
		t, err := tags.FromMap(map[string]string{"zone": *zone})
		if err != nil {
			log.Error("bad --zone", "err", err)
			os.Exit(2)
		}
		opts.Tags, opts.Placement.RackAwareAssignmentTags = t, tags.Keys{"zone"}
	}
	rt, err := processor.NewRuntime(topo, opts)
	if err != nil {
		log.Error("bad topology or options", "err", err)
		os.Exit(2)
	}
	// SIGTERM and Ctrl-C shut down gracefully: in-flight records finish,
	// everything is committed, the group is left and the stores closed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := rt.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("stopped", "err", err)
		os.Exit(1)
	}
}
