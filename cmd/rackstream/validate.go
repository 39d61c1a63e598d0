package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/config/kclient"
)

const validateUsage = `Usage: rackstream validate [--config FILE] [--set key=value]...

Reads the configuration as 'rackstream run' does: the properties FILE, then
RACKSTREAM_* environment variables (RACKSTREAM_ + the key upper-cased, dots
and dashes as underscores; RACKSTREAM_CLIENT_TAG_<KEY> sets client.tag.<key>),
then each --set. Prints every key of the effective configuration, sorted,
with its value (secrets masked) and where it came from, and exits 0. On any
error it prints every error, with its file and line, to stderr and exits 2.

Flags:
`

// validateCommand is `rackstream validate`, reading the environment through
// environ (os.Environ in the binary) when it runs.
func validateCommand(environ func() []string) command {
	return command{
		name:    "validate",
		summary: "check a configuration and print the effective values",
		run: func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
			return runValidate(ctx, args, environ(), stdout, stderr)
		},
	}
}

func runValidate(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	cfg, code, ok := loadConfigCommand(ctx, "validate", validateUsage, args, env, stderr)
	if !ok {
		return code
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(stderr, "rackstream validate: warning: %s\n", w)
	}
	if err := cfg.HTTP.CheckExposure(); err != nil {
		fmt.Fprintf(stderr, "rackstream validate: warning: 'rackstream run' would refuse this configuration: %v\n", err)
	}
	if err := cfg.WriteEffective(stdout); err != nil {
		fmt.Fprintf(stderr, "rackstream validate: %v\n", err)
		return 1
	}
	return 0
}

// configFlags are the flags every command that reads the service
// configuration takes: --config FILE and repeatable --set key=value.
type configFlags struct {
	file string
	sets setFlag
}

// loadConfigCommand parses the flags of a command that takes nothing but
// --config and --set, and loads the configuration. When ok is false the
// command is over and exits with code: 0 after --help, 2 on a usage or
// configuration error (every error printed to stderr). ctx bounds the read
// of the file (SIGINT/SIGTERM end it).
func loadConfigCommand(ctx context.Context, name, usage string, args, env []string, stderr io.Writer) (cfg *config.Config, code int, ok bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addConfigFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0, false
		}
		return nil, 2, false
	}
	if fs.NArg() > 0 {
		unexpectedArgs(stderr, name, fs.NArg(), "the file goes after --config")
		return nil, 2, false
	}
	cfg, err := cf.load(ctx, env)
	if err != nil {
		printConfigErrors(stderr, name, err)
		return nil, 2, false
	}
	return cfg, 0, true
}

// unexpectedArgs reports n arguments left after the flags of a command
// that takes --set, without quoting them: after "--set sasl.password VALUE"
// the stray argument is the secret.
func unexpectedArgs(w io.Writer, cmd string, n int, hint string) {
	fmt.Fprintf(w, "rackstream %s: %d unexpected argument(s) after the flags, not shown (%s; --set takes key=value as one argument)\n", cmd, n, hint)
}

// addConfigFlags registers --config and --set on fs.
func addConfigFlags(fs *flag.FlagSet) *configFlags {
	cf := &configFlags{}
	fs.StringVar(&cf.file, "config", "", "the configuration `FILE` (Java properties, at most 1 MiB)")
	fs.Var(&cf.sets, "set", "set a configuration `key=value`, overriding the file and the environment (repeatable)")
	return cf
}

// load reads the configuration from the flags' file and sets and from env,
// the environment as os.Environ returns it; ctx bounds the read of the file.
func (cf *configFlags) load(ctx context.Context, env []string) (*config.Config, error) {
	return config.LoadContext(ctx, config.Sources{File: cf.file, Env: env, Set: cf.sets})
}

// set reports whether --config or --set was given.
func (cf *configFlags) set() bool { return cf.file != "" || len(cf.sets) > 0 }

// loadClients loads the configuration as load does, and the options of a
// Kafka client for purpose built from it. On an error, printed to stderr
// as command's, ok is false: the command exits 2.
func (cf *configFlags) loadClients(ctx context.Context, env []string, command string, purpose kclient.Purpose, stderr io.Writer) (cfg *config.Config, opts []kgo.Opt, ok bool) {
	cfg, err := cf.load(ctx, env)
	if err != nil {
		printConfigErrors(stderr, command, err)
		return nil, nil, false
	}
	clients, err := kclient.New(cfg, nil)
	if err != nil {
		fmt.Fprintf(stderr, "rackstream %s: %v\n", command, err)
		return nil, nil, false
	}
	return cfg, clients.Opts(purpose), true
}

// printConfigErrors prints every configuration error, one a line.
func printConfigErrors(w io.Writer, cmd string, err error) {
	var errs config.Errors
	if !errors.As(err, &errs) {
		fmt.Fprintf(w, "rackstream %s: %v\n", cmd, err)
		return
	}
	noun := "errors"
	if len(errs) == 1 {
		noun = "error"
	}
	fmt.Fprintf(w, "rackstream %s: %d configuration %s:\n", cmd, len(errs), noun)
	for _, e := range errs {
		fmt.Fprintf(w, "  %v\n", e)
	}
}

// setFlag collects repeated --set key=value flags in order. Set accepts
// any argument: the flag package would quote a rejected one in its error
// (--set http.auth.token:VALUE), so config.Load reports a malformed one
// instead, without showing a secret.
type setFlag []string

func (s *setFlag) String() string { return strings.Join(*s, " ") }

func (s *setFlag) Set(v string) error {
	*s = append(*s, v)
	return nil
}
