package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/partition"
)

// gokaFailover is the failover rows' goka side: three gokacount processes
// (bench/goka's count with goka.WithHotStandby) under load, the owner of a
// partition stopped by kill -9 and then SIGTERM, timed like Rackstream's.
func (d *driver) gokaFailover(ctx context.Context, sec *section, kind string, brokers []string, rate float64, session time.Duration) {
	rows := []string{"goka v1.1.13 hot standby, kill -9 of a partition's owner", "goka v1.1.13 hot standby, SIGTERM of a partition's owner"}
	fail := func(why string) {
		for _, r := range rows {
			sec.missing(r, why)
		}
	}
	switch {
	case d.cfg.smoke:
		sec.printf("\n")
		fail("Not run in the smoke run (-smoke): goka's rebalances take minutes here; `make bench` runs it on the real broker.")
		return
	case kind != "kafka":
		sec.printf("\n")
		fail("Run on the real broker only: goka's failover takes minutes per broker, and sarama's group on kfake is the less telling one.")
		return
	}
	fnv := partition.FNV1a()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(partition.Kgo(fnv)),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(500_000))
	if err != nil {
		fail(fmt.Sprintf("kafka client: %v", err))
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	name := "bench-goka-failover-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	input, table := name+"-in", name+"-table"
	compact := "compact"
	for _, t := range []struct {
		name string
		conf map[string]*string
	}{{input, nil}, {table, map[string]*string{"cleanup.policy": &compact}}} {
		if r, err := adm.CreateTopic(ctx, 12, 1, t.conf, t.name); err != nil || r.Err != nil {
			fail(fmt.Sprintf("create topic %s: %v %v", t.name, err, r.Err))
			return
		}
	}
	if kind == "kafka" {
		defer func() {
			_, _ = adm.DeleteTopics(context.Background(), input, table)
			_, _ = adm.DeleteGroup(context.Background(), name)
		}()
	}
	if err := waitTopics(ctx, adm, time.Minute, input, table); err != nil {
		fail(err.Error())
		return
	}
	g, err := newGroup(d.bins["gokacount"], filepath.Join(d.work, "goka-"+kind), nil, 3)
	if err != nil {
		fail(err.Error())
		return
	}
	g.args = func(m *member) []string {
		return []string{"-brokers", joinComma(brokers), "-group", name, "-input", input, "-dir", m.stateDir,
			"-listen", m.listen, "-session", session.String()}
	}
	defer g.stopAll()
	d.logf("goka failover on %s: 3 gokacount processes", kind)
	for _, m := range g.instances {
		if err := g.start(m); err != nil {
			fail(err.Error())
			return
		}
	}
	keys := d.cfg.queryKeys
	taskKey := map[int32]string{}
	for i := 0; i < keys && len(taskKey) < 12; i++ {
		k := "key-" + strconv.Itoa(i)
		if t := fnv.Partition([]byte(k), 12); taskKey[t] == "" {
			taskKey[t] = k
		}
	}
	for i := range keys {
		cl.Produce(ctx, &kgo.Record{Topic: input, Key: []byte("key-" + strconv.Itoa(i)), Value: make([]byte, 100)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		fail(fmt.Sprintf("produce: %v", err))
		return
	}
	if _, err := gokaOwners(ctx, g, taskKey, 90*time.Second); err != nil {
		fail(err.Error())
		return
	}
	load := startLoad(cl, input, d.cfg.countKeys, rate)
	defer func() {
		if load != nil {
			load.halt()
		}
	}()
	sec.printf("\ngoka beside it: three `gokacount` processes (bench/goka/cmd/gokacount: bench/goka's count with "+
		"`goka.WithHotStandby()` and `WithRecoverAhead()`, sarama session timeout %v), %s records/s of load on their own input "+
		"(FNV-1a, goka's partitioner), the owner of a partition stopped the same way. goka has no query routing: the "+
		"driver asks every survivor for a key of the partition until one answers (its `Processor.Get` reads only the "+
		"partitions it owns, hot standby or not). **Hot standby here means every instance keeps every partition's table "+
		"up to date** (goka's only replica setting), against one standby per task for Rackstream above.\n\n",
		session, thousands(rate))
	sec.printf("| stop | owner exited after | first committed update | first answer | exit |\n|---|---:|---:|---:|---|\n")
	var later []func() // rows without figures are explained below the table
	defer func() {
		sec.printf("\n")
		for _, f := range later {
			f()
		}
	}()
	for i, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		owners, err := gokaOwners(ctx, g, taskKey, 90*time.Second)
		if err != nil {
			sec.printf("| %s | - | - | - | - |\n", sigName(sig))
			later = append(later, func() { sec.missing(rows[i], err.Error()) })
			continue
		}
		var victim *member
		var task int32
		for t := int32(0); t < 12; t++ {
			if m := owners[t]; m != nil && m != g.instances[0] {
				victim, task = m, t
				break
			}
		}
		if victim == nil {
			sec.printf("| %s | - | - | - | - |\n", sigName(sig))
			later = append(later, func() { sec.missing(rows[i], "no partition owned by an instance other than the first") })
			continue
		}
		d.logf("goka failover: %s of %s (partition %d)", sigName(sig), victim.name, task)
		res, err := gokaStop(ctx, g, adm, name, input, victim, task, taskKey[task], sig)
		if err != nil {
			sec.printf("| %s | - | - | - | - |\n", sigName(sig))
			later = append(later, func() { sec.missing(rows[i], err.Error()) })
			if !victim.running() {
				_ = g.start(victim) // the next stop wants three again
			}
			continue
		}
		sec.printf("| %s (%s, partition %d) | %s | %s | %s | %s |\n", sigName(sig), victim.name, task, dur(res.exited), dur(res.commit), dur(res.answer), res.exit)
		sec.filled(rows[i])
		if err := g.start(victim); err != nil {
			sec.printf("\n- restarting %s failed: %v\n", victim.name, err)
			break
		}
	}
	load.halt()
	produced := int64(keys) + load.produced.Load()
	load = nil
	g.stopAll()
	sec.printf("\nThe goka processes (all lives together), over the %s input records produced for them:\n\n", thousands(float64(produced)))
	g.usageTable(sec, produced)
	sec.printf("\n")
}

func joinComma(xs []string) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ","
		}
		s += x
	}
	return s
}

// gokaOwners waits until every partition's key is answered by exactly one
// running instance, and returns the owners. (goka's Recovered stays false
// with hot standby on kfake, so it is not waited for: an owner answering
// its keys is what a user sees.)
func gokaOwners(ctx context.Context, g *group, taskKey map[int32]string, within time.Duration) (map[int32]*member, error) {
	deadline := time.Now().Add(within)
	last := ""
	for time.Now().Before(deadline) {
		owners, why := gokaAgree(ctx, g, taskKey)
		if why == "" {
			return owners, nil
		}
		last = why
		time.Sleep(100 * time.Millisecond)
	}
	return nil, fmt.Errorf("the goka instances did not settle within %v: %s", within, last)
}

func gokaAgree(ctx context.Context, g *group, taskKey map[int32]string) (map[int32]*member, string) {
	owners := map[int32]*member{}
	for _, m := range g.instances {
		if !m.running() {
			if m.wanted() {
				return nil, fmt.Sprintf("%s exited; its log ends: %s", m.name, m.logTail())
			}
			continue
		}
		for t, k := range taskKey {
			if code, err := getJSON(ctx, m.url()+"/keys/"+k, nil); err == nil && code == 200 {
				owners[t] = m // during a hand-over two may answer: the last asked is taken
			}
		}
	}
	for t := range taskKey {
		if owners[t] == nil {
			return nil, fmt.Sprintf("no instance answers for partition %d", t)
		}
	}
	return owners, ""
}

func gokaStop(ctx context.Context, g *group, adm *kadm.Client, group, input string, victim *member, task int32, key string, sig syscall.Signal) (stopResult, error) {
	res := stopResult{member: victim, owner: victim.name, task: task}
	w := stop(adm, group, input, task, victim, sig)
	start := w.start
	const limit = 90 * time.Second
	for deadline := start.Add(limit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := w.step(ctx, &res); err != nil {
			return res, err
		}
		now := time.Since(start)
		if res.answer == 0 {
			for _, m := range g.instances {
				if m == victim || !m.running() {
					continue
				}
				if code, err := getJSON(ctx, m.url()+"/keys/"+key, nil); err == nil && code == 200 {
					res.answer = now
					break
				}
			}
		}
		if res.exited > 0 && res.commit > 0 && res.answer > 0 {
			_, _, exits := victim.usage()
			res.exit = exits[len(exits)-1]
			return res, nil
		}
	}
	return res, fmt.Errorf("within %v of %s to %s (partition %d): exited after %v, first committed update %s, first answer %s",
		limit, sigName(sig), victim.name, task, res.exited.Round(time.Millisecond), dur(res.commit), dur(res.answer))
}
