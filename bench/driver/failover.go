package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/partition"
)

// freshness measures how long a record takes from the producer to an
// answer over HTTP: probes with new keys, one every probeEvery, each polled
// at the first instance until its count is there.
//
// interval is the instances' commit.interval.ms; row is the row's name
// (freshRow, or freshDefaultRow for the pass at the default interval).
func (d *driver) freshness(ctx context.Context, sec *section, g *group, cl *kgo.Client, load *producer, input string, rate float64, half string, interval time.Duration, row string, dur time.Duration) {
	const probeEvery, pollEvery = 25 * time.Millisecond, 5 * time.Millisecond
	a := g.instances[0]
	limit := 3*d.cfg.commitInterval + 30*time.Second
	var (
		mu     sync.Mutex // guards probes and the probes' ack, part and lat
		probes []*probe
		wg     sync.WaitGroup
	)
	d.logf("freshness: %s records/s of load, probes for %v, commit.interval.ms=%d", thousands(rate), dur, interval.Milliseconds())
	commits0, pauses0, e2e0 := commitStats(ctx, g)
	acks0 := load.ackCounts()
	traced := func() {}
	if row == freshRow {
		traced = d.traceInstances(ctx, g, d.cfg.traceDir, row)
	}
	// The row at the section's interval probes in d.cfg.freshWindows
	// windows of dur, one after another: its figure is the median of their
	// p99s (results.md's rule for every figure, and one window's p99, its
	// eleventh-slowest probe, moved 54-119 ms at one fixed load, run to
	// run: docs/lab/freshness.md).
	windows := 1
	if row == freshRow {
		windows = max(1, d.cfg.freshWindows)
	}
	var windowP99 []time.Duration
	n := 0
	for w := range windows {
		first := len(probes)
		end := time.Now().Add(dur)
		for ; time.Now().Before(end); n++ {
			key := "fresh-" + strconv.Itoa(n) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			sent := time.Now()
			pr := &probe{sent: sent}
			mu.Lock()
			probes = append(probes, pr)
			mu.Unlock()
			cl.Produce(ctx, &kgo.Record{Topic: input, Key: []byte(key), Value: []byte("probe")}, func(r *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					pr.ack, pr.part = time.Since(sent), r.Partition
					mu.Unlock()
				}
			})
			wg.Add(1)
			go func() {
				defer wg.Done()
				u := a.url() + "/v1/stores/count/keys/" + key
				for time.Since(sent) < limit {
					if code, err := getJSON(ctx, u, nil); err == nil && code == 200 {
						mu.Lock()
						pr.lat = time.Since(sent)
						mu.Unlock()
						return
					}
					time.Sleep(pollEvery)
				}
			}()
			time.Sleep(probeEvery)
		}
		wg.Wait() // every probe of the window seen or given up on
		mu.Lock()
		wl := seenLatencies(probes[first:])
		mu.Unlock()
		if len(wl) > 0 {
			windowP99 = append(windowP99, percentile(wl, 99))
		}
		if len(wl) > 0 && windows > 1 {
			d.logf("freshness: window %d/%d: p99 %v of %d probes", w+1, windows, windowP99[len(windowP99)-1].Round(time.Millisecond), len(wl))
		}
	}
	traced()
	mu.Lock() // a probe's acknowledgement may still come in
	d.logf("freshness: the slowest probes: %s", slowest(probes, 12))
	lat := seenLatencies(probes)
	var acks []time.Duration // of the probes acknowledged
	for _, p := range probes {
		if p.ack > 0 {
			acks = append(acks, p.ack)
		}
	}
	mu.Unlock()
	unseen := len(probes) - len(lat)
	commitsNow, pausesNow, e2eNow := commitStats(ctx, g)
	commits, pauses, e2e := commitsNow.minus(commits0), pausesNow.minus(pauses0), e2eNow.minus(e2e0)
	loadAcks := load.ackCounts().minus(acks0)
	slices.Sort(acks)
	title := "End-to-end freshness"
	if row == freshDefaultRow {
		title += fmt.Sprintf(" at the default commit.interval.ms (%d)", interval.Milliseconds())
	}
	sec.printf("### %s\n\nUnder a load of %s records/s (%s; produced by the driver, random keys among %s, for %v before the first probe), a probe record with a new key every %v, from a producer of its own with no linger; each probe's "+
		"key is polled every %v at instance %s (which forwards when another owns it) until its count answers: the time from "+
		"the produce call to that answer. The read is at the default isolation, latest (at-least-once): the task's latest processed "+
		"state, its record cache and write buffer over LevelDB, so the commit interval (%v) does not bound it; what remains is the "+
		"produce, the fetch, the task's queue (how far processing is behind the load) and the HTTP hop.\n\n",
		title, thousands(rate), half, thousands(float64(d.cfg.countKeys)), d.cfg.freshWarm, probeEvery, pollEvery, a.name, interval)
	if len(lat) == 0 {
		sec.missing(row, fmt.Sprintf("none of %d probes was visible over HTTP within %v", unseen, limit))
		return
	}
	p50, pooled := percentile(lat, 50), percentile(lat, 99)
	p99, windowsNote := windowsMedian(windowP99, pooled, dur)
	d.logf("freshness: p90 %v, p99 %v, max %v of %d probes; load processed after its timestamp p50, p90, p99, p99.9 under %s, %s, %s, %s; "+
		"load acknowledged p50, p90, p99, p99.9 under %s, %s, %s, %s",
		percentile(lat, 90).Round(time.Millisecond), pooled.Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), len(lat),
		e2e.under(0.5), e2e.under(0.9), e2e.under(0.99), e2e.under(0.999),
		loadAcks.under(0.5), loadAcks.under(0.9), loadAcks.under(0.99), loadAcks.under(0.999))
	a50, a99 := percentile(acks, 50), percentile(acks, 99)
	processed, acked := "-", "-"
	if e2e.n > 0 {
		processed = fmt.Sprintf("%s, %s", e2e.under(0.5), e2e.under(0.99))
	}
	if loadAcks.n > 0 {
		acked = fmt.Sprintf("%s, %s", loadAcks.under(0.5), loadAcks.under(0.99))
	}
	sec.printf("| probes seen | not seen within %v | p50 | p99 | p99 / commit.interval.ms | produce acknowledged p50, p99 | load acknowledged, p50, p99 under | load processed after its timestamp, p50, p99 under | commits, mean, all under | task pauses, mean, all under |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n| %d | %d | %v | %v | %.2f | %v, %v | %s | %s | %s | %s |\n\n",
		limit, len(lat), unseen, p50.Round(time.Millisecond), p99.Round(time.Millisecond), p99.Seconds()/interval.Seconds(),
		a50.Round(time.Millisecond), a99.Round(time.Millisecond), acked, processed, commits, pauses)
	sec.printf("%s", windowsNote)
	sec.printf("The probe's produce acknowledgement is part of its freshness (the probe is processed once fetched, which follows the broker's " +
		"append). The load's records processed after their timestamps is every instance's `rackstream_record_e2e_latency_seconds` during " +
		"the probes (one record in 16, from its producer's timestamp to the end of its processing; bounded by the histogram's buckets, " +
		"powers of two from 1 ms): the part of the freshness before the HTTP read; the load acknowledged is the driver's own count of the " +
		"same records from its produce call to the broker's acknowledgement, in the same buckets: the part of that which is the " +
		"producer's and the broker's, not the instances'. The commits are every instance's during the probes (`rackstream_commit_latency_seconds`: the tasks' cuts, the wait for " +
		"the records produced before them, the stores' LevelDB batches, the offset commit), the task pauses what those commits held each " +
		"task for between two records (`rackstream_commit_pause_seconds`: its cut, the record cache written through and the stores' " +
		"buffers frozen); for each, the count, the mean and the smallest histogram bucket bound all of them stayed under.\n\n")
	sec.filled(row)
	r := p99.Seconds() / interval.Seconds()
	name := fmt.Sprintf("freshness p99 <= 1/10 of commit.interval.ms at half load, commit.interval.ms=%d", interval.Milliseconds())
	if row == freshDefaultRow {
		name += " (the default)"
	}
	d.targets = append(d.targets, target{name: name, binding: true,
		want: "<= 0.10", measured: fmt.Sprintf("%.2f (p99 %v, interval %v)", r, p99.Round(time.Millisecond), interval), met: metVerdict(r, 0.10, false), inTheWay: inTheWayFreshness})
}

// failover stops the owner of a task under load, by kill -9 and then (after
// restarting it) by SIGTERM, and times what the task's users see.
func (d *driver) failover(ctx context.Context, sec *section, g *group, adm *kadm.Client, app, input string, keys int, session time.Duration) {
	sec.printf("### Failover\n\nUnder the same load, the owner of a task (not the instance the driver asks) is stopped; from the "+
		"signal, every 10 ms: the group's committed offset of the task's input partition (**first committed update**: above the "+
		"offset committed when the owner had gone, so made by the new owner), and a lookup of a key of that task at another "+
		"instance (**first answer**: any 200 not served by the stopped instance, a standby's included; **first active answer**: "+
		"role `active`, from the new owner). `session.timeout.ms=%d`: a killed member is noticed when it expires. "+
		"After the kill the instance is restarted (same state directory) and, before each stop, the group is settled with no warmup replica and the same generation for 3 commit intervals.\n\n", session.Milliseconds())
	sec.printf("| stop | owner exited after | first committed update | first answer | first active answer | exit |\n|---|---:|---:|---:|---:|---|\n")
	var killCommit, termCommit time.Duration
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		name := "failover, kill -9 of a task's owner"
		if sig == syscall.SIGTERM {
			name = "failover, SIGTERM of a task's owner"
		}
		d.logf("failover: %s of a task's owner", sigName(sig))
		res, err := d.stopOwner(ctx, g, adm, app, input, keys, sig)
		if err != nil {
			sec.printf("| %s | - | - | - | - | - |\n", sig)
			sec.missing(name, err.Error())
			continue
		}
		sec.printf("| %s (%s, task %d) | %s | %s | %s | %s | %s |\n", sigName(sig), res.owner, res.task, dur(res.exited), dur(res.commit), dur(res.answer), dur(res.active), res.exit)
		sec.filled(name)
		if sig == syscall.SIGKILL {
			killCommit = res.commit
		} else {
			termCommit = res.commit
		}
		// Bring it back for the next stop (and so that every instance
		// ends with a clean SIGTERM).
		if err := g.start(res.member); err != nil {
			sec.printf("\n- restarting %s failed: %v\n", res.owner, err)
			break
		}
		if _, err := g.settled(ctx, true, 3*time.Minute); err != nil {
			sec.printf("\n- after restarting %s: %v\n", res.owner, err)
			break
		}
	}
	sec.printf("\n")
	d.targets = append(d.targets,
		target{name: "kill -9 to the first committed update <= session timeout + 1 s", want: "<= " + dur(session+time.Second),
			measured: dur(killCommit), met: durVerdict(killCommit, session+time.Second), inTheWay: inTheWayKill},
		target{name: "clean SIGTERM to the first committed update < 2 s", want: "< 2 s",
			measured: dur(termCommit), met: durVerdict(termCommit, 2*time.Second), inTheWay: inTheWaySIGTERM},
	)
}

type stopResult struct {
	member                         *member
	owner                          string
	task                           int32
	exited, commit, answer, active time.Duration
	exit                           string
}

func (d *driver) stopOwner(ctx context.Context, g *group, adm *kadm.Client, app, input string, keys int, sig syscall.Signal) (stopResult, error) {
	md, err := g.quiet(ctx, 3*d.cfg.commitInterval, 3*time.Minute)
	if err != nil {
		return stopResult{}, err
	}
	asker := g.instances[0]
	askerID := asker.idNow()
	var victim *member
	var task int32 = -1
	for _, t := range md.Tasks {
		if t.Active != askerID {
			if m := g.byID(t.Active); m != nil {
				victim, task = m, t.Task
				break
			}
		}
	}
	if victim == nil {
		return stopResult{}, fmt.Errorf("no task owned by an instance other than %s in generation %d", asker.name, md.Generation)
	}
	victimID := victim.idNow()
	p := partition.Murmur2()
	key := ""
	for i := range keys {
		k := "key-" + strconv.Itoa(i)
		if p.Partition([]byte(k), 12) == task {
			key = k
			break
		}
	}
	if key == "" {
		return stopResult{}, fmt.Errorf("none of the %d lookup keys falls in task %d", keys, task)
	}
	res := stopResult{member: victim, owner: victim.name, task: task}
	w := stop(adm, app, input, task, victim, sig)
	start := w.start
	d.logf("failover: %s to %s (task %d) at %s UTC", sigName(sig), victim.name, task, start.UTC().Format("15:04:05.000"))
	u := asker.url() + "/v1/stores/count/keys/" + key
	for deadline := start.Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := w.step(ctx, &res); err != nil {
			return res, err
		}
		now := time.Since(start)
		if res.answer == 0 || res.active == 0 {
			var ans keyAnswer
			if code, err := getJSON(ctx, u, &ans); err == nil && code == 200 && ans.ServedBy != victimID {
				if res.answer == 0 {
					res.answer = now
				}
				if res.active == 0 && ans.Role == "active" {
					res.active = now
				}
			}
		}
		if res.exited > 0 && res.commit > 0 && res.active > 0 {
			_, _, exits := victim.usage()
			res.exit = exits[len(exits)-1]
			return res, nil
		}
	}
	return res, fmt.Errorf("after %v of %s to %s (task %d): exited %v, committed %v, answer %v, active answer %v; its log ends: %s",
		3*time.Minute, sigName(sig), victim.name, task, res.exited, res.commit, res.answer, res.active, victim.logTail())
}

func sigName(s syscall.Signal) string {
	if s == syscall.SIGKILL {
		return "kill -9"
	}
	return "SIGTERM"
}

func dur(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func durVerdict(got, bound time.Duration) string {
	if got <= 0 {
		return "-"
	}
	if got <= bound {
		return "yes"
	}
	return metNo
}

// stopWatch follows a stopped owner: when its process exits, and then when
// the group first commits the task's input partition past the offset
// committed at that moment (an update made by the new owner).
type stopWatch struct {
	adm          *kadm.Client
	group, topic string
	task         int32
	start        time.Time
	exited       chan error
	base         int64
}

// stop signals victim and starts watching.
func stop(adm *kadm.Client, group, topic string, task int32, victim *member, sig syscall.Signal) *stopWatch {
	w := &stopWatch{adm: adm, group: group, topic: topic, task: task, start: time.Now(), exited: make(chan error, 1), base: -1}
	go func() { w.exited <- victim.signal(sig, 60*time.Second) }()
	return w
}

// step records into res what has happened since the last step.
func (w *stopWatch) step(ctx context.Context, res *stopResult) error {
	if res.exited == 0 {
		select {
		case err := <-w.exited:
			if err != nil {
				return err
			}
			res.exited = time.Since(w.start)
			w.base = committedOf(ctx, w.adm, w.group, w.topic, w.task)
		default:
		}
	}
	if w.base >= 0 && res.commit == 0 {
		if c := committedOf(ctx, w.adm, w.group, w.topic, w.task); c > w.base {
			res.commit = time.Since(w.start)
		}
	}
	return nil
}

// seenLatencies returns, sorted, the freshness of the probes that were
// seen.
func seenLatencies(probes []*probe) []time.Duration {
	var lat []time.Duration
	for _, p := range probes {
		if p.lat > 0 {
			lat = append(lat, p.lat)
		}
	}
	slices.Sort(lat)
	return lat
}

// windowsMedian returns the freshness row's p99, the median of its
// windows' p99s (with one window, the p99 of all its probes: pooled), and
// a line saying how it came about.
func windowsMedian(windows []time.Duration, pooled, each time.Duration) (time.Duration, string) {
	if len(windows) < 2 {
		return pooled, ""
	}
	xs := make([]float64, len(windows))
	ws := make([]string, len(windows))
	for i, w := range windows {
		xs[i] = float64(w)
		ws[i] = w.Round(time.Millisecond).String()
	}
	m := time.Duration(median(xs))
	return m, fmt.Sprintf("The p99 is the median of the p99s of %d windows of probes of %v each, one after another: %s (the p99 of all their probes at once: %v).\n\n",
		len(windows), each, strings.Join(ws, ", "), pooled.Round(time.Millisecond))
}

// probe is one freshness probe: when it was produced, to which partition
// (task), how long its acknowledgement and its answer over HTTP took (0:
// never, or not within the limit).
type probe struct {
	sent     time.Time
	part     int32
	ack, lat time.Duration
}

// slowest describes the n probes whose answers took longest, slowest
// first: when each was sent, its freshness, its acknowledgement and its
// partition. Probes slow together at one moment on every partition point at
// the cluster (the instances' commits aligned, say);
// apart, at a task.
func slowest(probes []*probe, n int) string {
	sorted := slices.Clone(probes)
	slices.SortFunc(sorted, func(a, b *probe) int { return cmp.Compare(b.lat, a.lat) })
	var sb strings.Builder
	for i, p := range sorted[:min(n, len(sorted))] {
		if i > 0 {
			sb.WriteString("; ")
		}
		fmt.Fprintf(&sb, "%s %v (ack %v, partition %d)", p.sent.Format("15:04:05.000"), p.lat.Round(time.Millisecond), p.ack.Round(time.Millisecond), p.part)
	}
	return sb.String()
}
