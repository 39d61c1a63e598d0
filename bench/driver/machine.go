package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// machine is what results.md says about where and what it measured.
type machine struct {
	when                 time.Time
	cpus                 int
	memory, cpuModel     string
	goVersion            string
	kafka, goka, streams string
	commit               string
	loadStart, loadEnd   string
	took                 time.Duration
}

func readMachine(repo string) machine {
	m := machine{when: time.Now().UTC(), cpus: runtime.NumCPU(), goVersion: runtime.Version(), loadStart: loadAverage()}
	m.cpuModel = firstField("/proc/cpuinfo", "model name")
	if kb := firstField("/proc/meminfo", "MemTotal"); kb != "" {
		var n float64
		fmt.Sscanf(kb, "%f", &n)
		m.memory = fmt.Sprintf("%.1f GiB", n/(1<<20))
	}
	m.kafka = grep(filepath.Join(repo, "deploy/local/kafka.sh"), `^KAFKA_VERSION=(\S+)`)
	m.goka = grep(filepath.Join(repo, "go.mod"), `github.com/lovoo/goka (v\S+)`)
	m.streams = grep(filepath.Join(repo, "bench/kstreams/pom.xml"), `<kafka.version>([^<]+)</kafka.version>`)
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err == nil {
		m.commit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
			m.commit += " (with uncommitted changes)"
		}
	} else {
		m.commit = "unknown (" + err.Error() + ")"
	}
	return m
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// firstField is the value of the first "name: value" line of a /proc file.
func firstField(file, name string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// grep returns the first submatch of pattern in file, "unknown" if none.
func grep(file, pattern string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return "unknown"
	}
	if m := regexp.MustCompile(`(?m)` + pattern).FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return "unknown"
}

// render assembles results.md.
func (d *driver) render(m machine, brokers []broker, skipped []string, sections []*section) string {
	var b strings.Builder
	kind := "`make bench`"
	if d.cfg.smoke {
		kind = "the smoke run (`go run ./bench/driver -smoke`: tiny sizes, one round; the figures say only that the harness works)"
	}
	fmt.Fprintf(&b, "# Benchmark results\n\nWritten by %s (bench/driver) on %s in %v; do not edit by hand. "+
		"bench/README.md says how to read it.\n\n", kind, m.when.Format("2006-01-02 15:04 UTC"), m.took.Round(time.Second))
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| machine | %d CPUs (%s), %s memory, linux/%s |\n", m.cpus, m.cpuModel, m.memory, runtime.GOARCH)
	fmt.Fprintf(&b, "| load average (1, 5, 15 min) | %s at the start, %s at the end |\n", m.loadStart, m.loadEnd)
	fmt.Fprintf(&b, "| commit | %s |\n", m.commit)
	fmt.Fprintf(&b, "| versions | %s; Apache Kafka %s; goka %s; Kafka Streams %s |\n", m.goVersion, m.kafka, m.goka, m.streams)
	var names []string
	for _, br := range brokers {
		names = append(names, br.title)
	}
	fmt.Fprintf(&b, "| brokers | %s |\n", strings.Join(names, ", "))
	fmt.Fprintf(&b, "| rounds | %d per table, every system in its own process, the order rotating each round |\n\n", d.cfg.rounds)
	for _, k := range skipped {
		fmt.Fprintf(&b, "- **No run on %s**: RACKSTREAM_TEST_BROKERS is not set (`eval \"$(deploy/local/kafka.sh env)\"` sets it for the shared broker).\n", k)
	}
	if len(skipped) > 0 {
		b.WriteString("\n")
	}
	if len(d.targets) > 0 {
		b.WriteString("## Targets (issue 17)\n\n")
		b.WriteString(targetTable(d.targets))
		b.WriteString("\n")
	}
	for _, s := range sections {
		b.WriteString(s.markdown())
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
