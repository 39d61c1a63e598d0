// Command rackstream runs, tries and inspects Rackstream: a stateful
// stream-processing service for Kafka with rack-aware standbys.
//
// Subcommands:
//
//	validate  check a configuration and print the effective values
//	assign    compute a placement from a scenario (JSON) and print it
//	produce   produce key/value lines from stdin with Rackstream's partitioner
//	topics    create the topics a processor reads and writes (topics create)
//	run       run one instance of a processor group from configuration
//	dev       run a whole cluster in-process (kfake, 6 instances across zones)
//	version   print the build (also --version)
//
// Each subcommand takes --help.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand: its name, a one-line summary and its entry point.
// run returns the process exit code.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order --help shows them.
func commands() []command {
	return []command{
		validateCommand(os.Environ),
		{"assign", "compute a placement from a scenario (JSON) and print it", runAssign},
		{"produce", "produce key/value lines from stdin with Rackstream's partitioner", runProduce},
		topicsCommand(os.Environ),
		runCommand(os.Environ),
		{"dev", "run a whole cluster in-process (kfake, 6 instances across zones)", runDev},
		versionCommand(),
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// dispatch runs the subcommand named by args[0] and returns the exit code:
// 0 on success, 2 on a usage or validation error, 1 on a runtime failure.
func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "rackstream: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: rackstream <command> [flags]")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'rackstream <command> --help' for a command's flags.")
}
