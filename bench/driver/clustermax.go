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
	rate         float64       // records/s processed while a backlog drained
	backlog      int           // records produced at once
	produce      time.Duration // how long producing them took
	left         int64         // of them, still uncommitted when producing ended
	drain        time.Duration // from the end of producing until all were committed
	// processed is how many records the instances processed from the end
	// of producing until they processed the last (busy); 0 when their
	// counters could not be read, and rate is then left / drain.
	processed float64
	busy      time.Duration
	// whole is the records/s the counters moved by from the start of
	// producing to the end: when the instances keep up with the producer,
	// the drain after it is short and says little, and this is the better
	// first step of the sustained search (a lower bound: the producer's
	// pace).
	whole     float64
	sampleGap time.Duration
}

// processedFunc returns the sum of the instances' processed-record
// counters, false when one could not be read.
type processedFunc func(context.Context) (float64, bool)

// maxBacklog bounds the second pass's backlog (kfake holds it in memory:
// about 1 GB at this size). At 2,000,000 the faster commit left drains of
// 2.6-3.2 s, where the counters miss the last commits' work and the figure
// swung from 181k to 254k records/s between two runs on Kafka 4.4.
const maxBacklog = 4_000_000

// measureClusterMax measures with a backlog of backlog records, and when
// its drain took less than minDrain, again with a backlog scaled to drain
// in about minDrain (at most maxBacklog): over a drain of a commit interval
// or two the figure is mostly the committed offsets' own lag, and the
// commits' work (the record caches written through, the stores' batches),
// done once an interval, is not averaged in.
func measureClusterMax(ctx context.Context, adm *kadm.Client, group string, cl *kgo.Client, topic string, processed processedFunc, keys, backlog int, minDrain, within time.Duration) (clusterMax, error) {
	m, err := drainBacklog(ctx, adm, group, cl, topic, processed, keys, backlog, within)
	if err != nil || minDrain <= 0 || m.drain >= minDrain {
		return m, err
	}
	next := min(maxBacklog, int(float64(backlog)*minDrain.Seconds()/m.drain.Seconds()*1.2))
	if next <= backlog {
		return m, nil
	}
	m2, err := drainBacklog(ctx, adm, group, cl, topic, processed, keys, next, within)
	m2.firstBacklog, m2.firstRate = backlog, m.rate
	return m2, err
}

// drainBacklog produces backlog records as fast as the client takes them
// (random keys among keys, 100-byte values), then follows the group's
// committed offsets of topic, summed over its partitions, and the
// instances' processed-record counters, every sampleGap until the offsets
// reach the end: the maximum is the rate the counters moved at from the
// end of producing until they stopped, when every task had a backlog and
// the producer no longer competed for the CPU (the commits run beside the
// tasks, so their work is in it). The committed offsets alone lag the
// processing by a commit's duration, which a commit that waits for its
// records' acknowledgements makes long under such a backlog: the records
// processed but not yet committed when producing ended made a drain of a
// few seconds look up to twice as fast. The counters restart only when a
// task moves, which a settled group does not do during the drain; when
// they cannot be read, the figure falls back to the committed offsets.
func drainBacklog(ctx context.Context, adm *kadm.Client, group string, cl *kgo.Client, topic string, processed processedFunc, keys, backlog int, within time.Duration) (clusterMax, error) {
	const sampleGap = 100 * time.Millisecond
	m := clusterMax{backlog: backlog, sampleGap: sampleGap}
	var failed atomic.Int64
	value := make([]byte, 100)
	n := uint64(12345)
	p0, counted0 := processed(ctx)
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
	p1, counted := processed(ctx)
	pLast, pAt := p1, t1
	c := c1
	for deadline := t1.Add(within); time.Now().Before(deadline); time.Sleep(sampleGap) {
		c, err = committedSum(ctx, adm, group, topic)
		if err != nil {
			return m, err
		}
		if counted {
			p, ok := processed(ctx)
			counted = ok && p >= pLast
			if p > pLast {
				pLast, pAt = p, time.Now()
			}
		}
		if c >= end {
			m.drain = time.Since(t1)
			if m.left == 0 {
				return m, fmt.Errorf("the %d records were committed while they were produced (%v): the producer, not the cluster, set the pace; a larger backlog is needed", backlog, m.produce)
			}
			m.rate = float64(m.left) / m.drain.Seconds()
			if counted && pLast > p1 {
				m.processed, m.busy = pLast-p1, pAt.Sub(t1)
				m.rate = m.processed / m.busy.Seconds()
			}
			if counted && counted0 && pLast > p0 {
				m.whole = (pLast - p0) / pAt.Sub(start).Seconds()
			}
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
func (d *driver) halfLoad(sec *section, cm clusterMax, cmErr error, sus sustained, susErr error, countRate float64) (float64, string) {
	sec.printf("### Maximum throughput of this cluster\n\n")
	if cmErr != nil {
		sec.printf("Not measured: %v.\n\n", cmErr)
	} else {
		how := fmt.Sprintf("the instances' processed-record counters (`rackstream_process_records_total`) moved by %s in the %v "+
			"from the end of producing until they stopped: **%s records/s**, every task with a backlog and the producer no longer "+
			"sharing the CPU (the committed offsets lag the processing by a commit's duration, and alone would have said %s records/s)",
			thousands(cm.processed), cm.busy.Round(time.Millisecond), thousands(cm.rate), thousands(float64(cm.left)/cm.drain.Seconds()))
		if cm.processed == 0 {
			how = fmt.Sprintf("the instances' counters could not be read, so from the committed offsets: **%s records/s** over the drain "+
				"(both of its ends lag the processing by a commit's duration)", thousands(cm.rate))
		}
		sec.printf("The driver produced %s records at once (random keys among %s, 100-byte values; %v to produce, %s of them still "+
			"uncommitted when producing ended), then read the group's committed offsets and the instances' /metrics every %v until "+
			"the offsets reached the end, %v after producing ended; %s. It is what these three instances, with their standbys and HTTP servers, "+
			"sustain beside the broker and the driver on this machine; half of it is the load below.\n\n",
			thousands(float64(cm.backlog)), thousands(float64(d.cfg.countKeys)), cm.produce.Round(time.Millisecond),
			thousands(float64(cm.left)), cm.sampleGap, cm.drain.Round(time.Millisecond), how)
		if cm.firstBacklog > 0 {
			sec.printf("That backlog was sized to drain in about %v: a first pass of %s records (%s records/s) drained in less, too few "+
				"commit intervals to average over.\n\n",
				d.cfg.clusterDrain, thousands(float64(cm.firstBacklog)), thousands(cm.firstRate))
		}
	}
	if cmErr == nil {
		if susErr != nil {
			sec.printf("The sustained maximum was not found (%v; rates tried: %s): the load below is half the backlog's drain, which "+
				"overstates what the cluster keeps up with while the load is produced beside it.\n\n", susErr, sus)
		} else {
			sec.printf("**Sustained maximum**: the drain has the producer idle, and the record cache merges more updates per key from a "+
				"backlog than from a live load; and when the instances work through records about as fast as the driver produces them, "+
				"the drain after producing is short and says little (the counters moved by %s records/s over producing and draining "+
				"together). So the driver then produced the load live, from the higher of the two figures, going down while the instances "+
				"fell behind and up (x%.1f) while they kept up, each rate for %v of warm-up and a %v window, a rate kept up with when "+
				"the instances' counters moved by at least 95%% of what was acknowledged: %s. The search %s. **%s records/s** is the "+
				"highest rate they kept up with, the producer and the broker sharing the two cores; half of it is the load below.\n\n",
				thousands(cm.whole), upFactor, d.cfg.sustainWarm, sus.window, sus, sus.ended, thousands(sus.rate))
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
	case cmErr == nil && susErr == nil:
		return sus.rate / 2, fmt.Sprintf("half load: half this cluster's sustained maximum of %s records/s measured above (its backlog drain: %s records/s)",
			thousands(sus.rate), thousands(cm.rate))
	case cmErr == nil:
		return cm.rate / 2, fmt.Sprintf("half this cluster's backlog drain of %s records/s measured above, its sustained maximum not found", thousands(cm.rate))
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
// durations and the pauses they held tasks for, and the records'
// end-to-end latency (their timestamp to the end of their processing);
// what fails to scrape counts nothing (the figures are context for the
// freshness row).
func commitStats(ctx context.Context, g *group) (commits, pauses, e2e commitCounts) {
	c := commitCounts{name: "rackstream_commit_latency_seconds", buckets: map[float64]float64{}}
	p := commitCounts{name: "rackstream_commit_pause_seconds", buckets: map[float64]float64{}}
	e := commitCounts{name: "rackstream_record_e2e_latency_seconds", buckets: map[float64]float64{}}
	scrapeMetrics(ctx, g, func(line string) {
		c.add(line)
		p.add(line)
		e.add(line)
	})
	return c, p, e
}

// processedSum is the sum of every instance's
// rackstream_process_records_total series; false when an instance's page
// could not be read.
func processedSum(ctx context.Context, g *group) (float64, bool) {
	var sum float64
	ok := scrapeMetrics(ctx, g, func(line string) { sum += processedIn(line) })
	return sum, ok
}

// processedIn is the value of a line of rackstream_process_records_total,
// else 0.
func processedIn(line string) float64 {
	rest, ok := strings.CutPrefix(line, "rackstream_process_records_total{")
	if !ok {
		return 0
	}
	_, v, ok := strings.Cut(rest, "} ")
	if !ok {
		return 0
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0
	}
	return f
}

// scrapeMetrics hands every line of every instance's /metrics page to fn;
// false when a page could not be read.
func scrapeMetrics(ctx context.Context, g *group, fn func(line string)) bool {
	ok := true
	for _, m := range g.instances {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url()+"/metrics", nil)
		if err != nil {
			ok = false
			continue
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ok = false
			continue
		}
		if resp.StatusCode != http.StatusOK {
			ok = false
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			fn(sc.Text())
		}
		resp.Body.Close()
	}
	return ok
}

// add counts one line of a Prometheus text page, if it is of c's
// histogram; series of several tasks (a task label) add up.
func (c *commitCounts) add(line string) {
	rest, ok := strings.CutPrefix(line, c.name)
	if !ok {
		return
	}
	i := strings.IndexAny(rest, "{ ")
	if i < 0 {
		return
	}
	suffix, labels, value := rest[:i], "", rest[i+1:]
	if rest[i] == '{' {
		if labels, value, ok = strings.Cut(value, "} "); !ok {
			return
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil {
		return
	}
	switch suffix {
	case "_sum":
		c.seconds += v
	case "_count":
		c.n += v
	case "_bucket":
		_, le, ok := strings.Cut(labels, `le="`)
		if !ok {
			return
		}
		le, _, _ = strings.Cut(le, `"`)
		if b, err := strconv.ParseFloat(le, 64); err == nil {
			c.buckets[b] += v
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
	return fmt.Sprintf("%.0f, %v, %s", c.n, time.Duration(c.seconds/c.n*float64(time.Second)).Round(100*time.Microsecond), c.under(1))
}

// under is the smallest bucket bound at least the fraction q of the
// observations stayed under: a quantile's upper bound, as exact as the
// buckets.
func (c commitCounts) under(q float64) string {
	bound := math.Inf(1)
	for le, v := range c.buckets {
		if v >= q*c.n && le < bound {
			bound = le
		}
	}
	if math.IsInf(bound, 1) {
		return "+Inf"
	}
	return time.Duration(bound * float64(time.Second)).String()
}
