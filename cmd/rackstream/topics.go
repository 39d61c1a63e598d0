package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/config/kclient"
)

const topicsUsage = `Usage: rackstream topics create --config FILE [--set key=value]... [flags]
       rackstream topics create --brokers HOST:PORT[,...] --topic T --partitions N [flags]

Creates the topics the built-in processor reads and writes that do not exist
yet: processor.input.topic, processor.output.topic and processor.table.topic
(compacted), each when set, and every --topic. 'rackstream run' creates only
the topics it owns (store changelogs, the dead-letter topic); this creates
the ones other applications share.

Every topic gets --partitions partitions; without it, those of the existing
processor.input.topic, so that outputs and tables stay co-partitioned with
it. A topic that exists already with that count is left as it is; one with
another count is an error naming the topic and both counts (a global table,
processor.table.global=true, may have any count). The replication factor is
replication.factor (-1: the broker's default), or --replication-factor.

The configuration is read as 'rackstream run' reads it (the file, then
RACKSTREAM_* environment variables, then --set): the brokers and the
security settings come from it; --brokers overrides the brokers. A created
topic is reported once every partition has a leader, so that a producer or
'rackstream run' started next finds it.

Exit status: 0 every topic exists as wanted, 1 a broker refused or failed,
2 bad usage, a configuration error, or a topic with another partition count.

Flags:
`

// topicsCommand is `rackstream topics`, reading the environment through
// environ when it runs.
func topicsCommand(environ func() []string) command {
	return command{
		name:    "topics",
		summary: "create the topics a processor reads and writes (topics create)",
		run: func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
			return runTopics(ctx, args, environ(), stdout, stderr)
		},
	}
}

// topicsFlag collects repeated --topic flags.
type topicsFlag []string

func (t *topicsFlag) String() string { return strings.Join(*t, ",") }

func (t *topicsFlag) Set(v string) error {
	if v == "" {
		return errors.New("empty topic name")
	}
	*t = append(*t, v)
	return nil
}

func runTopics(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, topicsUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] != "create" {
		fmt.Fprintf(stderr, "rackstream topics: unknown subcommand %q: the one subcommand is create\n", args[0])
		return 2
	}
	fs := flag.NewFlagSet("topics create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "", "seed brokers, comma-separated (instead of, or over, bootstrap.servers)")
	var topics topicsFlag
	fs.Var(&topics, "topic", "a further `TOPIC` to create (repeatable)")
	partitions := fs.Int("partitions", 0, "partitions of every topic (0: those of the existing processor.input.topic)")
	rf := fs.Int("replication-factor", 0, "replication factor of the topics created (0: replication.factor; -1: the broker's default)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up on the brokers after this time")
	cf := addConfigFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, topicsUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		unexpectedArgs(stderr, "topics create", fs.NArg(), "name topics with --topic")
		return 2
	}
	if *partitions < 0 || *partitions > math.MaxInt32 {
		fmt.Fprintf(stderr, "rackstream topics create: --partitions %d: at least 1 (or 0 for the input's)\n", *partitions)
		return 2
	}
	if *rf < -1 || *rf > math.MaxInt16 {
		fmt.Fprintf(stderr, "rackstream topics create: --replication-factor %d: -1 (the broker's default) or from 1 to %d\n", *rf, math.MaxInt16)
		return 2
	}

	var (
		specs      []topicSpec
		countFrom  string
		clientOpts []kgo.Opt
		repl       = int16(-1)
	)
	if cf.set() {
		cfg, opts, ok := cf.loadClients(ctx, env, "topics create", kclient.PurposeAdmin, stderr)
		if !ok {
			return 2
		}
		clientOpts = opts
		if *brokers == "" {
			*brokers = strings.Join(cfg.BootstrapServers, ",")
		}
		specs = processorTopics(cfg.Processor)
		countFrom = cfg.Processor.InputTopic
		repl = int16(cfg.ReplicationFactor)
	}
	for _, t := range topics {
		specs = addTopic(specs, topicSpec{name: t, role: "--topic"})
	}
	if *rf != 0 {
		repl = int16(*rf)
	}
	if *brokers == "" {
		fmt.Fprintln(stderr, "rackstream topics create: --config or --brokers is required")
		return 2
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cl, err := kgo.NewClient(append(clientOpts, kgo.SeedBrokers(strings.Split(*brokers, ",")...), freshMetadata)...)
	if err != nil {
		fmt.Fprintf(stderr, "rackstream topics create: client for %s: %v\n", *brokers, err)
		return 1
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	if countFrom != "" {
		names = append(names, countFrom)
	}
	counts, err := topicCounts(ctx, adm, *brokers, names)
	if err != nil {
		fmt.Fprintf(stderr, "rackstream topics create: %v\n", err)
		return 1
	}
	plan, err := planTopics(specs, counts, int32(*partitions), countFrom)
	if err != nil {
		fmt.Fprintf(stderr, "rackstream topics create: on %s: %v\n", *brokers, err)
		return 2
	}
	for _, s := range plan.exist {
		fmt.Fprintf(stdout, "topic %s exists with %d partitions\n", s, counts[s.name])
	}
	for _, s := range plan.create {
		if err := createTopic(ctx, adm, *brokers, s, plan.partitions, repl); err != nil {
			fmt.Fprintf(stderr, "rackstream topics create: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "topic %s created with %d partitions (%s), %s\n", s, plan.partitions, plan.from, replicationText(repl))
	}
	return 0
}

// freshMetadata lets createTopic see a new topic in the metadata as soon as
// the brokers have it: kadm reads metadata through the client's cache,
// which is 5 s old at most by default.
var freshMetadata = kgo.MetadataMinAge(50 * time.Millisecond)

// topicCounts asks the brokers for each topic's partition count: -1 for a
// topic that does not exist.
func topicCounts(ctx context.Context, adm *kadm.Client, brokers string, topics []string) (map[string]int32, error) {
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topics %s on %s: %w", strings.Join(topics, ", "), brokers, err)
	}
	counts := make(map[string]int32, len(topics))
	for _, t := range topics {
		d, ok := details[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			counts[t] = -1
		case d.Err != nil:
			return nil, fmt.Errorf("describe topic %s on %s: %w", t, brokers, d.Err)
		default:
			counts[t] = int32(len(d.Partitions))
		}
	}
	return counts, nil
}

// createTopic creates s with the given partitions and replication factor
// and returns once the metadata lists every partition with a leader: a
// real cluster answers CreateTopics before every broker knows the topic,
// and a client started in that gap would find it missing. A topic created
// meanwhile by someone else, with the same count, is fine.
func createTopic(ctx context.Context, adm *kadm.Client, brokers string, s topicSpec, partitions int32, rf int16) error {
	resp, err := adm.CreateTopic(ctx, partitions, rf, s.configs, s.name)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s with %d partitions (%s) on %s: %w", s, partitions, replicationText(rf), brokers, err)
	}
	for {
		td, err := adm.ListTopics(ctx, s.name)
		d := td[s.name]
		if err == nil && d.Err == nil && len(d.Partitions) > 0 {
			if n := int32(len(d.Partitions)); n != partitions && !s.anyCount {
				return fmt.Errorf("topic %s was created meanwhile by someone else, with %d partitions, not %d", s, n, partitions)
			}
			if !hasLeaderless(d) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s created on %s, but the metadata does not list its %d partitions with leaders: %w", s, brokers, partitions, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// hasLeaderless reports whether a partition of d has no leader yet.
func hasLeaderless(d kadm.TopicDetail) bool {
	for _, p := range d.Partitions {
		if p.Err != nil || p.Leader < 0 {
			return true
		}
	}
	return false
}

// missingTopicHint returns how to create topic when err says it does not
// exist, or "".
func missingTopicHint(err error, topic, brokers string, config bool) string {
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return ""
	}
	how := "rackstream topics create --brokers " + brokers + " --topic " + topic + " --partitions N"
	if config {
		how = "rackstream topics create --config FILE --topic " + topic + " [--partitions N]"
	}
	return fmt.Sprintf("topic %s does not exist on %s: create it first, with %s", topic, brokers, how)
}
