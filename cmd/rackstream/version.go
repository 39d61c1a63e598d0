package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rackstream/rackstream/internal/buildinfo"
)

// versionCommand is `rackstream version` (also `rackstream --version`): the
// build's module version, VCS revision and time, dirty flag and Go version,
// as the toolchain stamped them into the binary.
func versionCommand() command {
	return command{
		name:    "version",
		summary: "print the build: version, commit, commit time, dirty flag, Go version",
		run: func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
			if len(args) > 0 {
				fmt.Fprintf(stderr, "rackstream version: takes no arguments (got %q)\n", args)
				return 2
			}
			fmt.Fprint(stdout, buildinfo.Read())
			return 0
		},
	}
}
