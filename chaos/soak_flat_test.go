package chaos

import (
	"strings"
	"testing"
)

// The soak's flatness rule, on samples (minute 0 is each life's first, so
// the base is its sample at minute soakWarmup): growth within a life beyond
// the allowance fails, warm-up growth does not count, a new life (a restart)
// or a reset state directory starts a new base, and growth within the
// allowance passes.
func TestSoakFlatness(t *testing.T) {
	const mib = 1 << 20
	s := func(minute int, in string, pid int, rss, goroutines, files float64, state int64) soakSample {
		return soakSample{minute: minute, instance: in, pid: pid, rss: rss * mib, goroutines: goroutines, openFiles: files, stateBytes: state * mib}
	}
	const w = soakWarmup
	for _, tc := range []struct {
		name    string
		samples []soakSample
		want    []string // substrings, one per problem, in order
	}{
		{name: "flat", samples: []soakSample{s(0, "i0", 1, 50, 40, 20, 1), s(w, "i0", 1, 200, 100, 50, 10), s(w+1, "i0", 1, 230, 110, 55, 12), s(w+2, "i0", 1, 300, 180, 90, 28)}},
		{name: "warm-up growth does not count", samples: []soakSample{s(0, "i0", 1, 50, 40, 20, 1), s(w-1, "i0", 1, 400, 200, 90, 60)}},
		{name: "memory leaking", samples: []soakSample{s(0, "i0", 1, 50, 40, 20, 1), s(w, "i0", 1, 200, 100, 50, 10), s(w+1, "i0", 1, 305, 100, 50, 10)},
			want: []string{"i0 (pid 1) at minute 6, against minute 5: resident memory 305 MiB, was 200 MiB"}},
		{name: "goroutines and files leaking", samples: []soakSample{s(2, "i1", 7, 50, 40, 20, 1), s(w+2, "i1", 7, 200, 100, 50, 10), s(w+5, "i1", 7, 200, 185, 93, 10)},
			want: []string{"185 goroutines, was 100", "93 open files, was 50"}},
		{name: "a restart starts a new life", samples: []soakSample{
			s(0, "i0", 1, 50, 40, 20, 1), s(w, "i0", 1, 100, 50, 20, 1), s(w+1, "i0", 2, 400, 300, 200, 40), s(w+2, "i0", 2, 900, 600, 400, 80)}},
		{name: "state growing", samples: []soakSample{s(0, "i2", 3, 50, 40, 20, 1), s(w, "i2", 3, 200, 100, 50, 10), s(w+1, "i2", 3, 200, 100, 50, 29)},
			want: []string{"state directory 29696 KiB, was 10240 KiB"}},
		{name: "a reset state directory starts a new base", samples: []soakSample{
			s(0, "i2", 3, 50, 40, 20, 1), s(w, "i2", 3, 200, 100, 50, 1), {minute: w + 1, instance: "i2", reset: true}, s(w+1, "i2", 3, 200, 100, 50, 40), s(w+2, "i2", 3, 200, 100, 50, 41)}},
		{name: "lives are per instance", samples: []soakSample{
			s(0, "i0", 1, 50, 40, 20, 1), s(w, "i0", 1, 200, 100, 50, 10), s(w, "i1", 2, 900, 100, 50, 10), s(w+1, "i0", 1, 210, 100, 50, 10)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := flatProblems(tc.samples)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d: %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d: %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}
