package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// clusterMax is the maximum throughput of the three-instance cluster the
// freshness and failover rows load, measured on that very cluster in the
// same run: "half load" is half of it (issue 17). The single-process count
// benchmark's records/s (one process, no standbys, no HTTP) overstates what
// three instances with standbys sustain beside the broker on a small
// machine; loaded at half of that, probes would queue behind a backlog.
type clusterMax struct {
	firstBacklog int           // the first pass's backlog, when a second pass followed
	firstRate    float64       // and its rate
	rate         float64       // records/s committed while a backlog drained
	backlog      int           // records produced at once
	produce      time.Duration // how long producing them took
	left         int64         // of them, still uncommitted when producing ended
	drain        time.Duration // from the end of producing until all were committed
	sampleGap    time.Duration
}

// maxBacklog bounds the second pass's backlog (kfake holds it in memory).
const maxBacklog = 2_000_000

// measureClusterMax measures with a backlog of backlog records, and when
// its drain took less than minDrain, again with a backlog scaled to drain
// in about minDrain (at most maxBacklog): over a drain of a commit interval
// or two the figure is mostly the committed offsets' own lag, and the
// commits' work (the record caches written through, the stores' batches),
// done once an interval, is not averaged in.
func measureClusterMax(ctx context.Context, adm *kadm.Client, group string, cl *kgo.Client, topic string, keys, backlog int, minDrain, within time.Duration) (clusterMax, error) {
	m, err := drainBacklog(ctx, adm, group, cl, topic, keys, backlog, within)
	if err != nil || minDrain <= 0 || m.drain >= minDrain {
		return m, err
	}
	next := min(maxBacklog, int(float64(backlog)*minDrain.Seconds()/m.drain.Seconds()*1.2))
	if next <= backlog {
		return m, nil
	}
	m2, err := drainBacklog(ctx, adm, group, cl, topic, keys, next, within)
	m2.firstBacklog, m2.firstRate = backlog, m.rate
	return m2, err
}

// drainBacklog produces backlog records as fast as the client takes them
// (random keys among keys, 100-byte values), then follows the group's
// committed offsets of topic, summed over its partitions, every sampleGap
// until they reach the end: the maximum is the rate they moved at over the
// drain after producing ended, when every task had a backlog and the
// producer no longer competed for the CPU. Committed offsets, not the
// instances' processed counters: a counter starts again when its task
// moves, and the commits' own work (the record caches written through, the
// stores' batches) belongs in the figure. Both ends lag the processing by
// up to a commit interval, so the drain must last several.
func drainBacklog(ctx context.Context, adm *kadm.Client, group string, cl *kgo.Client, topic string, keys, backlog int, within time.Duration) (clusterMax, error) {
	const sampleGap = 100 * time.Millisecond
	m := clusterMax{backlog: backlog, sampleGap: sampleGap}
	var failed atomic.Int64
	value := make([]byte, 100)
	n := uint64(12345)
	start := time.Now()
	for range backlog {
		n = n*6364136223846793005 + 1442695040888963407
		k := "key-" + strconv.Itoa(int((n>>33)%uint64(keys)))
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(k), Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return m, fmt.Errorf("produce the backlog: %w", err)
	}
	if f := failed.Load(); f > 0 {
		return m, fmt.Errorf("produce the backlog: %d of %d records failed", f, backlog)
	}
	m.produce = time.Since(start)
	t1 := time.Now()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return m, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	var end int64
	ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
	c1, err := committedSum(ctx, adm, group, topic)
	if err != nil {
		return m, err
	}
	m.left = max(0, end-c1)
	c := c1
	for deadline := t1.Add(within); time.Now().Before(deadline); time.Sleep(sampleGap) {
		c, err = committedSum(ctx, adm, group, topic)
		if err != nil {
			return m, err
		}
		if c >= end {
			m.drain = time.Since(t1)
			if m.left == 0 {
				return m, fmt.Errorf("the %d records were committed while they were produced (%v): the producer, not the cluster, set the pace; a larger backlog is needed", backlog, m.produce)
			}
			m.rate = float64(m.left) / m.drain.Seconds()
			return m, nil
		}
	}
	return m, fmt.Errorf("the group committed %d of the %d records left of the backlog within %v", c-c1, m.left, within)
}

// committedSum is group's committed offsets of topic, summed over the
// partitions.
func committedSum(ctx context.Context, adm *kadm.Client, group, topic string) (int64, error) {
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return 0, fmt.Errorf("committed offsets of %s: %w", group, err)
	}
	var sum int64
	committed.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			sum += o.At
		}
	})
	return sum, nil
}

// halfLoad picks the load of the freshness and failover rows and says in
// sec how: half the cluster's maximum measured above (cm, unless cmErr),
// with half the single-process count's records/s (countRate, 0 when not
// measured in this run) beside it for comparison. -load-rate overrides it;
// without either, the fallback rate. It returns the rate and what it is,
// for the freshness row's text.
func (d *driver) halfLoad(sec *section, cm clusterMax, cmErr error, countRate float64) (float64, string) {
	sec.printf("### Maximum throughput of this cluster\n\n")
	if cmErr != nil {
		sec.printf("Not measured: %v.\n\n", cmErr)
	} else {
		sec.printf("The driver produced %s records at once (random keys among %s, 100-byte values; %v to produce, %s of them still "+
			"uncommitted when producing ended), then read the group's committed offsets every %v until they reached the end: "+
			"**%s records/s** over the %v drain after producing ended (every task had a backlog, and the producer no longer "+
			"shared the CPU; both ends of the drain lag the processing by up to a commit interval). It is what these three instances, with their standbys and HTTP servers, "+
			"sustain beside the broker and the driver on this machine; half of it is the load below.\n\n",
			thousands(float64(cm.backlog)), thousands(float64(d.cfg.countKeys)), cm.produce.Round(time.Millisecond),
			thousands(float64(cm.left)), cm.sampleGap, thousands(cm.rate), cm.drain.Round(time.Millisecond))
		if cm.firstBacklog > 0 {
			sec.printf("That backlog was sized to drain in about %v: a first pass of %s records (%s records/s) drained in less, too few "+
				"commit intervals to average over.\n\n",
				d.cfg.clusterDrain, thousands(float64(cm.firstBacklog)), thousands(cm.firstRate))
		}
	}
	single := "no count ran on this broker in this run"
	if countRate > 0 {
		single = fmt.Sprintf("half the single-process count's %s records/s above (one process, no standbys, no HTTP) is %s records/s",
			thousands(countRate), thousands(countRate/2))
		if cmErr == nil {
			single += fmt.Sprintf(", %.2fx this cluster's half", countRate/cm.rate)
		}
	}
	sec.printf("For comparison: %s.\n\n", single)
	switch {
	case d.cfg.loadRate > 0:
		return d.cfg.loadRate, "a fixed rate, set by -load-rate or the smoke run, not half load"
	case cmErr == nil:
		return cm.rate / 2, fmt.Sprintf("half load: half this cluster's maximum of %s records/s measured above", thousands(cm.rate))
	case countRate > 0:
		return countRate / 2, fmt.Sprintf("half the single-process count's %s records/s, this cluster's maximum not measured", thousands(countRate))
	}
	return d.cfg.fallbackRate, "a fixed rate: neither this cluster's maximum nor a count was measured on this broker in this run"
}

// commitCounts sums one histogram of the instances (name: their
// rackstream_commit_latency_seconds, or rackstream_commit_pause_seconds):
// the count, total seconds, and cumulative counts by bucket bound.
type commitCounts struct {
	name    string
	n       float64
	seconds float64
	buckets map[float64]float64 // le -> commits that took at most le
}

// commitStats scrapes every instance's commit histograms, the commits'
// durations and the pauses they held tasks for; what fails to scrape counts
// nothing (the figures are context for the freshness row).
func commitStats(ctx context.Context, g *group) (commits, pauses commitCounts) {
	c := commitCounts{name: "rackstream_commit_latency_seconds", buckets: map[float64]float64{}}
	p := commitCounts{name: "rackstream_commit_pause_seconds", buckets: map[float64]float64{}}
	for _, m := range g.instances {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url()+"/metrics", nil)
		if err != nil {
			continue
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			c.add(sc.Text())
			p.add(sc.Text())
		}
		resp.Body.Close()
	}
	return c, p
}

// add counts one line of a Prometheus text page, if it is of c's
// histogram.
func (c *commitCounts) add(line string) {
	rest, ok := strings.CutPrefix(line, c.name)
	if !ok {
		return
	}
	f := strings.Fields(rest)
	if len(f) != 2 {
		return
	}
	v, err := strconv.ParseFloat(f[1], 64)
	if err != nil {
		return
	}
	switch {
	case f[0] == "_sum":
		c.seconds += v
	case f[0] == "_count":
		c.n += v
	case strings.HasPrefix(f[0], `_bucket{le="`):
		le, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(f[0], `_bucket{le="`), `"}`), 64)
		if err == nil {
			c.buckets[le] += v
		}
	}
}

// minus is what happened between base and c.
func (c commitCounts) minus(base commitCounts) commitCounts {
	d := commitCounts{name: c.name, n: c.n - base.n, seconds: c.seconds - base.seconds, buckets: map[float64]float64{}}
	for le, v := range c.buckets {
		d.buckets[le] = v - base.buckets[le]
	}
	return d
}

// String is the count, the mean and the smallest bucket bound every
// commit stayed under.
func (c commitCounts) String() string {
	if c.n <= 0 {
		return "-"
	}
	under := math.Inf(1)
	for le, v := range c.buckets {
		if v >= c.n && le < under {
			under = le
		}
	}
	bound := "+Inf"
	if !math.IsInf(under, 1) {
		bound = (time.Duration(under * float64(time.Second))).String()
	}
	return fmt.Sprintf("%.0f, %v, %s", c.n, time.Duration(c.seconds/c.n*float64(time.Second)).Round(100*time.Microsecond), bound)
}
