package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// clusterSection runs three `rackstream run` instances of the built-in
// count (num.standby.replicas=1) on broker b and measures, in one life of
// the group: key lookups against a bare handler, freshness under load,
// and failover by kill -9 and by SIGTERM under the same load.
func (d *driver) clusterSection(ctx context.Context, b broker, counted countOutcome) *section {
	countRate := counted.rackstreamRate
	cfg := d.cfg
	sec := newSection("Three `rackstream run` instances on " + b.title + ": queries, freshness, failover")
	rows := []string{"local lookups", "forwarded lookups", "bare net/http handler", freshRow, freshDefaultRow,
		"failover, kill -9 of a task's owner", "failover, SIGTERM of a task's owner",
		"goka v1.1.13 hot standby, kill -9 of a partition's owner", "goka v1.1.13 hot standby, SIGTERM of a partition's owner"}
	// -sections freshness: the cluster with its freshness row alone, to
	// measure a change to the read path without the whole section.
	freshOnly := !d.cfg.wants("cluster") && !d.cfg.wants("failover")
	if freshOnly {
		rows = []string{freshRow, freshDefaultRow}
	}
	// -sections failover: the cluster with its two failover rows alone, the
	// instances logging at debug level (failover_only.go).
	failOnly := !d.cfg.wants("cluster") && d.cfg.wants("failover")
	if failOnly {
		rows = failoverRows
	}
	fail := func(why string) *section {
		for _, r := range rows {
			sec.missing(r, why)
		}
		return sec
	}
	brokers := b.brokers
	var brokerProfiles string
	if b.kind == "kfake" {
		// One kfake for several processes, in a process of its own
		// (bench/kfakebroker, which says why).
		fk, err := startKfake(ctx, d.bins["kfakebroker"], filepath.Join(d.work, "kfakebroker.log"), cfg.traceDir != "")
		if err != nil {
			return fail(err.Error())
		}
		defer fk.stop()
		brokers, brokerProfiles = fk.addrs, fk.profiles
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(200_000))
	if err != nil {
		return fail(fmt.Sprintf("kafka client: %v", err))
	}
	defer cl.Close()
	// The freshness probes' own producer: no linger, so that a probe, alone
	// in its client, leaves at its produce call rather than up to a linger
	// later (franz-go's default is 10 ms, Kafka's 5 ms): what the probes
	// measure is the path through the cluster, not a producer's batching.
	probes, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(0))
	if err != nil {
		return fail(fmt.Sprintf("kafka client: %v", err))
	}
	defer probes.Close()
	adm := kadm.NewClient(cl)
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	app := "bench-cluster-" + suffix
	input, output := app+"-in", app+"-out"
	for _, t := range []string{input, output} {
		if r, err := adm.CreateTopic(ctx, 12, 1, nil, t); err != nil || r.Err != nil {
			return fail(fmt.Sprintf("create topic %s: %v %v", t, err, r.Err))
		}
	}
	if err := waitTopics(ctx, adm, time.Minute, input, output); err != nil {
		return fail(err.Error())
	}
	if b.kind == "kafka" {
		defer func() {
			_, _ = adm.DeleteTopics(context.Background(), input, output, app+"-count-changelog", app+"-dlq", app+"-placement")
			_, _ = adm.DeleteGroup(context.Background(), app)
		}()
	}
	session := cfg.sessionTimeout
	g, err := newGroup(d.bins["rackstream"], filepath.Join(d.work, "cluster-"+b.kind), map[string]string{
		"application.id":         app,
		"bootstrap.servers":      strings.Join(brokers, ","),
		"processor.type":         "count",
		"processor.input.topic":  input,
		"processor.output.topic": output,
		"num.standby.replicas":   "1",
		"commit.interval.ms":     strconv.FormatInt(cfg.commitInterval.Milliseconds(), 10),
		"session.timeout.ms":     strconv.FormatInt(session.Milliseconds(), 10),
		"shutdown.timeout.ms":    "20000",
		"log.format":             "json",
		"log.level":              clusterLogLevel(failOnly),
		"http.pprof":             strconv.FormatBool(cfg.traceDir != ""),
	}, 3)
	if err != nil {
		return fail(err.Error())
	}
	var extra []string // -instance-set, said in the section
	for _, k := range sortedKeys(cfg.instanceSet) {
		if g.set == nil {
			g.set = map[string]string{}
		}
		g.set[k] = cfg.instanceSet[k]
		extra = append(extra, "`"+k+"="+cfg.instanceSet[k]+"`")
	}
	g.brokerProfiles = brokerProfiles
	defer g.stopAll()
	for _, m := range g.instances {
		if err := g.start(m); err != nil {
			return fail(err.Error())
		}
	}
	d.logf("cluster on %s: 3 instances started, waiting for a settled placement with standbys", b.kind)
	if _, err := g.settled(ctx, true, 3*time.Minute); err != nil {
		return fail(fmt.Sprintf("%v; the first instance's log ends: %s", err, g.instances[0].logTail()))
	}

	// The keys the lookups read, each counted once.
	keys := cfg.queryKeys
	for i := range keys {
		cl.Produce(ctx, &kgo.Record{Topic: input, Key: []byte("key-" + strconv.Itoa(i)), Value: make([]byte, 100)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return fail(fmt.Sprintf("produce the lookup keys: %v", err))
	}
	var produced int64 = int64(keys)
	if err := waitCommitted(ctx, adm, app, input, 2*time.Minute); err != nil {
		return fail(err.Error())
	}
	sec.printf("Built-in count (`processor.type=count`, output topic on), 12 partitions, `num.standby.replicas=1`, "+
		"`commit.interval.ms=%d`, **`session.timeout.ms=%d`**, each instance its own process with its own state directory "+
		"and HTTP port on loopback. %s\n\n", cfg.commitInterval.Milliseconds(), session.Milliseconds(), b.clusterNote())
	if len(extra) > 0 {
		sec.printf("**The instances also ran with %s** (`-instance-set`).\n\n", strings.Join(extra, ", "))
	}

	if !freshOnly && !failOnly {
		d.queries(ctx, sec, g, keys)
	}

	pcl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(500_000))
	if err != nil {
		return fail(fmt.Sprintf("kafka client: %v", err))
	}
	defer pcl.Close()
	d.logf("cluster on %s: maximum throughput, a backlog of %s records", b.kind, thousands(float64(cfg.clusterBacklog)))
	processed := func(ctx context.Context) (float64, bool) { return processedSum(ctx, g) }
	cm, cmErr := measureClusterMax(ctx, adm, app, pcl, input, processed, cfg.countKeys, cfg.clusterBacklog, cfg.clusterDrain, 3*time.Minute)
	produced += int64(cm.backlog + cm.firstBacklog)
	if err := waitCommitted(ctx, adm, app, input, 3*time.Minute); err != nil {
		return fail(err.Error())
	}
	var sus sustained
	susErr := cmErr
	if cmErr == nil && cfg.loadRate == 0 {
		from := max(cm.rate, cm.whole)
		d.logf("cluster on %s: sustained maximum, from %s records/s", b.kind, thousands(from))
		sus, susErr = sustainedMax(ctx, adm, app, pcl, input, processed, cfg.countKeys, from, cfg.sustainWarm, cfg.sustainWindow)
		produced += sus.total
		d.logf("cluster on %s: sustained %s (%v)", b.kind, sus, susErr)
	}
	rate, how := d.halfLoad(sec, cm, cmErr, sus, susErr, countRate)
	load := startLoad(pcl, input, cfg.countKeys, rate)
	if !failOnly {
		// The steady state, not the wake of the maximum's millions of
		// records (LevelDB compacting them, standbys catching up): a probe
		// run that started at once saw p99 753 ms where the same cluster
		// later measured 137-284 ms.
		d.logf("freshness: %s records/s of load for %v before the probes", thousands(rate), cfg.freshWarm)
		time.Sleep(cfg.freshWarm) // the load's own pace: not a synchronisation
		d.freshness(ctx, sec, g, probes, load, input, rate, how, cfg.commitInterval, freshRow, cfg.freshDuration)
	} else {
		warmUp(d, rate)
	}
	if !freshOnly {
		d.failover(ctx, sec, g, adm, app, input, keys, session)
	}
	load.halt()
	produced += load.produced.Load()
	if n := load.failed.Load(); n > 0 {
		sec.printf("- %d records of the load failed to produce.\n", n)
	}
	if !failOnly {
		produced += d.freshAtDefault(ctx, sec, g, probes, pcl, input, rate, how)
	}
	g.stopAll()

	sec.printf("\nEvery instance's processes (all lives together), over the %s input records this section produced:\n\n", thousands(float64(produced)))
	g.usageTable(sec, produced)
	sec.printf("\nCPU per million records here divides each instance's CPU by all the input records (the three share them); " +
		"it includes serving the lookups, restores after restarts and the standbys' tailing.\n")
	gokaRate := counted.gokaRate / 2
	if gokaRate <= 0 {
		gokaRate = cfg.fallbackRate
	}
	if !freshOnly && !failOnly {
		d.gokaFailover(ctx, sec, b.kind, brokers, gokaRate, session)
	}
	return sec
}

// usageTable writes every member's CPU and peak RSS over all its lives.
func (g *group) usageTable(sec *section, records int64) {
	sec.printf("| instance | lives (how each ended) | CPU s | CPU s per 1M input records | peak RSS, MB |\n|---|---|---:|---:|---:|\n")
	for _, m := range g.instances {
		cpu, peak, exits := m.usage()
		sec.printf("| %s | %s | %.1f | %.2f | %.0f |\n", m.name, strings.Join(exits, "; "), cpu.Seconds(),
			cpu.Seconds()*1e6/float64(max(records, 1)), float64(peak)/1e6)
	}
}

// waitTopics waits until the broker's metadata shows every partition of
// topics with a leader: a real broker answers a creation before its
// metadata has the topic, and an instance started in that gap exits.
func waitTopics(ctx context.Context, adm *kadm.Client, within time.Duration, topics ...string) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		td, err := adm.ListTopics(ctx, topics...)
		ok := err == nil
		for _, t := range topics {
			d, found := td[t]
			if !found || d.Err != nil || len(d.Partitions) == 0 {
				ok = false
				break
			}
			for _, p := range d.Partitions {
				if p.Leader < 0 || p.Err != nil {
					ok = false
				}
			}
		}
		if ok {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("topics %v not in the broker's metadata with leaders within %v", topics, within)
}

// waitCommitted waits until group's committed offsets on topic reach its
// end offsets.
func waitCommitted(ctx context.Context, adm *kadm.Client, group, topic string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ends, err1 := adm.ListEndOffsets(ctx, topic)
		committed, err2 := adm.FetchOffsets(ctx, group)
		if err1 == nil && err2 == nil {
			done := true
			ends.Each(func(o kadm.ListedOffset) {
				if c, ok := committed.Lookup(o.Topic, o.Partition); o.Offset > 0 && (!ok || c.At < o.Offset) {
					done = false
				}
			})
			if done {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("group %s did not commit the end of %s within %v", group, topic, within)
}

// keyAnswer is the part of a key lookup's answer the driver reads.
type keyAnswer struct {
	Value    json.RawMessage `json:"value"`
	Task     int32           `json:"task"`
	ServedBy string          `json:"served_by"`
	Role     string          `json:"role"`
}

// queries measures lookups answered by the instance asked (local) and
// forwarded to the owner, beside the bare handler, interleaved.
func (d *driver) queries(ctx context.Context, sec *section, g *group, keys int) {
	a := g.instances[0]
	self := a.idNow()
	var local, remote []string
	var body []byte
	for i := 0; i < keys && (len(local) < 200 || len(remote) < 200); i++ {
		u := a.url() + "/v1/stores/count/keys/key-" + strconv.Itoa(i)
		var ans keyAnswer
		if code, err := getJSON(ctx, u, &ans); err != nil || code != 200 {
			continue
		}
		if ans.ServedBy == self {
			local = append(local, u)
			if body == nil {
				raw, _ := json.Marshal(ans)
				body = raw
			}
		} else {
			remote = append(remote, u)
		}
	}
	rows := []string{"local lookups", "forwarded lookups", "bare net/http handler"}
	if len(local) == 0 || len(remote) == 0 {
		for _, r := range rows {
			sec.missing(r, fmt.Sprintf("of %d keys asked at %s, %d were answered locally and %d forwarded: need both", keys, a.name, len(local), len(remote)))
		}
		return
	}
	// The bare handler answers the bytes of a real local answer.
	if raw, code := rawGet(ctx, local[0]); code == 200 {
		body = raw
	}
	br, err := startBare(ctx, d.work, body)
	if err != nil {
		for _, r := range rows {
			sec.missing(r, err.Error())
		}
		return
	}
	bareURLs := []string{"http://" + br.addr + "/v1/stores/count/keys/key-0"}
	variants := []struct {
		name string
		urls []string
	}{{"bare net/http handler", bareURLs}, {"local lookups", local}, {"forwarded lookups", remote}}
	results := map[string][]loadResult{}
	for round := range d.cfg.rounds {
		for i := range variants {
			v := variants[(i+round)%len(variants)]
			d.logf("queries, round %d/%d: %s", round+1, d.cfg.rounds, v.name)
			results[v.name] = append(results[v.name], generate(ctx, v.urls, d.cfg.queryClients, d.cfg.queryDuration))
		}
	}
	bcpu, brss := br.stop()
	sec.printf("### Key lookups\n\nA Go load generator in the driver's process: %d goroutines, each with its keep-alive connection, "+
		"GETting `/v1/stores/count/keys/<key>` at instance %s round robin over %d keys it answers itself (local) and %d keys "+
		"it forwards to their owner (forwarded), and the same path at a bare `net/http` handler in its own process that "+
		"answers the %d bytes of a real local answer; %s per figure, %d rounds in rotating order. Ratios are of the "+
		"medians, to the bare handler measured in the same rounds (above 1 for latency = slower than bare).\n\n",
		d.cfg.queryClients, a.name, len(local), len(remote), len(body), d.cfg.queryDuration, d.cfg.rounds)
	sec.printf("| lookup | requests/s | p50, µs | p99, µs | errors | requests/s / bare | p50 / bare | p99 / bare |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	med := func(name string, f func(loadResult) float64) []float64 {
		var xs []float64
		for _, r := range results[name] {
			xs = append(xs, f(r))
		}
		return xs
	}
	rps := func(r loadResult) float64 { return r.rate() }
	p50 := func(r loadResult) float64 { return float64(r.p50.Microseconds()) }
	p99 := func(r loadResult) float64 { return float64(r.p99.Microseconds()) }
	ratios := map[string]float64{}
	for _, v := range variants {
		errs := 0
		for _, r := range results[v.name] {
			errs += r.errors
		}
		r1 := pairRatio(med(v.name, rps), med("bare net/http handler", rps))
		r2 := pairRatio(med(v.name, p50), med("bare net/http handler", p50))
		r3 := pairRatio(med(v.name, p99), med("bare net/http handler", p99))
		ratios[v.name] = r3
		sec.printf("| %s | %s | %s | %s | %d | %s | %s | %s |\n", v.name, thousands(median(med(v.name, rps))),
			thousands(median(med(v.name, p50))), thousands(median(med(v.name, p99))), errs, num("%.2f", r1), num("%.2f", r2), num("%.2f", r3))
		sec.filled(v.name)
	}
	sec.printf("\nThe bare handler's process: %.1f s CPU, peak RSS %.0f MB.\n\n", bcpu.Seconds(), float64(brss)/1e6)
	d.targets = append(d.targets,
		target{name: "local lookup p99 within 3x of the bare handler's", want: "<= 3", measured: num("%.2f", ratios["local lookups"]), met: metVerdict(ratios["local lookups"], 3, false), inTheWay: inTheWayLookups},
		target{name: "forwarded lookup p99 within 5x of the bare handler's", want: "<= 5", measured: num("%.2f", ratios["forwarded lookups"]), met: metVerdict(ratios["forwarded lookups"], 5, false), inTheWay: inTheWayLookups},
	)
}

// rawGet returns the body of a GET and its status.
func rawGet(ctx context.Context, url string) ([]byte, int) {
	var raw json.RawMessage
	code, err := getJSON(ctx, url, &raw)
	if err != nil {
		return nil, 0
	}
	return raw, code
}

// idNow is m's current process id as its /v1/metadata last said.
func (m *member) idNow() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id
}

// committedOf returns group's committed offset of partition p of topic, -1
// when none.
func committedOf(ctx context.Context, adm *kadm.Client, group, topic string, p int32) int64 {
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return -1
	}
	if c, ok := committed.Lookup(topic, p); ok {
		return c.At
	}
	return -1
}
