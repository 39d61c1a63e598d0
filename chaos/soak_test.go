package chaos

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/cluster"
)

// EnvSoak is how long TestSoak runs (a Go duration: "3m" in CI, "30m" or
// more by hand with make soak); unset, it skips.
const EnvSoak = "RACKSTREAM_SOAK"

// soakFaults are the faults a soak draws from, in turn: each names what it
// does to one instance and whether it resets the instance's state
// directory. The first three are the short suite's kinds, so that CI's
// three-minute form inflicts those.
var soakFaults = []struct {
	name  string
	reset bool
	do    func(r *run, victim *cluster.Instance)
}{
	{name: "kill", do: func(r *run, v *cluster.Instance) {
		r.kill(v)
		r.waitTakeover(v)
		r.restart(v)
	}},
	{name: "sigterm", do: func(r *run, v *cluster.Instance) {
		if code := v.Stop(deadline); code != 0 {
			r.t.Errorf("%s exited %d after SIGTERM", v.Name, code)
		}
		r.restart(v)
	}},
	{name: "state-lost", reset: true, do: func(r *run, v *cluster.Instance) {
		r.kill(v)
		r.waitTakeover(v)
		if err := os.RemoveAll(v.StateDir); err != nil {
			r.t.Fatal(err)
		}
		r.restart(v)
	}},
	{name: "freeze", do: func(r *run, v *cluster.Instance) {
		r.midTransaction(v)
		v.Freeze()
		r.waitTakeover(v)
		v.Thaw()
	}},
	{name: "network-cut", do: func(r *run, v *cluster.Instance) {
		r.midTransaction(v)
		v.Isolate()
		r.waitTakeover(v)
		v.Reconnect()
	}},
}

// TestSoak is the soak (make soak): six instances under steady load, a
// fault a minute drawn in turn from soakFaults, each on the next instance,
// for RACKSTREAM_SOAK. After each fault has healed and its minute is over,
// every instance is sampled: resident memory, goroutines and open files
// (its own metrics), and the size of its state directory. The end checks
// are every scenario's (nothing lost, duplicates only where the guarantee
// allows, no key read backwards), and the resources must stay flat within
// each life of an instance (a process, from its start to its end) once it
// has warmed up (flatProblems). CI's three-minute form checks the first
// part only: no life there outlasts its warm-up.
func TestSoak(t *testing.T) {
	needMode(t, false)
	d, err := time.ParseDuration(os.Getenv(EnvSoak))
	if os.Getenv(EnvSoak) == "" {
		t.Skipf("the soak runs with %s=<duration> (make soak; 3m in CI)", EnvSoak)
	}
	if err != nil || d < time.Minute {
		t.Fatalf("%s=%q: want a duration of a minute or more", EnvSoak, os.Getenv(EnvSoak))
	}
	r := beginWith(t, "soak", setup{})
	var samples []soakSample
	start := time.Now()
	for minute := 0; time.Since(start) < d; minute++ {
		fault := soakFaults[minute%len(soakFaults)]
		victim := r.ins[minute%len(r.ins)]
		began := time.Now()
		if fault.reset {
			samples = append(samples, soakSample{minute: minute, instance: victim.Name, reset: true})
		}
		fault.do(r, victim)
		back := time.Now()
		r.healed(back)
		t.Logf("minute %d: %s of %s healed in %v", minute, fault.name, victim.Name, time.Since(back).Round(time.Millisecond))
		if wait := time.Minute - time.Since(began); wait > 0 {
			time.Sleep(wait) // pacing: one fault a minute, not synchronisation
		}
		for _, in := range r.ins {
			s, err := sampleInstance(in)
			if err != nil {
				t.Errorf("minute %d: %v", minute, err)
				continue
			}
			s.minute = minute
			samples = append(samples, s)
		}
	}
	r.end(r.activeBound())
	for _, p := range flatProblems(samples) {
		t.Error(p)
	}
	fmt.Println(soakLine(samples, time.Since(start)))
}

// soakSample is one instance's resources after one minute of the soak, or
// (reset) the mark that its state directory was reset before that minute.
type soakSample struct {
	minute     int
	instance   string
	pid        int
	reset      bool
	rss        float64 // bytes
	goroutines float64
	openFiles  float64
	stateBytes int64
}

// soakWarmup is how long a life warms up before its resources are held
// flat: its stores' memtables and block caches, and the record cache, fill
// toward state.memory.bytes in its first minutes.
const soakWarmup = 5 // minutes

// soakGrowth bounds how far a life's sample may exceed its base: a
// fraction of it, plus an absolute allowance for what a fault moves at
// once (tasks and their stores' memtables, a compaction's new tables
// before the old ones go).
var soakGrowth = struct {
	fraction                  float64
	rss, goroutines, openFile float64
	stateBytes                int64
}{fraction: 0.2, rss: 64 << 20, goroutines: 64, openFile: 32, stateBytes: 16 << 20}

// flatProblems checks that each life's resources stay flat. A life is the
// samples of one instance with one process id. Its base is its first
// sample soakWarmup minutes or more after its first; every later sample
// must be within the base plus soakGrowth. The state directory's base
// restarts at the first sample after a reset.
func flatProblems(samples []soakSample) []string {
	type life struct {
		pid         int
		firstMinute int
		base        *soakSample // nil while warming up
		stateBase   int64       // -1: reset, the next sample is the base
	}
	lives := map[string]*life{} // instance -> its current life
	var problems []string
	over := func(got, base, abs float64) bool { return got > base*(1+soakGrowth.fraction)+abs }
	for _, s := range samples {
		l := lives[s.instance]
		if s.reset {
			if l != nil {
				l.stateBase = -1
			}
			continue
		}
		if l == nil || l.pid != s.pid {
			l = &life{pid: s.pid, firstMinute: s.minute}
			lives[s.instance] = l
		}
		if l.base == nil {
			if s.minute-l.firstMinute >= soakWarmup {
				base := s
				l.base, l.stateBase = &base, s.stateBytes
			}
			continue
		}
		if l.stateBase < 0 {
			l.stateBase = s.stateBytes
		}
		f := l.base
		what := fmt.Sprintf("%s (pid %d) at minute %d, against minute %d", s.instance, s.pid, s.minute, f.minute)
		if over(s.rss, f.rss, soakGrowth.rss) {
			problems = append(problems, fmt.Sprintf("%s: resident memory %.0f MiB, was %.0f MiB", what, s.rss/(1<<20), f.rss/(1<<20)))
		}
		if over(s.goroutines, f.goroutines, soakGrowth.goroutines) {
			problems = append(problems, fmt.Sprintf("%s: %.0f goroutines, was %.0f", what, s.goroutines, f.goroutines))
		}
		if over(s.openFiles, f.openFiles, soakGrowth.openFile) {
			problems = append(problems, fmt.Sprintf("%s: %.0f open files, was %.0f", what, s.openFiles, f.openFiles))
		}
		if over(float64(s.stateBytes), float64(l.stateBase), float64(soakGrowth.stateBytes)) {
			problems = append(problems, fmt.Sprintf("%s: state directory %d KiB, was %d KiB", what, s.stateBytes>>10, l.stateBase>>10))
		}
	}
	return problems
}

// sampleInstance reads in's resources from its metrics and its state
// directory's size from the disk.
func sampleInstance(in *cluster.Instance) (soakSample, error) {
	s := soakSample{instance: in.Name, pid: in.Proc().Cmd.Process.Pid}
	fams, err := cluster.Scrape(in.URL() + "/metrics")
	if err != nil {
		return s, fmt.Errorf("%s: scrape: %w", in.Name, err)
	}
	for name, dst := range map[string]*float64{
		"process_resident_memory_bytes": &s.rss,
		"go_goroutines":                 &s.goroutines,
		"process_open_fds":              &s.openFiles,
	} {
		v, ok := cluster.MetricValue(fams, name)
		if !ok {
			return s, fmt.Errorf("%s: no %s in its metrics", in.Name, name)
		}
		*dst = v
	}
	err = filepath.WalkDir(in.StateDir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file compacted away while walking
		}
		if fi, err := d.Info(); err == nil && !d.IsDir() {
			s.stateBytes += fi.Size()
		}
		return nil
	})
	return s, err
}

// soakLine summarises the soak's samples: each resource's range over the
// run, across instances.
func soakLine(samples []soakSample, took time.Duration) string {
	var rssMax, gMax, fMax float64
	var stMax int64
	n := 0
	for _, s := range samples {
		if s.reset {
			continue
		}
		n++
		rssMax, gMax, fMax, stMax = max(rssMax, s.rss), max(gMax, s.goroutines), max(fMax, s.openFiles), max(stMax, s.stateBytes)
	}
	return strings.Join([]string{
		"soak: " + took.Round(time.Second).String(),
		fmt.Sprintf("samples=%d", n),
		fmt.Sprintf("rss_max=%.0fMiB", rssMax/(1<<20)),
		fmt.Sprintf("goroutines_max=%.0f", gMax),
		fmt.Sprintf("open_files_max=%.0f", fMax),
		fmt.Sprintf("state_dir_max=%dKiB", stMax>>10),
	}, " ")
}
