package gokabench

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// only keeps the systems GOKA_BENCH_SYSTEMS names (comma-separated; all of
// them when unset), so that a benchmark can run one system per process.
func only[S any](tb testing.TB, all []S, name func(S) string) []S {
	tb.Helper()
	v := os.Getenv("GOKA_BENCH_SYSTEMS")
	if v == "" {
		return all
	}
	want := strings.Split(v, ",")
	var out []S
	for _, s := range all {
		if slices.Contains(want, name(s)) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		tb.Fatalf("GOKA_BENCH_SYSTEMS=%q names none of the systems", v)
	}
	return out
}
