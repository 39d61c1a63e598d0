package gokabench

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	gokacodec "github.com/lovoo/goka/codec"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/table"
)

// TestGokaStoppedMidStreamContinuesInRackstreamExactly is the migration
// path from goka, run for real: goka v1.1.13 counts a stream that keeps
// arriving, is stopped gracefully mid-stream, and Rackstream takes over the
// same job with nothing but configuration:
//
//   - application.id = the goka group, so the consumer group is the same
//     and goka's committed input offsets are where Rackstream's tasks
//     start (no extra option: both commit "the next offset to read" in the
//     group the processor is named after);
//   - the store's changelog is goka's group table <group>-table
//     (processor.WithChangelog), restored with goka's data;
//   - partitioner = fnv1a, goka's, and counts in goka's codec.Int64
//     encoding (decimal text), which Rackstream's codec.Int64 reads.
//
// On the way, goka's group table is read through a table.Mirror (goka's
// View, ported). Exactly means: every key's final count is the number of records produced
// for it, and the records handled by goka plus those handled by Rackstream
// are the records produced: none lost, none counted twice.
func TestGokaStoppedMidStreamContinuesInRackstreamExactly(t *testing.T) {
	const keys = 40
	c := kafkatest.New(t)
	input := c.Name("goka-migrate-in")
	group := c.Name("goka-migrate")
	createTopics(t, c, nil, input)

	// The stream: one record per key per round, produced synchronously (a
	// key counts once its record is acknowledged), paced so that goka is
	// stopped while records keep coming.
	var (
		mu       sync.Mutex
		want     = make(map[string]int64, keys)
		produced int64
	)
	total := func() int64 { mu.Lock(); defer mu.Unlock(); return produced }
	cl := c.Client(kgo.DefaultProduceTopic(input), kgo.RecordPartitioner(partition.Kgo(partition.FNV1a())))
	ctx, stopProducing := context.WithCancel(context.Background())
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for round := 0; ; round++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			recs := make([]*kgo.Record, keys)
			for k := range keys {
				recs[k] = &kgo.Record{Key: []byte(keyOf(k, keys)), Value: []byte(strconv.Itoa(round))}
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Errorf("produce round %d: %v", round, err)
				return
			}
			mu.Lock()
			for _, r := range recs {
				want[string(r.Key)]++
			}
			produced += keys
			mu.Unlock()
		}
	}()
	defer func() { stopProducing(); <-producerDone }()

	// goka counts until it has handled a few hundred records, then is
	// stopped gracefully (its context cancelled, Run returning nil).
	goka := startGoka(t, c, group, input, t.TempDir())
	waitFor(t, goka, time.Minute, 10*time.Millisecond,
		func() string { return fmt.Sprintf("goka on %s handled %d records", c.Kind(), goka.handled()) },
		func() bool { return goka.handled() >= 400 })
	if err := goka.stop(); err != nil {
		t.Fatalf("goka on %s: graceful stop: %v", c.Kind(), err)
	}
	byGoka, atStop := goka.handled(), total()
	t.Logf("goka on %s stopped after handling %d records; %d produced so far", c.Kind(), byGoka, atStop)

	// goka's View, ported: a table.Mirror on the group table, with goka's
	// partitioner and codecs, holds goka's counts: they add up to the
	// records goka handled.
	view, err := table.Open(context.Background(), group+"-table", table.Options{KafkaOpts: c.ClientOpts(),
		Partitioner: partition.FNV1a(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var inTable int64
	if err := table.NewTyped(view, codec.FromGoka[string](new(gokacodec.String)), codec.FromGoka[int64](new(gokacodec.Int64))).
		Scan(func(_ string, n int64) bool { inTable += n; return true }); err != nil {
		t.Fatal(err)
	}
	if inTable != byGoka {
		t.Errorf("goka's table read through table.Mirror sums to %d, want the %d records goka handled", inTable, byGoka)
	}
	if err := view.Close(context.Background()); err != nil {
		t.Error(err)
	}

	// Rackstream takes over while the stream goes on.
	rs := startRackstreamOn(t, c, group, input, t.TempDir(), processor.WithChangelog(group+"-table"))
	waitFor(t, rs, 2*time.Minute, 10*time.Millisecond,
		func() string { return fmt.Sprintf("rackstream on %s handled %d records", c.Kind(), rs.handled()) },
		func() bool { return rs.handled() >= 200 })
	stopProducing()
	<-producerDone
	end := total()
	if end <= atStop {
		t.Fatalf("no record was produced after goka stopped (%d in all): the test did not stop goka mid-stream", end)
	}
	if byGoka >= end {
		t.Fatalf("goka handled %d of %d records: it was not stopped mid-stream", byGoka, end)
	}
	waitFor(t, rs, 2*time.Minute, 20*time.Millisecond,
		func() string {
			return fmt.Sprintf("rackstream on %s handled %d records; goka %d; %d produced", c.Kind(), rs.handled(), byGoka, end)
		},
		func() bool { return byGoka+rs.handled() >= end })
	adm := c.Admin()
	waitFor(t, rs, time.Minute, 50*time.Millisecond,
		func() string {
			return fmt.Sprintf("rackstream on %s: offsets of group %s not committed to the end", c.Kind(), group)
		},
		func() bool { return kafkatest.CommittedThrough(adm, group, input) })
	if got := byGoka + rs.handled(); got != end {
		t.Errorf("goka handled %d and rackstream %d records: %d in all, want the %d produced (more means records counted twice)",
			byGoka, rs.handled(), got, end)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, n := range want {
		got, found, err := rs.count(k)
		if err != nil || !found || got != n {
			t.Errorf("rackstream on %s: count of %s = %d (found %v, err %v), want %d", c.Kind(), k, got, found, err, n)
		}
	}
	if err := rs.stop(); err != nil {
		t.Errorf("rackstream on %s: stop: %v", c.Kind(), err)
	}
}
