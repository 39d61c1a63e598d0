package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// keepLogs copies the processes' logs out of the run's work directory,
// which the run deletes, into a new directory beside it, and says where:
// the cluster's instances (work/cluster-<broker>/i<n>.log) and the kfake
// process (work/kfakebroker.log), never the stores' LevelDB journals. A
// slow failover or a freshness outlier in results.md can then be read in
// the instances' own words after the run (make bench at 6c505c0 had one
// SIGTERM failover of 11 s on kfake that the runs after it did not
// repeat, and its logs were gone). It returns the directory, "" when there
// was nothing to keep.
func keepLogs(work string, now time.Time, log io.Writer) (string, error) {
	var logs []string
	for _, pattern := range []string{"cluster-*/*.log", "*.log"} {
		m, err := filepath.Glob(filepath.Join(work, pattern))
		if err != nil {
			return "", err
		}
		logs = append(logs, m...)
	}
	if len(logs) == 0 {
		return "", nil
	}
	dir, err := os.MkdirTemp(filepath.Dir(work), "rackstream-bench-logs-"+now.UTC().Format("20060102-150405")+"-")
	if err != nil {
		return "", err
	}
	for _, src := range logs {
		rel, err := filepath.Rel(work, src)
		if err != nil {
			return "", err
		}
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := copyFile(src, dst); err != nil {
			return "", fmt.Errorf("keep %s: %w", rel, err)
		}
	}
	fmt.Fprintf(log, "kept the instances' and brokers' logs (%d files) in %s\n", len(logs), dir)
	return dir, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
