package query

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkLookup is the loopback load test: HTTP key lookups answered by
// the local active ("local") and forwarded one hop to the owner
// ("forwarded"), from 1 and 8 concurrent Go clients over keep-alive
// connections.
// It reports lookups/s and p50/p99 latency. Bound it in count and time:
//
//	go test -run '^$' -bench BenchmarkLookup -benchtime 20000x -count 1 ./query/
func BenchmarkLookup(b *testing.B) {
	c := newCluster(b, clusterOpts{members: 2, tasks: 12})
	var local, remote [][]byte
	for i := range 2000 {
		k := []byte(fmt.Sprintf("user-%05d", i))
		c.put(storeCounts, k, []byte(fmt.Sprint(i)))
		if c.owner(k) == c.nodes[0] {
			local = append(local, k)
		} else {
			remote = append(remote, k)
		}
	}
	for _, bc := range []struct {
		name    string
		keys    [][]byte
		clients int
	}{{"local/clients=1", local, 1}, {"local/clients=8", local, 8}, {"forwarded/clients=1", remote, 1}, {"forwarded/clients=8", remote, 8}} {
		b.Run(bc.name, func(b *testing.B) {
			paths := make([]string, len(bc.keys))
			for i, k := range bc.keys {
				paths[i] = c.nodes[0].url + keyPath(storeCounts, k)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			defer client.CloseIdleConnections()
			var (
				mu  sync.Mutex
				lat []time.Duration
			)
			// RunParallel starts parallelism x GOMAXPROCS goroutines.
			b.SetParallelism(max(1, bc.clients/runtime.GOMAXPROCS(0)))
			if bc.clients == 1 {
				runtime.GOMAXPROCS(1)
				defer runtime.GOMAXPROCS(runtime.NumCPU())
			}
			b.ResetTimer()
			cpu0 := cpuTime()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				mine := make([]time.Duration, 0, 1024)
				i := 0
				for pb.Next() {
					t0 := time.Now()
					resp, err := client.Get(paths[i%len(paths)])
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
					mine = append(mine, time.Since(t0))
					i++
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			elapsed := time.Since(start)
			cpu := cpuTime() - cpu0
			b.StopTimer()
			if len(lat) == 0 {
				return
			}
			slices.Sort(lat)
			b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "lookups/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			// CPU of the process (clients and servers) per lookup: what a
			// lookup costs, whatever else the machine is running.
			b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "cpu-µs/op")
		})
	}
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScanPage is a page of 100 keys of a scan over 12 tasks on 3
// instances, merged from every owner (two of them over loopback HTTP).
//
//	go test -run '^$' -bench BenchmarkScanPage -benchtime 2000x -count 1 ./query/
func BenchmarkScanPage(b *testing.B) {
	c := newCluster(b, clusterOpts{members: 3, tasks: 12})
	for i := range 10000 {
		c.put(storeCounts, []byte(fmt.Sprintf("user-%05d", i)), []byte(fmt.Sprint(i)))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	// Pages start at different keys so that every page is a full one.
	paths := make([]string, 90)
	for i := range paths {
		paths[i] = fmt.Sprintf("%s/v1/stores/counts/scan?limit=100&from=user-%05d", c.nodes[0].url, i*100)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := range b.N {
		t0 := time.Now()
		resp, err := client.Get(paths[i%len(paths)])
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		lat = append(lat, time.Since(t0))
	}
	cpu := cpuTime() - cpu0
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
}
