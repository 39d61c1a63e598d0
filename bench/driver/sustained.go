package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The backlog drain (clustermax.go) measures how fast the cluster works
// through records produced before it starts: the producer idle, and the
// record cache merging more updates per key than a live load lets it (at
// 200,000 records/s over 100,000 keys a key changes twice a commit
// interval, at half that once). The sustained maximum checks it against a
// live load, as in a deployment: the highest rate tried whose records the
// instances processed as fast as they were produced, the driver producing
// and the broker taking them on the same cores. The search starts at the
// higher of the drain's figure and the counters' rate over producing and
// draining together (clustermax.go's whole), and goes down while the instances fall behind, or up
// while they keep up: once the instances worked through records about as
// fast as the driver produced them (the sorted LevelDB batches and the
// clean cache entries of 2026-12-04), the drain saw only the last few
// tens of thousands of records and said 103,000 records/s for a cluster
// that had just processed 2.3 million at 570,000; the load, half of that,
// was a quarter of what it should have been.

// sustainStep is one rate tried: what the driver produced and what the
// instances processed over the step's window.
type sustainStep struct {
	rate      float64 // asked of the producer
	produced  float64 // records/s acknowledged over the window
	processed float64 // records/s the instances' counters moved by
}

// keptUp reports whether the instances processed the step's records as
// fast as they were produced (within 5%: the counters and the producer's
// acknowledgements are read a few milliseconds apart).
func (s sustainStep) keptUp() bool { return s.produced > 0 && s.processed >= 0.95*s.produced }

// upFactor is how much higher the next step goes after one kept up with.
const upFactor = 1.3

// nextRate is the rate to try after a step the cluster fell behind in:
// below what it processed then, which is what it did sustain with that
// much producing beside it, and at most 90% of the rate tried, so the
// search ends within a few steps.
func nextRate(s sustainStep) float64 { return min(0.9*s.rate, 0.95*s.processed) }

// sustained is the search's outcome.
type sustained struct {
	steps  []sustainStep
	rate   float64 // the sustained maximum: the highest produced rate kept up with
	ended  string  // how the search ended (searchNext)
	window time.Duration
	total  int64 // records the steps produced
}

// searchNext decides the search's move after steps (at least one): the
// next rate to try, or, when done, the sustained maximum and how the search
// ended. Down after a step the instances fell behind in, while none kept
// up; up after one they kept up with, while none fell behind; done when
// the two meet, or when the driver's producer could not reach the rate
// asked (then the cluster kept up with all the driver could give it, and
// its maximum is at least that).
func searchNext(steps []sustainStep) (next float64, done bool, rate float64, ended string) {
	best, behind := -1, false
	for i, st := range steps {
		if st.keptUp() && (best < 0 || st.produced > steps[best].produced) {
			best = i
		}
		behind = behind || !st.keptUp()
	}
	last := steps[len(steps)-1]
	switch {
	case last.keptUp() && behind:
		return 0, true, last.produced, "kept up after falling behind one step higher"
	case last.keptUp() && last.produced < 0.95*last.rate:
		return 0, true, last.produced, "kept up with all the driver's producer gave it (it was asked for more): the maximum is at least this"
	case last.keptUp():
		return upFactor * last.rate, false, 0, ""
	case best >= 0:
		return 0, true, steps[best].produced, "fell behind one step above the highest rate kept up with"
	}
	return nextRate(last), false, 0, ""
}

func (s sustained) String() string {
	var b strings.Builder
	for i, st := range s.steps {
		if i > 0 {
			b.WriteString("; ")
		}
		verdict := "fell behind"
		if st.keptUp() {
			verdict = "kept up"
		}
		fmt.Fprintf(&b, "%s asked, %s produced, %s processed: %s", thousands(st.rate), thousands(st.produced), thousands(st.processed), verdict)
	}
	return b.String()
}

// sustainedMax tries rates from start, down or up (searchNext), at most
// maxSteps: each step produces that rate for warm plus window, measures
// over the window, then stops and waits for the group to commit what is
// left before the next.
func sustainedMax(ctx context.Context, adm *kadm.Client, group string, pcl *kgo.Client, topic string, processed processedFunc, keys int, start float64, warm, window time.Duration) (sustained, error) {
	const maxSteps = 6
	out := sustained{window: window}
	rate := start
	for range maxSteps {
		load := startLoad(pcl, topic, keys, rate)
		time.Sleep(warm) // the load's own pace: a measurement window, not a synchronisation
		p0, ok0 := processed(ctx)
		n0, t0 := load.produced.Load(), time.Now()
		time.Sleep(window)
		p1, ok1 := processed(ctx)
		n1, t1 := load.produced.Load(), time.Now()
		load.halt()
		out.total += load.produced.Load()
		if !ok0 || !ok1 {
			return out, fmt.Errorf("the instances' processed-record counters could not be read")
		}
		secs := t1.Sub(t0).Seconds()
		st := sustainStep{rate: rate, produced: float64(n1-n0) / secs, processed: (p1 - p0) / secs}
		out.steps = append(out.steps, st)
		if err := waitCommitted(ctx, adm, group, topic, 3*time.Minute); err != nil {
			return out, err
		}
		next, done, found, ended := searchNext(out.steps)
		if done {
			out.rate, out.ended = found, ended
			return out, nil
		}
		rate = next
	}
	for _, st := range out.steps {
		if st.keptUp() {
			// Still going up at the last step: at least that much.
			out.rate, out.ended = max(out.rate, st.produced), fmt.Sprintf("kept up at every rate tried, up to the %d steps the search takes: the maximum is at least this", maxSteps)
		}
	}
	if out.rate > 0 {
		return out, nil
	}
	return out, fmt.Errorf("the cluster fell behind at every rate tried, down to %s records/s", thousands(rate))
}
