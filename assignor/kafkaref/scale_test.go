//go:build unix

package kafkaref

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor"
)

var (
	scale        = flag.Bool("scale", false, "run TestScaleAgainstKafka: 1,000 clients x 10,000 tasks through the assignor and Kafka's reference")
	scaleTimeout = flag.Duration("scale.timeout", 120*time.Second, "time box for Kafka's reference in TestScaleAgainstKafka")
)

// TestScaleAgainstKafka times the Assignor issue's scale scenario (1,000
// clients x 10,000 tasks x 2 standbys x 3 tag dimensions) through Assign and
// through Kafka Streams' standby assignment in one run, the JVM time-boxed by
// -scale.timeout. It is not part of make test:
//
//	go test -timeout 10m ./assignor/kafkaref/ -run TestScaleAgainstKafka -scale -v [-update]
func TestScaleAgainstKafka(t *testing.T) {
	if !*scale {
		t.Skip("the scale comparison runs with -scale (minutes; not part of make test)")
	}
	const clients, tasks = 1000, 10000
	s := ScaleScenario(clients, tasks)
	line, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var in assignor.Input
	if err := json.Unmarshal(line, &in); err != nil {
		t.Fatal(err)
	}

	// Ours: the best of three, with the allocations of one.
	var (
		plan               *assignor.Plan
		best               time.Duration
		stats              runtime.MemStats
		allocs, allocBytes uint64
		bestCPU            time.Duration
	)
	for i := range 3 {
		runtime.GC()
		runtime.ReadMemStats(&stats)
		mallocs, bytes := stats.Mallocs, stats.TotalAlloc
		cpu0 := processCPU(t)
		start := time.Now()
		plan, err = assignor.Assign(in)
		elapsed := time.Since(start)
		cpu := processCPU(t) - cpu0
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&stats)
		mallocs, bytes = stats.Mallocs-mallocs, stats.TotalAlloc-bytes
		if i == 0 || elapsed < best {
			best = elapsed
		}
		if i == 0 || cpu < bestCPU {
			bestCPU = cpu
		}
		if i == 0 {
			allocs, allocBytes = mallocs, bytes
		}
	}
	oq := plan.Quality

	// Kafka's, on a JVM warmed by the committed scenarios so that the time
	// box measures placement, not startup.
	ctx, cancel := context.WithTimeout(context.Background(), *scaleTimeout+2*time.Minute)
	defer cancel()
	jvmStart := time.Now()
	ref := startReference(t, ctx)
	warm := GenerateScenarios(ScenarioSeed, 20)
	for _, w := range warm {
		wl, _ := json.Marshal(w)
		if _, err := ref.Run(wl); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("JVM started and warmed with %d scenarios in %s", len(warm), time.Since(jvmStart).Round(time.Millisecond))

	type answer struct {
		plan *Plan
		err  error
	}
	done := make(chan answer, 1)
	kStart := time.Now()
	go func() {
		p, err := ref.Run(line)
		done <- answer{p, err}
	}()
	var (
		kafkaTime string
		kafkaCPU  = "-"
		kq        *assignor.Quality
	)
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatal(a.err)
		}
		wall := time.Since(kStart)
		kafkaTime = fmt.Sprintf("%s (in the JVM: %s, the rest is JSON)", wall.Round(time.Millisecond),
			time.Duration(a.plan.ElapsedNanos).Round(time.Millisecond))
		kafkaCPU = fmt.Sprintf("%s (assigning thread %s)", time.Duration(a.plan.ProcessCPUNanos).Round(time.Millisecond),
			time.Duration(a.plan.CPUNanos).Round(time.Millisecond))
		var kplan assignor.Plan
		if err := json.Unmarshal(a.plan.Raw, &kplan); err != nil {
			t.Fatal(err)
		}
		q, err := assignor.Measure(in, &kplan)
		if err != nil {
			t.Fatal(err)
		}
		kq = &q
		ref.Close()
	case <-time.After(*scaleTimeout):
		kafkaTime = fmt.Sprintf("> %s (stopped)", *scaleTimeout)
		cancel() // kills the JVM
		<-done
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%d clients (3 regions x 3 zones x 4 clusters per region, round-robin), %d tasks (actives round-robin), 2 standbys, "+
		"rack.aware.assignment.tags=zone,cluster,region; one run on this machine (%d cores shared with other work: load average %s at the end, "+
		"so CPU time is the steadier figure; %s; the JVM warmed by %d small scenarios first, time box %s of wall time).\n\n",
		clients, tasks, runtime.NumCPU(), loadAverage(), runtime.Version(), len(warm), *scaleTimeout)
	fmt.Fprintf(&b, "| | Rackstream `assignor.Assign` | Kafka Streams 4.4.0 `defaultStandbyTaskAssignment` |\n|---|---:|---:|\n")
	fmt.Fprintf(&b, "| wall time per plan | %s (best of 3) | %s |\n", best.Round(time.Millisecond), kafkaTime)
	fmt.Fprintf(&b, "| process CPU time per plan (GC included) | %s (best of 3) | %s |\n", bestCPU.Round(time.Millisecond), kafkaCPU)
	fmt.Fprintf(&b, "| allocations per plan | %d (%.1f MiB) | - |\n", allocs, float64(allocBytes)/(1<<20))
	for i, d := range oq.Dimensions {
		k := "-"
		if kq != nil {
			k = fmt.Sprint(kq.Dimensions[i].TasksRepeating)
		}
		fmt.Fprintf(&b, "| tasks_repeating %s (%d values) | %d | %s |\n", d.Tag, d.Values, d.TasksRepeating, k)
	}
	row := func(name string, o, k func(q assignor.Quality) string) {
		kv := "-"
		if kq != nil {
			kv = k(*kq)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, o(oq), kv)
	}
	shortfall := func(q assignor.Quality) string { return fmt.Sprint(q.StandbyShortfall) }
	load := func(q assignor.Quality) string {
		return fmt.Sprintf("%.3g..%.3g", q.ReplicaLoad.Min, q.ReplicaLoad.Max)
	}
	row("standby_shortfall", shortfall, shortfall)
	row("replica_load min..max", load, load)
	t.Log("\n" + b.String())

	if *update {
		if err := writeSection(benchFile, "scale", "## Scale: 1,000 clients x 10,000 tasks\n\n"+
			"`go test -timeout 10m ./assignor/kafkaref/ -run TestScaleAgainstKafka -scale -update -v`\n\n"+b.String()); err != nil {
			t.Fatal(err)
		}
	}
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is /proc/loadavg's one-minute figure, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}
