package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// PartitionOffsets is one look at a partition of a purged topic (a
// repartition topic): its log start offset, the consuming group's
// committed offset (-1: none) and its end offset.
type PartitionOffsets struct {
	Start, Committed, End int64
}

// PurgeSample is one look at every partition of a purged topic. Its log
// start offsets are read before the committed offsets, and those stable
// (a transaction's offsets once its commit markers are written, as a
// group member reads them): since a committed offset only grows, a start
// above the committed offset read after it was above it when read.
type PurgeSample struct {
	At    time.Time
	Parts map[int32]PartitionOffsets
}

// PurgeReport is what a series of looks at a purged topic shows.
type PurgeReport struct {
	Samples int
	// Overpurged lists the looks, at most 10, at which a partition's log
	// start offset was above its committed offset: records deleted before
	// the group had handled them.
	Overpurged []string
	// MaxBehind is the most records (by offset) a partition kept below its
	// committed offset at one look: handled records not yet deleted.
	MaxBehind int64
	// MaxLag is the longest time from a look that first showed a
	// committed offset to the first later look at which the log start had
	// reached it; one never reached counts up to the last look.
	MaxLag time.Duration
	// Behind lists the partitions whose log start is below their committed
	// offset at the last look.
	Behind []int32
	// Written and Purged are, at the last look, the end offsets and log
	// start offsets summed over the partitions.
	Written, Purged int64
}

// CheckPurge checks samples, in time order, of a topic that a group purges
// below its committed offsets.
func CheckPurge(samples []PurgeSample) PurgeReport {
	rep := PurgeReport{Samples: len(samples)}
	type pending struct {
		committed int64
		seen      time.Time
	}
	waiting := map[int32][]pending{} // per partition, committed offsets not reached yet, growing
	for _, s := range samples {
		for _, p := range slices.Sorted(maps.Keys(s.Parts)) {
			o := s.Parts[p]
			if o.Start > max(o.Committed, 0) && len(rep.Overpurged) < 10 {
				rep.Overpurged = append(rep.Overpurged, fmt.Sprintf("partition %d at %s: log start %d above committed offset %d",
					p, s.At.Format("15:04:05.000"), o.Start, o.Committed))
			}
			rep.MaxBehind = max(rep.MaxBehind, o.Committed-o.Start)
			w := waiting[p]
			for len(w) > 0 && w[0].committed <= o.Start {
				rep.MaxLag = max(rep.MaxLag, s.At.Sub(w[0].seen))
				w = w[1:]
			}
			if o.Committed > o.Start && (len(w) == 0 || o.Committed > w[len(w)-1].committed) {
				w = append(w, pending{o.Committed, s.At})
			}
			waiting[p] = w
		}
	}
	if len(samples) == 0 {
		return rep
	}
	last := samples[len(samples)-1]
	for _, p := range slices.Sorted(maps.Keys(last.Parts)) {
		o := last.Parts[p]
		if w := waiting[p]; len(w) > 0 {
			rep.MaxLag = max(rep.MaxLag, last.At.Sub(w[0].seen))
		}
		if o.Start < o.Committed {
			rep.Behind = append(rep.Behind, p)
		}
		rep.Written += o.End
		rep.Purged += o.Start
	}
	return rep
}

// PurgeWatch looks at a purged topic every interval until stopped.
type PurgeWatch struct {
	adm          *kadm.Client
	cl           *kgo.Client
	topic, group string
	stop         chan struct{}
	done         chan struct{}
	stopOnce     sync.Once

	mu      sync.Mutex // guards samples and err
	samples []PurgeSample
	err     error // the last look's failure, for the log
}

// WatchPurge starts looking at topic on brokers, which group consumes and
// purges, every interval; the test's cleanup stops it.
func WatchPurge(t testing.TB, brokers []string, topic, group string, interval time.Duration) *PurgeWatch {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatalf("cluster: purge watch of %s: %v", topic, err)
	}
	w := &PurgeWatch{adm: kadm.NewClient(cl), cl: cl, topic: topic, group: group, stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop(interval)
	t.Cleanup(func() { w.Stop() })
	return w
}

func (w *PurgeWatch) loop(interval time.Duration) {
	defer close(w.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		s, err := w.Look()
		w.mu.Lock()
		if err == nil {
			w.samples = append(w.samples, s)
		}
		w.err = err
		w.mu.Unlock()
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
	}
}

// Look reads the topic's offsets once: log start offsets first, then the
// group's stable committed offsets, then the end offsets.
func (w *PurgeWatch) Look() (PurgeSample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	at := time.Now()
	starts, err := w.adm.ListStartOffsets(ctx, w.topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return PurgeSample{}, fmt.Errorf("log start offsets of %s: %w", w.topic, err)
	}
	committed, err := w.adm.FetchOffsets(kadm.RequireStable(ctx), w.group)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return PurgeSample{}, fmt.Errorf("committed offsets of group %s: %w", w.group, err)
	}
	ends, err := w.adm.ListEndOffsets(ctx, w.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return PurgeSample{}, fmt.Errorf("end offsets of %s: %w", w.topic, err)
	}
	s := PurgeSample{At: at, Parts: map[int32]PartitionOffsets{}}
	starts.Each(func(o kadm.ListedOffset) {
		c := int64(-1)
		if r, ok := committed.Lookup(w.topic, o.Partition); ok {
			c = r.At
		}
		e, _ := ends.Lookup(w.topic, o.Partition)
		s.Parts[o.Partition] = PartitionOffsets{Start: o.Offset, Committed: c, End: e.Offset}
	})
	return s, nil
}

// Samples returns the looks taken so far and the last look's failure.
func (w *PurgeWatch) Samples() ([]PurgeSample, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]PurgeSample(nil), w.samples...), w.err
}

// Stop stops looking. Calling it again does nothing.
func (w *PurgeWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		<-w.done
		w.cl.Close()
	})
}
