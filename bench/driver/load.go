package main

import (
	"context"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// producer writes records to the input at a steady rate in the
// background: the load under which freshness and failover are measured.
type producer struct {
	cl       *kgo.Client
	topic    string
	keys     int
	produced atomic.Int64
	failed   atomic.Int64
	// acked counts the load's records by the time from their produce
	// call to their acknowledgement (ackBuckets), the part of their
	// end-to-end latency that is the producer's and the broker's.
	acked [ackBucketCount + 1]atomic.Int64
	stop  chan struct{}
	done  chan struct{}
}

// startLoad produces rate records/s of key-<random below keys> with
// 100-byte values to topic, in 10 ms slices, until stopped.
func startLoad(cl *kgo.Client, topic string, keys int, rate float64) *producer {
	p := &producer{cl: cl, topic: topic, keys: keys, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		start := time.Now()
		sent := 0
		value := make([]byte, 100)
		n := uint64(0)
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
			due := int(rate * time.Since(start).Seconds())
			for ; sent < due; sent++ {
				n = n*6364136223846793005 + 1442695040888963407 // an LCG: cheap, and the same sequence every run
				k := "key-" + strconv.Itoa(int((n>>33)%uint64(keys)))
				p.cl.Produce(context.Background(), &kgo.Record{Topic: topic, Key: []byte(k), Value: value}, func(r *kgo.Record, err error) {
					if err != nil {
						p.failed.Add(1)
						return
					}
					p.produced.Add(1)
					p.acked[ackBucket(time.Since(r.Timestamp))].Add(1)
				})
			}
		}
	}()
	return p
}

// ackBuckets are the upper bounds of the acknowledgement times counted,
// the processor's end-to-end histogram's (1 ms doubling), so that the two
// compare bucket for bucket.
var ackBuckets = func() []time.Duration {
	b := make([]time.Duration, ackBucketCount)
	for i := range b {
		b[i] = time.Millisecond << i
	}
	return b
}()

const ackBucketCount = 18

// ackBucket is the index of the first bucket d fits under (the last
// index: above them all).
func ackBucket(d time.Duration) int {
	for i, le := range ackBuckets {
		if d <= le {
			return i
		}
	}
	return len(ackBuckets)
}

// ackCounts is a snapshot of acked, as a histogram the freshness row
// reads like the instances' (commitCounts).
func (p *producer) ackCounts() commitCounts {
	c := commitCounts{buckets: map[float64]float64{}}
	var cum float64
	for i := range p.acked {
		cum += float64(p.acked[i].Load())
		le := math.Inf(1)
		if i < len(ackBuckets) {
			le = ackBuckets[i].Seconds()
		}
		c.buckets[le] = cum
	}
	c.n = cum
	return c
}

func (p *producer) halt() {
	close(p.stop)
	<-p.done
	_ = p.cl.Flush(context.Background())
}

// loadResult is what a load generator run measured.
type loadResult struct {
	requests int
	errors   int
	elapsed  time.Duration
	p50, p99 time.Duration
}

func (r loadResult) rate() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// generate runs clients goroutines, each GETting urls round robin over its
// own keep-alive connection, for d, and returns requests/s and the latency
// percentiles of the answers with status 200.
func generate(ctx context.Context, urls []string, clients int, d time.Duration) loadResult {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs int
		wg   sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(d)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, 4096)
			bad := 0
			for i := c; time.Now().Before(end) && ctx.Err() == nil; i++ {
				t0 := time.Now()
				resp, err := cl.Get(urls[i%len(urls)])
				if err != nil {
					bad++
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					bad++
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	r := loadResult{requests: len(lat), errors: errs, elapsed: time.Since(start)}
	if len(lat) > 0 {
		slices.Sort(lat)
		r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return r
}

// percentile of sorted durations, 0 when empty.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}
