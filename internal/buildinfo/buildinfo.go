// Package buildinfo says which build of Rackstream a binary is: the module
// version, the VCS revision and commit time, whether the work tree had
// uncommitted changes, and the Go release that compiled it. Everything comes
// from runtime/debug.ReadBuildInfo, which the go command fills in at build
// time (`go build` inside a git checkout stamps vcs.revision, vcs.time and
// vcs.modified; a tagged commit gives the module its version), so there is no
// hand-maintained version string to forget.
//
// The same Info is printed by `rackstream version`, logged on the start-up
// line of every instance, and exported as the rackstream_build_info gauge
// (value 1, the build in its labels), so that a dashboard can tell which
// instances run which commit.
package buildinfo

import (
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Info describes one build. Fields the toolchain did not record are
// "unknown" (Revision, Time) or "(devel)" (Version), never empty.
type Info struct {
	Module    string // module path of the main package's module
	Version   string // module version: a tag, a pseudo-version, or "(devel)"
	Revision  string // VCS commit hash
	Time      string // VCS commit time, RFC 3339
	Modified  bool   // the work tree had uncommitted changes
	GoVersion string // the Go release that compiled the binary
	Platform  string // GOOS/GOARCH
}

// Read returns the running binary's build information.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		// A binary built without module support: say so rather than fail.
		return fromBuildInfo(nil)
	}
	return fromBuildInfo(bi)
}

// fromBuildInfo is Read's pure part, for tests.
func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{
		Version:   "(devel)",
		Revision:  "unknown",
		Time:      "unknown",
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi == nil {
		return in
	}
	in.Module = bi.Main.Path
	if v := bi.Main.Version; v != "" {
		in.Version = v
	}
	if bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos != "" && goarch != "" {
		in.Platform = goos + "/" + goarch
	}
	return in
}

// Short is the one-line form: "rackstream v1.2.3 (abc1234, dirty) go1.26.0 linux/amd64".
func (in Info) Short() string {
	rev := in.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if in.Modified {
		rev += ", dirty"
	}
	return fmt.Sprintf("rackstream %s (%s) %s %s", in.Version, rev, in.GoVersion, in.Platform)
}

// String is the multi-line form `rackstream version` prints.
func (in Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rackstream %s\n", in.Version)
	fmt.Fprintf(&b, "  module:   %s\n", in.Module)
	fmt.Fprintf(&b, "  revision: %s\n", in.Revision)
	fmt.Fprintf(&b, "  time:     %s\n", in.Time)
	fmt.Fprintf(&b, "  modified: %t\n", in.Modified)
	fmt.Fprintf(&b, "  go:       %s\n", in.GoVersion)
	fmt.Fprintf(&b, "  platform: %s\n", in.Platform)
	return b.String()
}

// LogValue logs the build as a group of its fields.
func (in Info) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("version", in.Version),
		slog.String("revision", in.Revision),
		slog.String("time", in.Time),
		slog.Bool("modified", in.Modified),
		slog.String("go", in.GoVersion),
	)
}

// Collector returns a collector of the rackstream_build_info gauge: always
// 1, the build in its labels (the convention of Prometheus' own
// *_build_info series, so that `on(instance) group_left(version)` joins it
// onto any other series).
func (in Info) Collector() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "rackstream_build_info",
		Help: "The running build: always 1, with the module version, VCS revision and time, dirty flag and Go version as labels.",
		ConstLabels: prometheus.Labels{
			"version":   in.Version,
			"revision":  in.Revision,
			"time":      in.Time,
			"modified":  fmt.Sprint(in.Modified),
			"goversion": in.GoVersion,
		},
	}, func() float64 { return 1 })
}
