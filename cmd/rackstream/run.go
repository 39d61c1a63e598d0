package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/service"
)

const runUsage = `Usage: rackstream run --config FILE [--set key=value]...

Runs one instance of a processor group: a member of the consumer group
application.id running the built-in processor processor.type over
processor.input.topic, with state in state.dir (by default under the
user's cache directory) and the HTTP query API on http.listen. When
http.listen is not loopback-only, run refuses to start without
http.auth.token, unless http.auth=none says to serve without
authentication (logged as a warning). The configuration is read as
'rackstream validate' reads it (the file, then RACKSTREAM_* environment
variables, then --set); any error is printed with its file and line and
the exit code is 2.

Topics: run creates the topics it owns, the store changelogs and the
dead-letter topic, with the inputs' partition count. Like Kafka Streams, it
does not create its input, output or table topics: other applications write
or read them, and their partitions, retention and replication are theirs to
choose. A missing one stops run with an error naming it; 'rackstream topics
create --config FILE' creates them, co-partitioned with the input.

Logs go to stderr (log.format text or json, log.level): one line at start-up
with the instance id, tags, endpoint and group, and one per placement with
its summary and quality. SIGTERM or SIGINT shut the instance down cleanly
within shutdown.timeout.ms: in-flight records finish, offsets are committed,
the instance leaves the group.

Flags:
`

// runCommand is `rackstream run`, reading the environment through environ.
func runCommand(environ func() []string) command {
	return command{
		name:    "run",
		summary: "run one instance of a processor group from configuration",
		run: func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
			return runRun(ctx, args, environ(), stderr)
		},
	}
}

// shutdownGrace is how long past shutdown.timeout.ms run waits for the
// instance before giving up on it (exit 1).
const shutdownGrace = 5 * time.Second

func runRun(ctx context.Context, args, env []string, stderr io.Writer) int {
	cfg, code, ok := loadConfigCommand(ctx, "run", runUsage, args, env, stderr)
	if !ok {
		return code
	}
	if cfg.Processor.Type == "" {
		fmt.Fprintln(stderr, "rackstream run: no processor to run: set processor.type (one of the built-in processors: see the configuration reference) and processor.input.topic")
		return 2
	}
	if err := cfg.HTTP.CheckExposure(); err != nil {
		fmt.Fprintf(stderr, "rackstream run: %v\n", err)
		return 2
	}
	log := service.NewLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	for _, w := range cfg.Warnings() {
		log.Warn("configuration", "warning", w)
	}
	if cfg.HTTP.Open() {
		log.Warn("the HTTP server answers every client that can reach it, without authentication (http.auth=none)", "http.listen", cfg.HTTP.Listen)
	}
	in, err := service.New(service.Options{Config: cfg, Logger: log, ProcessMetrics: true})
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		t := time.NewTimer(cfg.ShutdownTimeout + shutdownGrace)
		defer t.Stop()
		select {
		case err = <-done:
		case <-t.C:
			log.Error("shutdown did not finish in time; exiting", "shutdown.timeout.ms", cfg.ShutdownTimeout.Milliseconds())
			return 1
		}
	}
	if err != nil {
		log.Error("exiting on error", "err", err)
		if topicsMissing(err) {
			log.Error("create the missing topics with 'rackstream topics create --config FILE' (the same configuration), then start again")
		}
		return 1
	}
	return 0
}

// topicsMissing reports whether err is the start-up check finding an
// input or a table topic missing.
func topicsMissing(err error) bool {
	var pc *processor.PartitionCountError
	if !errors.As(err, &pc) {
		return false
	}
	return slices.ContainsFunc(slices.Concat(pc.Inputs, pc.Tables), func(c processor.TopicCount) bool { return c.Partitions < 0 })
}
