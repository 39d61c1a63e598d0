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
// live load, as in a deployment: the highest rate tried, from the drain's
// maximum down, whose records the instances processed as fast as they
// were produced, the driver producing and the broker taking them on the
// same cores. On 2026-12-04 the instances kept up with the drain's figure
// in most runs (172,000-270,000 records/s) and fell behind it by 5-10% in
// the others (at 219,000, 259,000 and 264,000), keeping up one step lower.

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

// nextRate is the rate to try after a step the cluster fell behind in:
// below what it processed then, which is what it did sustain with that
// much producing beside it, and at most 90% of the rate tried, so the
// search ends within a few steps.
func nextRate(s sustainStep) float64 { return min(0.9*s.rate, 0.95*s.processed) }

// sustained is the search's outcome.
type sustained struct {
	steps  []sustainStep
	rate   float64 // the sustained maximum: the last step's produced rate, when it kept up
	window time.Duration
	total  int64 // records the steps produced
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

// sustainedMax tries rates from start down until the cluster keeps up with
// one (at most maxSteps): each step produces that rate for warm plus
// window, measures over the window, then stops and waits for the group to
// commit what is left before the next.
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
		if st.keptUp() {
			out.rate = st.produced
			return out, nil
		}
		rate = nextRate(st)
	}
	return out, fmt.Errorf("the cluster fell behind at every rate tried, down to %s records/s", thousands(rate))
}
