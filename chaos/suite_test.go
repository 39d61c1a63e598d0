package chaos

import (
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
)

// params size a scenario; short and long differ only in load and length.
type params struct {
	partitions int
	keys       int
	rate       float64       // records per second, all keys together
	readEvery  time.Duration // one read per reader every readEvery
	session    time.Duration // session.timeout.ms
	// settle is how many records each key gets between two faults, so
	// that every fault lands mid-stream.
	settle int
}

func paramsFor(mode string) params {
	p := params{partitions: 12, keys: 48, rate: 40, readEvery: 50 * time.Millisecond, session: 6 * time.Second, settle: 3}
	if mode == "long" {
		p.rate, p.readEvery, p.settle = 200, 25*time.Millisecond, 10
	}
	return p
}

const (
	// eosCommit is commit.interval.ms under exactly-once.
	eosCommit = 200 * time.Millisecond
	maxLag    = 10000 // the readers' max_lag: acceptable.recovery.lag's default
	// deadline bounds every wait; a loaded 2-core machine is slow.
	deadline = 3 * time.Minute
)

var zones, clusters = []string{"zone-a", "zone-b", "zone-c"}, []string{"cluster-1", "cluster-2"}

// setup is how a scenario's instances run.
type setup struct {
	// bin is the rackstream binary every instance runs (this tree's build
	// when empty).
	bin string
	// eos runs processing.guarantee=exactly_once_v2 with the built-in count
	// processor, for exact checks: every key's final count is the number of
	// its records, and the output (read committed) holds its counts 1..n
	// each exactly once, in order. Otherwise at-least-once with the latest
	// processor: the last value, and every number at least once.
	eos bool
	// windowed, with eos, counts per tumbling window with final results
	// only (windowed_test.go): the writer stamps its records as stamp
	// says, and the readers read the keys' windows.
	windowed bool
	// grouped, with eos, counts per value of a JSON field of the input's
	// values, re-keyed through a repartition topic
	// (repartition_test.go): the writer's values carry the field, and
	// the readers read the field's values.
	grouped bool
	// threeBrokers runs the scenario on the suite's three-broker cluster
	// (replication factor 3, min.insync.replicas=2, every instance
	// reaching each node through a proxy of its own) instead of the
	// single broker.
	threeBrokers bool
}

// run is one scenario: a group of six instances under load.
type run struct {
	t      *testing.T
	name   string
	eos    bool
	store  string // the processor's store: "latest", or "count" under eos
	p      params
	app    string
	input  string
	output string
	keys   []string
	// kafka is where the test's own clients connect; brokers is the
	// three-broker cluster, nil on the single broker.
	kafka   []string
	brokers *cluster.Brokers
	g       *cluster.Group
	ins     []*cluster.Instance
	prod    *cluster.Producer
	active  *cluster.AvailabilityProbe // reads actives only
	lagged  *cluster.AvailabilityProbe // reads with max_lag

	// brokerDown are the intervals in which the broker was down (scenario
	// 3), excused from the bound on reads from actives.
	brokerDown [][2]time.Time

	mu        sync.Mutex // guards recovered
	recovered time.Duration

	// field is the JSON field the count groups by (setup.grouped); ""
	// counts per input key.
	field string
}

// describe formats a reader's window for the log.
func describe(w cluster.Window) string {
	if w.Len() == 0 {
		return "none"
	}
	return fmt.Sprintf("%v for %s from %s", w.Len().Round(time.Millisecond), w.Key, w.From.Format("15:04:05.000"))
}

// needMode skips t unless the suite runs (EnvMode set) and, for long-only
// scenarios, in its long form.
func needMode(t *testing.T, long bool) {
	t.Helper()
	switch {
	case mode == "":
		t.Skipf("the fault suite runs with %s=short or long (make chaos, or make test's chaos suite)", EnvMode)
	case long && mode != "long":
		t.Skipf("long form only (%s=long, make chaos)", EnvMode)
	}
}

// beginWith starts a scenario as s says: topics, six instances ready with
// a whole placement, the producer and both readers running, some records
// in. An exactly-once scenario's name ends in "-eos".
func beginWith(t *testing.T, name string, s setup) *run {
	t.Helper()
	p := paramsFor(mode)
	kafka, rf := []string{broker.Addr}, 1
	var brokers *cluster.Brokers
	if s.threeBrokers {
		brokers = threeBrokers(t)
		kafka, rf = brokers.Addrs(), 3
	}
	k := kafkatest.At(t, kafka...)
	kind, commit := "latest", "500"
	if s.eos {
		// The count processor: a record processed twice or lost shows in
		// the count; latest would hide a replay. Exactly-once commits
		// every 100 ms by default; eosCommit keeps six transactional
		// producers light on a loaded machine.
		name += "-eos"
		kind, commit = "count", strconv.FormatInt(eosCommit.Milliseconds(), 10)
	}
	r := &run{t: t, name: name, eos: s.eos, store: kind, p: p, app: k.Name("chaos-" + name), keys: cluster.Keys(p.keys), kafka: kafka, brokers: brokers}
	r.input, r.output = r.app+"-in", r.app+"-out"
	for _, topic := range []string{r.input, r.output} {
		if brokers == nil {
			k.CreateTopic(topic, int32(p.partitions), nil)
		} else if err := brokers.CreateTopic(t.Context(), topic, int32(p.partitions), int16(rf), nil); err != nil {
			t.Fatal(err)
		}
	}
	if brokers != nil {
		waitTopicsOnEveryNode(t, brokers, p.partitions, r.input, r.output)
	}
	// Not t.TempDir: a failed scenario's instance logs and state stay for
	// a post-mortem (the path is logged); a passed one's are removed.
	dir, err := os.MkdirTemp("", "rackstream-chaos-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]string{
		"application.id":                r.app,
		"processor.type":                kind,
		"processor.input.topic":         r.input,
		"processor.output.topic":        r.output,
		"num.standby.replicas":          "2",
		"rack.aware.assignment.tags":    "zone,cluster",
		"statestore.cache.max.bytes":    "0",
		"commit.interval.ms":            commit,
		"session.timeout.ms":            strconv.FormatInt(p.session.Milliseconds(), 10),
		"shutdown.timeout.ms":           "15000",
		"probing.rebalance.interval.ms": "60000",
		"replication.factor":            strconv.Itoa(rf),
		"num.stream.threads":            "1",
		"log.format":                    "json",
	}
	if s.eos { // only then: an earlier build (scenario 7) may not know the key
		base["processing.guarantee"] = "exactly_once_v2"
	}
	if s.windowed {
		maps.Copy(base, windowKeys)
	}
	if s.grouped {
		maps.Copy(base, groupKeys)
		r.field = groupField
	}
	r.g = cluster.NewGroup(t, binary, dir, base)
	// Every connection of instance i passes a proxy: to each broker
	// through its own listener's (broker.Slots[i], or slot i of every
	// node), to its HTTP endpoint through one of its own, so that a
	// scenario can cut it off.
	port := cluster.LowFreePorts(t, 19600, 2*slots)
	for i := range slots {
		tags := map[string]string{"zone": zones[i%3], "cluster": clusters[i/3]}
		listen := "127.0.0.1:" + strconv.Itoa(port+i)
		in := r.g.Add(fmt.Sprintf("i%d-%s-%s", i, tags["zone"], tags["cluster"]), listen, tags)
		bootstrap, proxies := broker.Slots[i].Addr, []*cluster.Proxy{broker.Slots[i]}
		if brokers != nil {
			bootstrap, proxies = strings.Join(brokers.SlotAddrs(i), ","), nil
			for _, n := range brokers.Nodes {
				proxies = append(proxies, n.Slots[i])
			}
		}
		in.Set["bootstrap.servers"] = bootstrap
		hp, err := cluster.NewProxy("127.0.0.1:"+strconv.Itoa(port+slots+i), listen)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(hp.Close)
		in.Endpoint = hp.Addr
		in.Bin = s.bin
		in.Proxies = append(proxies, hp)
		r.ins = append(r.ins, in)
	}
	t.Cleanup(func() { // the broker's proxies outlive the scenario
		for _, in := range r.ins {
			in.Reconnect()
		}
	})
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
			return
		}
		for _, in := range r.ins {
			t.Logf("%s (tail):\n%s", in.Name, cluster.Tail(in.Logs(), 25))
		}
		t.Logf("the instances' whole logs (<name>.log) and state are kept in %s", dir)
	})
	for _, in := range r.ins {
		in.Start()
	}
	for _, in := range r.ins {
		in.WaitStarted(deadline)
		in.WaitReady(deadline)
	}
	r.waitWhole("the first placement")
	var opts []cluster.ProducerOption
	startReader := cluster.StartReader
	if s.windowed {
		opts = append(opts, cluster.Timestamps(stamp(len(r.keys))))
		startReader = cluster.StartWindowReader
	}
	probes := probeKeys(r.keys, p.partitions)
	if s.grouped {
		opts = append(opts, cluster.Values(groupedValue(len(r.keys))))
		probes = countries
	}
	r.prod = cluster.StartProducer(t, r.kafka, r.input, r.keys, p.rate, opts...)
	r.active = startReader(r.g, r.store, probes, -1, p.readEvery)
	r.lagged = startReader(r.g, r.store, probes, maxLag, p.readEvery)
	r.active.SetStrict(r.eos)
	r.lagged.SetStrict(r.eos)
	r.settle()
	return r
}

// probeKeys returns one key per task, for the readers.
func probeKeys(keys []string, partitions int) []string {
	byTask := map[int32]string{}
	for _, k := range keys {
		task := partition.Murmur2().Partition([]byte(k), int32(partitions))
		if _, ok := byTask[task]; !ok {
			byTask[task] = k
		}
	}
	out := make([]string, 0, len(byTask))
	for task := range int32(partitions) {
		if k, ok := byTask[task]; ok {
			out = append(out, k)
		}
	}
	return out
}

// settle waits until every key has p.settle more records acknowledged.
func (r *run) settle() {
	r.t.Helper()
	want := r.prod.Acked() + int64(r.p.settle*r.p.keys)
	kafkatest.Poll(r.t, deadline, 100*time.Millisecond, "load between faults", func() bool {
		return r.prod.Acked() >= want
	})
}

// waitWhole waits until the placement is whole on all six instances: every
// task with an active, no task repeating a tag value, no standby
// shortfall; and it checks that it was whole within one rebalance of the
// first generation in which all six were members again (a cooperative
// rebalance's follow-up round allowed), or within three of the last plan
// since then that deferred a move until a replica caught up (its probing
// rebalance and that one's follow-up; see wholeBy). The generation seen
// first may be the one from before the fault (after a broker outage the
// members still show it until they rejoin): unless it is whole already,
// only later generations count. It returns the generation.
func (r *run) waitWhole(what string) int32 {
	r.t.Helper()
	var (
		last      string
		first     int32 = -1 // the generation of the first answer
		firstFull int32 = -1 // the first later generation seen with every member
		md        cluster.Metadata
		err       error
	)
	start := time.Now()
	for {
		md, _, err = r.g.Metadata()
		if err == nil {
			if first < 0 {
				first = md.Generation
			}
			if last = md.WholeProblem(r.p.partitions, slots); last == "" {
				if firstFull < 0 {
					firstFull = md.Generation
				}
				break
			}
			if firstFull < 0 && md.Generation > first && len(md.Clients) == slots {
				firstFull = md.Generation
			}
		} else {
			last = err.Error()
		}
		if time.Since(start) > deadline {
			r.t.Fatalf("%s: placement not whole after %v: %s", what, deadline, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.t.Logf("%s: placement whole at generation %d after %v (all members back at generation %d)",
		what, md.Generation, time.Since(start).Round(time.Millisecond), firstFull)
	var deferring []int32
	for _, in := range r.ins {
		deferring = append(deferring, deferringGenerations(in.Logs())...)
	}
	limit, deferred := wholeBy(firstFull, md.Generation, deferring)
	switch {
	case md.Generation <= limit:
	case deferred < 0:
		r.t.Errorf("%s: placement whole only at generation %d, more than one rebalance after generation %d had every member (and no plan since deferred a move)", what, md.Generation, firstFull)
	default:
		r.t.Errorf("%s: placement whole only at generation %d, more than one rebalance after generation %d had every member and more than three after generation %d, the last plan that deferred a move", what, md.Generation, firstFull, deferred)
	}
	return md.Generation
}

// waitTakeover waits until the gone instances are no members and every
// task has an active among the others.
func (r *run) waitTakeover(gone ...*cluster.Instance) {
	r.t.Helper()
	ids := map[string]bool{}
	var names []string
	for _, in := range gone {
		ids[in.ID()] = true
		names = append(names, in.Name)
	}
	kafkatest.Poll(r.t, deadline, 200*time.Millisecond, "tasks of "+strings.Join(names, ", ")+" taken over", func() bool {
		md, _, err := r.g.Metadata()
		if err != nil || len(md.Tasks) != r.p.partitions {
			return false
		}
		for _, c := range md.Clients {
			if ids[c.ID] {
				return false
			}
		}
		for _, tk := range md.Tasks {
			if tk.Active == "" || ids[tk.Active] {
				return false
			}
		}
		return true
	})
}

// healed records that a fault ended at from: it waits until every instance
// is ready, the placement whole and every probe key read from an active
// since, and keeps the longest such recovery.
func (r *run) healed(from time.Time) {
	r.t.Helper()
	for _, in := range r.ins {
		in.WaitReady(deadline)
	}
	r.waitWhole(r.name + " after the fault")
	if r.active != nil { // nil before the load starts
		kafkatest.Poll(r.t, deadline, 100*time.Millisecond, "every probe key read from an active", func() bool {
			return r.active.AllReadSince(from)
		})
	}
	took := time.Since(from)
	r.mu.Lock()
	r.recovered = max(r.recovered, took)
	r.mu.Unlock()
}

// backAfterKill waits until the tasks of ins, just killed, are taken over
// and the load has moved on, then starts ins again and waits until the
// group has healed.
func (r *run) backAfterKill(ins ...*cluster.Instance) {
	r.t.Helper()
	r.waitTakeover(ins...)
	r.settle()
	back := time.Now()
	r.restart(ins...)
	r.healed(back)
}

// restart starts the instances again and waits for their start-up lines.
func (r *run) restart(ins ...*cluster.Instance) {
	r.t.Helper()
	for _, in := range ins {
		in.Start()
	}
	for _, in := range ins {
		in.WaitStarted(deadline)
	}
}

// zone returns the instances of a zone.
func (r *run) zone(z string) []*cluster.Instance {
	var out []*cluster.Instance
	for _, in := range r.ins {
		if in.Tags["zone"] == z {
			out = append(out, in)
		}
	}
	return out
}

// end stops the load and runs the end checks, then prints the scenario's
// line. activeBound is the longest a key may go unread from an active
// (r.activeBound() unless the scenario says otherwise). It returns
// what the readers measured, actives only and with max_lag, for a
// scenario's own bounds.
func (r *run) end(activeBound time.Duration) (act, lag cluster.ProbeReport) {
	t := r.t
	t.Helper()
	n := r.stopLoad()
	produced := n * len(r.keys)
	short := r.waitStore(n)
	act, lag = r.active.Stop(), r.lagged.Stop()

	// Every sequence number of every key in the output topic: read until
	// nothing is missing (outputs are flushed at commit points) or the
	// deadline passes. Under exactly-once, read committed: what a
	// downstream read_committed consumer sees.
	var (
		opts []kgo.Opt
		recs []cluster.Record
		seqs cluster.Sequences
	)
	if r.eos {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	start := time.Now()
	for {
		recs = cluster.ReadTopic(t, r.kafka, r.output, opts...)
		seqs = cluster.CheckSequences(recs, r.keys, n)
		if seqs.Lost == 0 || time.Since(start) > time.Minute {
			break
		}
		time.Sleep(time.Second)
	}
	if seqs.Lost != 0 {
		t.Errorf("%d sequence numbers never reached %s, e.g. %v", seqs.Lost, r.output, seqs.Missing)
	}
	if seqs.Garbage != 0 {
		t.Errorf("%d records in %s are no sequence number of a known key", seqs.Garbage, r.output)
	}
	if r.eos && (seqs.Duplicated != 0 || seqs.OutOfOrder != 0) {
		t.Errorf("exactly-once: %s holds %d duplicated counts and %d out of order (read committed); want each of 1..%d once, in order",
			r.output, seqs.Duplicated, seqs.OutOfOrder, n)
	}
	for _, k := range r.keys {
		if seqs.Last[k] != n {
			t.Errorf("%s: last record in the output is %d, want %d", k, seqs.Last[k], n)
			break
		}
	}
	if len(short) > 0 || seqs.Lost != 0 || r.eos && seqs.Duplicated+seqs.OutOfOrder != 0 {
		r.evidence(short, seqs, recs, r.wantEach(n))
	}
	t.Logf("%d records out of order in the output", seqs.OutOfOrder)
	r.finish(activeBound, act, lag, fmt.Sprintf("produced=%d lost=%d duplicated=%d", produced, seqs.Lost, seqs.Duplicated))
	return act, lag
}

// stopLoad stops the producer, checks that every instance runs and
// returns the last sequence number of every key.
func (r *run) stopLoad() int {
	t := r.t
	t.Helper()
	n, err := r.prod.Stop(deadline)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	t.Logf("produced %d records: sequence numbers 1..%d of %d keys", n*len(r.keys), n, len(r.keys))
	for _, in := range r.ins {
		if !in.Running() {
			t.Fatalf("%s is down at the end of the scenario", in.Name)
		}
	}
	return n
}

// finish runs the checks every scenario ends with, the bound on reads from
// actives (activeBound), no answer read backwards and no panic, and prints
// the scenario's line:
// its name, counts (the scenario's own figures, "name=value" separated
// by spaces), then the readers' and the recovery's figures.
func (r *run) finish(activeBound time.Duration, act, lag cluster.ProbeReport, counts string) {
	t := r.t
	t.Helper()
	// The bound holds while the broker is up: without it no group can
	// assign anything (the readers with max_lag show what is served then).
	if w := act.Excusing(r.brokerDown...); w.Len() > activeBound {
		t.Errorf("key %s could not be read from an active for %v (%s to %s, the broker up), longer than %v",
			w.Key, w.Len().Round(time.Millisecond), w.From.Format("15:04:05.000"), w.To.Format("15:04:05.000"), activeBound)
	}
	backwards := append(act.Backwards, lag.Backwards...)
	for i, b := range backwards {
		if i == 5 {
			t.Errorf("... %d answers read backwards in all", len(backwards))
			break
		}
		t.Errorf("key %s read backwards at %s: value %d after %d, position %d (min_position %d), served by %s as %s",
			b.Key, b.At.Format("15:04:05.000"), b.Value, b.Max, b.Position, b.MinPosition, b.ServedBy, b.Role)
	}
	for name, lines := range r.g.Panics() {
		t.Errorf("%s panicked: %s", name, strings.Join(lines, " | "))
	}
	line := fmt.Sprintf("scenario=%s %s backwards=%d replayed=%d unavailable_max=%.1fs unavailable_max_lag=%.1fs recovered_in=%.1fs",
		r.name, counts, len(backwards), act.Replayed+lag.Replayed, act.MaxUnavailable().Seconds(), lag.MaxUnavailable().Seconds(), r.recovered.Seconds())
	t.Logf("readers: actives only %d reads, failed %v, longest %s; with max_lag=%d %d reads, failed %v, longest %s",
		act.Reads, act.Causes, describe(act.Worst), maxLag, lag.Reads, lag.Causes, describe(lag.Worst))
	t.Log(line)
	fmt.Println(line) // go test -v passes it through: make chaos greps these lines
}
