package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/config/kclient"
	"github.com/rackstream/rackstream/partition"
)

const produceUsage = `Usage: rackstream produce --brokers HOST:PORT[,...] --topic T [flags] < lines
       rackstream produce --config FILE --topic T [flags] < lines

Reads key/value lines from stdin and produces each as one record, keyed, to
the partition Rackstream's partitioner assigns its key: the same slot the
processor's tasks and the HTTP router use. A line is KEY<separator>VALUE; the
value may contain further separators. Lines without a separator are reported
with their line number and not produced (the exit code is then 1).

With --config (and --set, and RACKSTREAM_* variables, as 'rackstream run'
reads them) the brokers, the security settings and the partitioner come from
the service's configuration; --brokers and --partitioner still override.

Flags:
`

// runProduce is `rackstream produce`.
func runProduce(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("produce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "", "seed brokers, comma-separated (required)")
	topic := fs.String("topic", "", "topic to produce to (required)")
	partitioner := fs.String("partitioner", partition.Default, "key-to-partition function: "+strings.Join(partition.Names(), ", "))
	separator := fs.String("separator", "TAB", `between key and value: TAB, or a string (Go escapes such as \t or \x1f allowed)`)
	timeout := fs.Duration("timeout", 30*time.Second, "give up on a record not acknowledged within this time")
	cf := addConfigFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, produceUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		unexpectedArgs(stderr, "produce", fs.NArg(), "lines come from stdin")
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var clientOpts []kgo.Opt
	if cf.set() {
		cfg, opts, ok := cf.loadClients(ctx, os.Environ(), "produce", kclient.PurposeProducer, stderr)
		if !ok {
			return 2
		}
		clientOpts = opts
		if !set["brokers"] {
			*brokers = strings.Join(cfg.BootstrapServers, ",")
		}
		if !set["partitioner"] && cfg.Partitioner != "" {
			*partitioner = string(cfg.Partitioner)
		}
	}
	if *brokers == "" || *topic == "" {
		fmt.Fprintln(stderr, "rackstream produce: --topic and --brokers (or --config) are required")
		return 2
	}
	p, err := partition.ByName(*partitioner)
	if err != nil {
		fmt.Fprintf(stderr, "rackstream produce: --partitioner: %v\n", err)
		return 2
	}
	sep, err := parseSeparator(*separator)
	if err != nil {
		fmt.Fprintf(stderr, "rackstream produce: --separator: %v\n", err)
		return 2
	}

	cl, err := kgo.NewClient(append(clientOpts,
		kgo.SeedBrokers(strings.Split(*brokers, ",")...),
		kgo.DefaultProduceTopic(*topic),
		kgo.RecordPartitioner(partition.Kgo(p)),
		kgo.RecordDeliveryTimeout(*timeout),
	)...)
	if err != nil {
		fmt.Fprintf(stderr, "rackstream produce: client for %s: %v\n", *brokers, err)
		return 1
	}
	defer cl.Close()

	res := produceLines(ctx, cl, stdin, sep, stderr)
	fmt.Fprintf(stdout, "produced %d records to %s (partitioner %s)\n", res.produced, *topic, p.Name())
	switch {
	case res.err != nil:
		fmt.Fprintf(stderr, "rackstream produce: %v\n", res.err)
		if hint := missingTopicHint(res.err, *topic, *brokers, cf.set()); hint != "" {
			fmt.Fprintf(stderr, "rackstream produce: %s\n", hint)
		}
		return 1
	case res.badLines > 0:
		fmt.Fprintf(stderr, "rackstream produce: %d lines without a separator were not produced\n", res.badLines)
		return 1
	}
	return 0
}

// parseSeparator reads the --separator value: the word TAB, or a string with
// Go escape sequences.
func parseSeparator(s string) ([]byte, error) {
	if s == "TAB" {
		return []byte{'\t'}, nil
	}
	u, err := strconv.Unquote(`"` + strings.ReplaceAll(s, `"`, `\"`) + `"`)
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid string: %v", s, err)
	}
	if u == "" {
		return nil, errors.New("must not be empty")
	}
	return []byte(u), nil
}

type produceResult struct {
	produced int64
	badLines int
	err      error // the first produce or read error
}

// produceLines produces every line of r asynchronously and waits for all
// acknowledgements. It stops reading at the first produce error: records
// after it may be out of order with the failed one.
func produceLines(ctx context.Context, cl *kgo.Client, r io.Reader, sep []byte, stderr io.Writer) produceResult {
	var (
		res  produceResult
		mu   sync.Mutex
		fail error
		acks int64
	)
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		return fail
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for lineNo := 1; ; lineNo++ {
		line, readErr := br.ReadBytes('\n')
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
		if len(line) > 0 { // blank lines are skipped
			key, value, ok := bytes.Cut(line, sep)
			if !ok {
				res.badLines++
				fmt.Fprintf(stderr, "stdin:%d: no separator %q between key and value; line not produced\n", lineNo, sep)
			} else {
				n := lineNo
				cl.Produce(ctx, &kgo.Record{Key: key, Value: value}, func(r *kgo.Record, err error) {
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						acks++
					case fail == nil:
						fail = fmt.Errorf("produce key %q (stdin:%d) to %s: %w", r.Key, n, r.Topic, err)
					}
				})
			}
		}
		if readErr == io.EOF {
			break
		}
		if readErr != nil {
			res.err = fmt.Errorf("read stdin line %d: %w", lineNo, readErr)
			break
		}
		if failed() != nil || ctx.Err() != nil {
			break
		}
	}
	if err := cl.Flush(ctx); err != nil && res.err == nil {
		res.err = fmt.Errorf("flush: %w", err)
	}
	mu.Lock()
	res.produced = acks
	if fail != nil {
		res.err = fail
	}
	mu.Unlock()
	return res
}
