package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/rackstream/rackstream", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"},
			{Key: "GOARCH", Value: "arm64"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-12-03T07:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	got := fromBuildInfo(bi)
	want := Info{
		Module: "github.com/rackstream/rackstream", Version: "v0.3.0",
		Revision: "0123456789abcdef0123456789abcdef01234567", Time: "2026-12-03T07:00:00Z", Modified: true,
		GoVersion: "go1.26.0", Platform: "linux/arm64",
	}
	if got != want {
		t.Fatalf("fromBuildInfo = %+v, want %+v", got, want)
	}
	if s := got.Short(); s != "rackstream v0.3.0 (0123456789ab, dirty) go1.26.0 linux/arm64" {
		t.Errorf("Short = %q", s)
	}
	for _, w := range []string{"rackstream v0.3.0\n", "revision: 0123456789abcdef0123456789abcdef01234567\n", "time:     2026-12-03T07:00:00Z\n", "modified: true\n", "go:       go1.26.0\n"} {
		if !strings.Contains(got.String(), w) {
			t.Errorf("String lacks %q:\n%s", w, got)
		}
	}
}

// A binary without VCS stamps (go test's, or built outside a checkout)
// says unknown rather than printing empty fields.
func TestWithoutVCS(t *testing.T) {
	got := fromBuildInfo(&debug.BuildInfo{Main: debug.Module{Path: "m"}})
	if got.Version != "(devel)" || got.Revision != "unknown" || got.Time != "unknown" || got.Modified || got.GoVersion == "" {
		t.Errorf("fromBuildInfo without stamps = %+v", got)
	}
	if nilInfo := fromBuildInfo(nil); nilInfo.Version != "(devel)" || nilInfo.Revision != "unknown" {
		t.Errorf("fromBuildInfo(nil) = %+v", nilInfo)
	}
}

func TestBuildInfoGauge(t *testing.T) {
	in := Info{Version: "v0.3.0", Revision: "abc", Time: "2026-12-03T07:00:00Z", GoVersion: "go1.26.0"}
	reg := prometheus.NewRegistry()
	reg.MustRegister(in.Collector())
	want := `
# HELP rackstream_build_info The running build: always 1, with the module version, VCS revision and time, dirty flag and Go version as labels.
# TYPE rackstream_build_info gauge
rackstream_build_info{goversion="go1.26.0",modified="false",revision="abc",time="2026-12-03T07:00:00Z",version="v0.3.0"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "rackstream_build_info"); err != nil {
		t.Error(err)
	}
}
